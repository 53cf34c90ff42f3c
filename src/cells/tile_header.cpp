// Bytes of the tile header and of chunk table entries (spec deltacells.md §2.1, §2.2).
#include "tessera/cells/tile_header.hpp"

#include <cstring>

#include "tessera/cells/chunk_entry.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::cells {

void TileHeader::encode_to(std::byte* out) const noexcept {
  std::memcpy(out, kTileMagic.data(), kTileMagic.size());
  store_le<std::uint32_t>(out + 8, version);
  store_le<std::uint32_t>(out + 12, flags);
  store_le<std::uint64_t>(out + 16, n_cells);
  store_le<std::uint64_t>(out + 24, nnz);
  store_le<std::uint32_t>(out + 32, n_genes);
  store_le<std::uint32_t>(out + 36, n_chunks);
  store_le<std::uint64_t>(out + 40, indptr_off);
  store_le<std::uint64_t>(out + 48, total_size);
  store_le<std::uint32_t>(out + 56, crc32);
  store_le<std::uint32_t>(out + 60, reserved);
}

TileHeader TileHeader::decode(std::span<const std::byte> bytes) noexcept {
  const std::byte* p = bytes.data();
  TileHeader h;
  h.magic_ok = std::memcmp(p, kTileMagic.data(), kTileMagic.size()) == 0;
  h.version = load_le<std::uint32_t>(p + 8);
  h.flags = load_le<std::uint32_t>(p + 12);
  h.n_cells = load_le<std::uint64_t>(p + 16);
  h.nnz = load_le<std::uint64_t>(p + 24);
  h.n_genes = load_le<std::uint32_t>(p + 32);
  h.n_chunks = load_le<std::uint32_t>(p + 36);
  h.indptr_off = load_le<std::uint64_t>(p + 40);
  h.total_size = load_le<std::uint64_t>(p + 48);
  h.crc32 = load_le<std::uint32_t>(p + 56);
  h.reserved = load_le<std::uint32_t>(p + 60);
  return h;
}

void ChunkEntry::encode_to(std::byte* out, std::uint32_t version) const noexcept {
  const std::uint64_t fields[12] = {cell_lo,  cell_hi,  nnz_lo,   nnz_hi,   gaps.off, gaps.len,
                                    vals.off, vals.len, vexc.off, vexc.len, gexc.off, gexc.len};
  const std::size_t count = size_for(version) / 8;
  for (std::size_t i = 0; i < count; ++i) store_le<std::uint64_t>(out + 8 * i, fields[i]);
}

ChunkEntry ChunkEntry::decode(std::span<const std::byte> bytes, std::uint32_t version) noexcept {
  const std::byte* p = bytes.data();
  const auto f = [p](std::size_t i) { return load_le<std::uint64_t>(p + 8 * i); };
  ChunkEntry e;
  e.cell_lo = f(0);
  e.cell_hi = f(1);
  e.nnz_lo = f(2);
  e.nnz_hi = f(3);
  e.gaps = {f(4), f(5)};
  e.vals = {f(6), f(7)};
  if (version != 1) {
    e.vexc = {f(8), f(9)};
    e.gexc = {f(10), f(11)};
  }
  return e;
}

}  // namespace tessera::cells
