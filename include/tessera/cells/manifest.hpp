// `manifest.json` of a deltacells dataset (spec deltacells.md §1.2–§1.5): strict parsing with
// the rules M1–M12 in order, and serialization exactly as Python's json.dumps(indent=2) with the
// key order of §1.3. Writers never emit a key outside §1.2; readers tolerate unknown top-level
// keys and list them in `unknown_keys` (verify warns: the Python reference refuses them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cells/tile_header.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {

struct Manifest {
  std::uint32_t version = kVersion2;
  std::uint64_t n_cells = 0;
  std::uint64_t n_genes = 0;
  std::uint64_t tile_size = 0;
  std::vector<std::uint64_t> tile_cells;
  std::vector<std::uint64_t> tile_nnz;
  std::vector<std::uint64_t> tile_bytes;
  std::uint64_t n_chunks = 8;    // requested per tile (informational)
  std::int64_t zstd_level = 19;  // informational
  bool has_gene_order = false;
  bool has_var_names = false;
  codec::json::Json metadata = codec::json::Json::object();
  bool has_obs = false;
  std::uint64_t obs_tiles_per_file = 0;
  std::string obs_fingerprint;
  std::vector<std::uint64_t> obs_shard_bytes;
  std::vector<std::string> obs_shard_sha256;
  bool has_var_table = false;

  // Top-level keys outside §1.2 found when parsing (never written).
  std::vector<std::string> unknown_keys;

  std::uint64_t n_tiles() const noexcept { return tile_cells.size(); }
  // Cumulative cells: limits[t] is one past the last global cell of tile t.
  std::vector<std::uint64_t> limits() const;

  // Parses and validates (M1–M12) a manifest text. `object` names it in errors.
  static Manifest parse(std::string_view text, std::string_view object = "manifest.json");
  // Checks M6–M11 on an in-memory manifest (parse calls it; writers call it before writing).
  void validate(std::string_view object = "manifest.json") const;
  // The exact bytes writers emit (§1.3): Python's json.dumps(indent=2), no trailing newline.
  // Throws UsageError for non-finite floats in metadata.
  std::string serialize() const;
};

}  // namespace tessera::cells
