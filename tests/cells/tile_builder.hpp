// Independent assembly of deltacells tiles for tests: header, chunk table, indptr and frames are
// laid out byte by byte here from the spec (deltacells.md §2), with frames from libzstd through
// codec/zstd, never through tessera's tile encoder. Tests use it for version 2 tiles (no
// fixtures exist) and for tiles that break one rule on purpose.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::cells::testing {

inline std::vector<std::byte> planar(const std::vector<std::uint32_t>& u16) {
  const std::size_t n = u16.size();
  std::vector<std::byte> out(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::byte>(u16[i] & 0xff);
    out[n + i] = static_cast<std::byte>((u16[i] >> 8) & 0xff);
  }
  return out;
}

inline std::vector<std::byte> exc_raw(const std::vector<std::uint32_t>& pos, const std::vector<std::uint32_t>& pay) {
  std::vector<std::byte> out;
  for (auto p : pos) append_le<std::uint32_t>(out, p);
  for (auto p : pay) append_le<std::uint32_t>(out, p);
  return out;
}

inline std::vector<std::byte> zframe(const std::vector<std::byte>& raw, int level = 3) {
  return codec::zstd_compress(raw, {.level = level, .content_size = true, .checksum = false});
}

struct BuiltChunk {
  std::uint64_t cell_lo = 0, cell_hi = 0;
  std::vector<std::uint32_t> gaps;  // stored u16 gaps of the chunk
  std::vector<std::uint32_t> vals;  // stored u16 counts
  // Frames; when empty they are produced from gaps/vals (and exception lists when given).
  std::optional<std::vector<std::byte>> gaps_frame, vals_frame, vexc_frame, gexc_frame;
  std::vector<std::uint32_t> vexc_pos, vexc_pay, gexc_pos, gexc_pay;
  // Overrides of table fields (to break rules on purpose).
  std::optional<std::uint64_t> nnz_lo, nnz_hi;
};

struct BuiltTile {
  std::uint32_t version = 2;
  std::uint32_t n_genes = 10;
  std::vector<std::int64_t> indptr{0};
  std::vector<BuiltChunk> chunks;
};

inline std::vector<std::byte> assemble(BuiltTile t) {
  const std::uint64_t e = t.version == 1 ? 64 : 96;
  const std::uint64_t n_cells = t.indptr.size() - 1;
  const std::uint64_t indptr_off = 64 + e * t.chunks.size();
  std::uint64_t pos = indptr_off + 8 * (n_cells + 1);
  std::vector<std::byte> frames_area;
  struct Ref {
    std::uint64_t off = 0, len = 0;
  };
  std::vector<std::vector<Ref>> refs;
  std::vector<std::byte> out(static_cast<std::size_t>(pos));
  for (auto& c : t.chunks) {
    if (!c.gaps_frame) c.gaps_frame = zframe(planar(c.gaps));
    if (!c.vals_frame) c.vals_frame = zframe(planar(c.vals));
    if (!c.vexc_frame && !c.vexc_pos.empty()) c.vexc_frame = zframe(exc_raw(c.vexc_pos, c.vexc_pay));
    if (!c.gexc_frame && !c.gexc_pos.empty()) c.gexc_frame = zframe(exc_raw(c.gexc_pos, c.gexc_pay));
    std::vector<Ref> r;
    for (const auto* f : {&c.gaps_frame, &c.vals_frame, &c.vexc_frame, &c.gexc_frame}) {
      if (!*f) {
        r.push_back({});
        continue;
      }
      pos = (pos + 7) / 8 * 8;
      out.resize(static_cast<std::size_t>(pos));
      r.push_back({pos, (*f)->size()});
      out.insert(out.end(), (*f)->begin(), (*f)->end());
      pos += (*f)->size();
    }
    refs.push_back(r);
  }
  std::byte* p = out.data();
  std::memcpy(p, "DELTACEL", 8);
  store_le<std::uint32_t>(p + 8, t.version);
  store_le<std::uint64_t>(p + 16, n_cells);
  store_le<std::uint64_t>(p + 24, static_cast<std::uint64_t>(t.indptr.back()));
  store_le<std::uint32_t>(p + 32, t.n_genes);
  store_le<std::uint32_t>(p + 36, static_cast<std::uint32_t>(t.chunks.size()));
  store_le<std::uint64_t>(p + 40, indptr_off);
  store_le<std::uint64_t>(p + 48, out.size());
  for (std::size_t k = 0; k < t.chunks.size(); ++k) {
    const auto& c = t.chunks[k];
    std::byte* q = p + 64 + e * k;
    const std::uint64_t f[12] = {c.cell_lo,
                                 c.cell_hi,
                                 c.nnz_lo.value_or(static_cast<std::uint64_t>(t.indptr[c.cell_lo])),
                                 c.nnz_hi.value_or(static_cast<std::uint64_t>(t.indptr[c.cell_hi])),
                                 refs[k][0].off,
                                 refs[k][0].len,
                                 refs[k][1].off,
                                 refs[k][1].len,
                                 refs[k][2].off,
                                 refs[k][2].len,
                                 refs[k][3].off,
                                 refs[k][3].len};
    for (std::size_t i = 0; i < e / 8; ++i) store_le<std::uint64_t>(q + 8 * i, f[i]);
  }
  for (std::size_t r = 0; r <= n_cells; ++r) store_le<std::int64_t>(p + indptr_off + 8 * r, t.indptr[r]);
  store_le<std::uint32_t>(p + 56, codec::crc32({p + 64, out.size() - 64}));
  return out;
}

// Recomputes the CRC after a test edited the bytes.
inline void fix_crc(std::vector<std::byte>& tile) {
  store_le<std::uint32_t>(tile.data() + 56, codec::crc32({tile.data() + 64, tile.size() - 64}));
}

}  // namespace tessera::cells::testing
