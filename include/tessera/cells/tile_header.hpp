// The 64-byte header of a deltacells tile (spec deltacells.md §2.1) and the constants both format
// versions share. `decode` reads the fields as they are; the rules T1–T9 that relate them to each
// other and to the object are checked by `Tile::parse` (tile.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tessera::cells {

inline constexpr std::string_view kTileMagic{"DELTACEL", 8};
inline constexpr std::uint32_t kVersion1 = 1;
inline constexpr std::uint32_t kVersion2 = 2;

// Gene and count ranges per version (§0 table).
inline constexpr std::uint64_t kMaxGenesV1 = 65536;
inline constexpr std::uint64_t kMaxGenesV2 = std::uint64_t{1} << 31;
inline constexpr std::uint32_t kMaxStoredU16 = 65535;     // largest value a u16 stream holds
inline constexpr std::uint32_t kMaxCountV2 = 2147483647;  // 2^31 - 1

inline constexpr bool is_known_version(std::uint32_t v) noexcept { return v == kVersion1 || v == kVersion2; }
inline constexpr std::uint64_t max_genes(std::uint32_t version) noexcept {
  return version == kVersion1 ? kMaxGenesV1 : kMaxGenesV2;
}
inline constexpr std::uint32_t max_count(std::uint32_t version) noexcept {
  return version == kVersion1 ? kMaxStoredU16 : kMaxCountV2;
}

struct TileHeader {
  static constexpr std::size_t kSize = 64;

  bool magic_ok = true;  // bytes 0..7 equal "DELTACEL" (only meaningful after decode)
  std::uint32_t version = kVersion2;
  std::uint32_t flags = 0;       // no flags are defined: must be 0
  std::uint64_t n_cells = 0;     // cells (rows) in the tile
  std::uint64_t nnz = 0;         // stored nonzeros in the tile
  std::uint32_t n_genes = 0;     // columns; 2^31 wraps to 0x80000000 (fits a u32)
  std::uint32_t n_chunks = 0;    // entries in the chunk table
  std::uint64_t indptr_off = 0;  // start of the int64 indptr, a multiple of 8
  std::uint64_t total_size = 0;  // size of the whole object
  std::uint32_t crc32 = 0;       // CRC-32 of bytes [64, total_size)
  std::uint32_t reserved = 0;    // written as 0

  // Writes the 64 bytes (magic included) to `out`.
  void encode_to(std::byte* out) const noexcept;
  // Reads the fields of the first 64 bytes; `bytes.size()` must be at least kSize.
  static TileHeader decode(std::span<const std::byte> bytes) noexcept;
};

}  // namespace tessera::cells
