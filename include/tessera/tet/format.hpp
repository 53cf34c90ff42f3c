// The fixed-size on-disk structures of `.tet` layout v1 (spec tet.md §1.2, §1.3, §1.6) and the
// element-type tags (§1.4). Each structure knows its own bytes: `encode_to` writes them,
// `decode` reads them with every length checked. Cross-structure rules live in layout.cpp
// (structural pass) and reader.cpp (semantic pass).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::tet {

inline constexpr std::uint32_t kLayoutVersion = 1;
inline constexpr std::size_t kMaxRank = 8;

// ---- Element types (§1.4): tags 1..10 -------------------------------------------------------
std::optional<DType> dtype_from_tag(std::uint32_t tag) noexcept;
std::uint32_t tag_from_dtype(DType dtype);  // throws UnsupportedError for i8/bool
// The tag's short name ("f32", "u64"), or "?" for an invalid tag.
std::string_view tag_name(std::uint32_t tag) noexcept;

// ---- Superblock (§1.2), 32 bytes at offset 0 -------------------------------------------------
struct Superblock {
  static constexpr std::size_t kSize = 32;
  static constexpr std::uint32_t kHistoryFooterFlag = 1;  // flags bit 0

  std::uint32_t layout_version = kLayoutVersion;
  std::uint32_t dataset_count = 0;
  std::uint32_t flags = 0;               // bit 0: history footer at end of file
  std::uint64_t chunk_index_offset = 0;  // start of the TIDX region
  std::uint64_t chunk_index_length = 0;  // length of the TIDX region

  bool has_footer() const noexcept { return (flags & kHistoryFooterFlag) != 0; }
  void encode_to(std::byte* out) const noexcept;
  // Reads the fields; checks only the magic (S2). `bytes` must hold at least kSize bytes.
  static Superblock decode(std::span<const std::byte> bytes);
};

// ---- Dataset record (§1.3) --------------------------------------------------------------------
struct DatasetRecord {
  std::string name;
  std::uint32_t dtype_tag = 0;  // kept raw: invalid tags are reported by the semantic pass
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> chunk_shape;

  std::size_t ndim() const noexcept { return shape.size(); }
  void append_to(std::vector<std::byte>& out) const;
};

// ---- Chunk index (§1.6) -----------------------------------------------------------------------
struct ChunkIndexHeader {
  static constexpr std::size_t kSize = 32;
  std::uint32_t index_version = 1;
  std::uint64_t entry_count = 0;
  std::uint16_t memory_budget_percent_bps = 0;  // 0 = engine default
  std::uint32_t memory_budget_bytes = 0;        // 0 = use the percentage

  void encode_to(std::byte* out) const noexcept;
  // Reads the fields; checks only the magic. `bytes` must hold at least kSize bytes.
  static ChunkIndexHeader decode(std::span<const std::byte> bytes);
};

enum class Codec : std::uint32_t { Raw = 0, Zstd = 1 };

struct ChunkEntry {
  static constexpr std::size_t kSize = 104;
  std::uint64_t dataset_id = 0;
  std::array<std::uint64_t, kMaxRank> chunk_index{};  // grid coordinates; slots >= ndim are 0
  std::uint64_t payload_offset = 0;
  std::uint64_t raw_byte_len = 0;     // decoded tile size
  std::uint64_t stored_byte_len = 0;  // bytes on disk
  std::uint32_t codec = 0;            // kept raw: unknown codecs are rejected by the structural pass

  void encode_to(std::byte* out) const noexcept;
  static ChunkEntry decode(std::span<const std::byte> bytes) noexcept;  // bytes.size() >= kSize
};

// "0,1,2"-style and "[0, 1, 2]"-style renderings used in messages and tables.
std::string join_coords(std::span<const std::uint64_t> coords, std::string_view sep);

}  // namespace tessera::tet
