// One entry of a tile's chunk table (spec deltacells.md §2.2): 8 u64 fields (64 bytes) in
// version 1, 12 (96 bytes) in version 2, which adds the exception frames `vexc` and `gexc`.
// `decode` reads the fields; the rules T10–T14 are checked by `Tile::parse`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::cells {

struct FrameRef {
  std::uint64_t off = 0;
  std::uint64_t len = 0;  // 0 for an absent exception frame
};

struct ChunkEntry {
  static constexpr std::size_t kSizeV1 = 64;
  static constexpr std::size_t kSizeV2 = 96;
  static constexpr std::size_t size_for(std::uint32_t version) noexcept { return version == 1 ? kSizeV1 : kSizeV2; }

  std::uint64_t cell_lo = 0;  // first cell of the chunk
  std::uint64_t cell_hi = 0;  // one past its last cell
  std::uint64_t nnz_lo = 0;   // indptr[cell_lo]
  std::uint64_t nnz_hi = 0;   // indptr[cell_hi]
  FrameRef gaps;              // byte-planar u16 gene gaps
  FrameRef vals;              // byte-planar u16 counts
  FrameRef vexc;              // v2: value exceptions (len 0 = none)
  FrameRef gexc;              // v2: gap exceptions (len 0 = none)

  std::uint64_t n() const noexcept { return nnz_hi - nnz_lo; }
  void encode_to(std::byte* out, std::uint32_t version) const noexcept;
  // `bytes.size()` must be at least size_for(version).
  static ChunkEntry decode(std::span<const std::byte> bytes, std::uint32_t version) noexcept;
};

}  // namespace tessera::cells
