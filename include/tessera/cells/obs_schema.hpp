// The obs sidecar's schema and identity (spec deltacells.md §6.2, §6.3, §6.6, §6.9 file names):
// `obs/schema.json` parsed under S1–S6 and serialized exactly as the Python reference writes it,
// the fingerprint over the schema text, shard hashes and tile sizes, and the cache file name of
// a column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/columnar/column.hpp"

namespace tessera::cells {

enum class ObsKind { Category, Numeric, Bool, String };

// `category`, `numeric`, `bool`, `string` and back.
std::string_view obs_kind_name(ObsKind kind) noexcept;
std::optional<ObsKind> obs_kind_from_name(std::string_view name) noexcept;

struct ObsColumnSchema {
  std::string name;
  ObsKind kind = ObsKind::String;
  columnar::ColumnType type = columnar::ColumnType::String;  // the stored `arrow_type`
  std::vector<std::string> categories;                       // kind category only
};

struct ObsSchema {
  std::vector<ObsColumnSchema> columns;

  // Parses and validates (S1–S6) the text of obs/schema.json; FormatError naming `object` and
  // the column. Unsupported stored types (`halffloat`) are UnsupportedError.
  static ObsSchema parse(std::string_view text, std::string_view object = "obs/schema.json");
  // S3–S6 on an in-memory schema (writers call it before writing); FormatError.
  void validate(std::string_view object = "obs/schema.json") const;
  // The exact file text (§6.2): Python's json.dumps with default separators, ASCII escapes, no
  // trailing newline.
  std::string serialize() const;

  std::optional<std::size_t> find(std::string_view name) const noexcept;
  // The column named `name`; UsageError listing the columns when there is none.
  const ObsColumnSchema& column(std::string_view name) const;
  std::vector<std::string> names() const;
};

// S7: FormatError unless `text` is exactly what serializing its parse gives.
void check_schema_canonical(std::string_view text, std::string_view object = "obs/schema.json");

// The smallest category code type for a vocabulary (§6.3): int8 ≤ 127, int16 ≤ 32,767, else int32.
columnar::ColumnType category_code_type(std::size_t n_categories) noexcept;

// §6.6: the canonical payload (Python json.dumps(sort_keys=True)) and the fingerprint (first 24
// lowercase hex digits of its SHA-256).
std::string obs_fingerprint_payload(std::string_view schema_text, std::span<const std::string> shard_sha256,
                                    std::span<const std::uint64_t> tile_cells);
std::string obs_fingerprint(std::string_view schema_text, std::span<const std::string> shard_sha256,
                            std::span<const std::uint64_t> tile_cells);

// `obs/obs_NNNN.parquet` (at least 4 digits) for shard `s`.
std::string obs_shard_key(std::uint64_t shard);

// Python's urllib.parse.quote(name, safe=""): UTF-8 bytes, `A–Z a–z 0–9 _ . - ~` kept, every
// other byte as %XX (uppercase) — the cache file stem of a column (§6.9).
std::string quote_column_file_name(std::string_view name);

}  // namespace tessera::cells
