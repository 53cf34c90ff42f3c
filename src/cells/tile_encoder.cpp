// Tile encoding (spec deltacells.md §4.2–§4.6). The layout and the frame order follow the Python
// reference exactly, which is what makes version 1 output byte-identical to it.
#include "tessera/cells/tile_encoder.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>

#include "exception_frame.hpp"
#include "rules.hpp"
#include "tessera/cells/chunk_entry.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::cells {
namespace {

struct EncodedChunk {
  std::uint64_t cell_lo = 0, cell_hi = 0, nnz_lo = 0, nnz_hi = 0;
  detail::ExceptionList vexc, gexc;
  std::vector<std::byte> gaps, vals, vexc_frame, gexc_frame;
};

std::string version_hint(std::uint32_t version) {
  return version == kVersion1 ? "; version 1 cannot store it, write version 2 (--format-version 2)" : "";
}

// Fills the planar streams and exception lists of one chunk from canonical CSR.
void build_chunk(const TileCsr& csr, EncodedChunk& c, std::vector<std::byte>& gap_raw,
                 std::vector<std::byte>& val_raw) {
  const std::uint64_t n = c.nnz_hi - c.nnz_lo;
  gap_raw.assign(static_cast<std::size_t>(2 * n), std::byte{0});
  val_raw.assign(static_cast<std::size_t>(2 * n), std::byte{0});
  for (std::uint64_t r = c.cell_lo; r < c.cell_hi; ++r) {
    std::uint64_t prev = 0;
    for (std::uint64_t j = static_cast<std::uint64_t>(csr.indptr[r]); j < static_cast<std::uint64_t>(csr.indptr[r + 1]);
         ++j) {
      const std::uint64_t p = j - c.nnz_lo;
      const std::uint64_t gene = csr.indices[j];
      const std::uint64_t gap = gene - prev;
      prev = gene;
      std::uint32_t stored_gap = static_cast<std::uint32_t>(gap);
      if (gap > kMaxStoredU16) {
        stored_gap = kMaxStoredU16;
        c.gexc.positions.push_back(static_cast<std::uint32_t>(p));
        c.gexc.payloads.push_back(static_cast<std::uint32_t>(gap - kMaxStoredU16));
      }
      std::uint32_t stored_val = csr.values[j];
      if (stored_val > kMaxStoredU16) {
        c.vexc.positions.push_back(static_cast<std::uint32_t>(p));
        c.vexc.payloads.push_back(stored_val);
        stored_val = kMaxStoredU16;
      }
      gap_raw[p] = static_cast<std::byte>(stored_gap & 0xff);
      gap_raw[n + p] = static_cast<std::byte>(stored_gap >> 8);
      val_raw[p] = static_cast<std::byte>(stored_val & 0xff);
      val_raw[n + p] = static_cast<std::byte>(stored_val >> 8);
    }
  }
}

void check_input(const TileCsr& csr, const TileEncodeOptions& o) {
  const std::string& obj = o.name;
  if (!is_known_version(o.version))
    throw UsageError(obj + ": format version " + std::to_string(o.version) + " is not 1 or 2", obj);
  if (o.n_chunks < 1) throw UsageError(obj + ": n_chunks must be at least 1", obj);
  if (o.level < kMinZstdLevel || o.level > kMaxZstdLevel)
    throw UsageError(obj + ": zstd level " + std::to_string(o.level) + " outside " + std::to_string(kMinZstdLevel) +
                         ".." + std::to_string(kMaxZstdLevel),
                     obj);
  if (csr.n_genes < 1 || csr.n_genes > max_genes(o.version))
    detail::fail<LimitError>(obj, "",
                             "n_genes " + std::to_string(csr.n_genes) + " outside 1.." +
                                 std::to_string(max_genes(o.version)) + version_hint(o.version),
                             "");
  if (csr.indptr.empty() || csr.indptr[0] != 0)
    throw UsageError(obj + ": CSR indptr must be non-empty and start at 0", obj);
  const std::uint64_t n_cells = csr.indptr.size() - 1;
  for (std::uint64_t r = 0; r < n_cells; ++r)
    if (csr.indptr[r + 1] < csr.indptr[r])
      throw UsageError(obj + ": CSR indptr decreases at cell " + std::to_string(r), obj);
  const auto nnz = static_cast<std::uint64_t>(csr.indptr[n_cells]);
  if (csr.indices.size() != nnz || csr.values.size() != nnz)
    throw UsageError(obj + ": CSR indices/values length differs from indptr[-1]", obj);
  const std::uint32_t max_value = max_count(o.version);
  for (std::uint64_t r = 0; r < n_cells; ++r) {
    for (auto j = static_cast<std::uint64_t>(csr.indptr[r]); j < static_cast<std::uint64_t>(csr.indptr[r + 1]); ++j) {
      if (csr.indices[j] >= csr.n_genes ||
          (j > static_cast<std::uint64_t>(csr.indptr[r]) && csr.indices[j] <= csr.indices[j - 1]))
        throw UsageError(obj + ": cell " + std::to_string(r) +
                             ": gene indices are not strictly increasing below n_genes (canonicalize the input first)",
                         obj);
      if (csr.values[j] == 0)
        throw UsageError(obj + ": cell " + std::to_string(r) + ": explicit zero count (canonicalize the input first)",
                         obj);
      if (csr.values[j] > max_value)
        detail::fail<LimitError>(obj, "cell " + std::to_string(r),
                                 "gene " + std::to_string(csr.indices[j]) + " has count " +
                                     std::to_string(csr.values[j]) + ", above the maximum " +
                                     std::to_string(max_value) + version_hint(o.version),
                                 "");
    }
  }
}

}  // namespace

std::vector<std::pair<std::uint64_t, std::uint64_t>> chunk_bounds(std::span<const std::int64_t> indptr,
                                                                  std::uint64_t n_chunks) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  if (indptr.size() <= 1) return out;
  const std::uint64_t n_cells = indptr.size() - 1;
  const std::uint64_t k = std::max<std::uint64_t>(1, std::min(n_chunks, n_cells));
  const double step = static_cast<double>(indptr[n_cells]) / static_cast<double>(k);
  std::vector<std::uint64_t> cuts{0};
  for (std::uint64_t i = 1; i < k; ++i) {
    const double v = static_cast<double>(i) * step;
    // Lower bound in double precision over the non-decreasing indptr.
    const auto it =
        std::partition_point(indptr.begin(), indptr.end(), [v](std::int64_t x) { return static_cast<double>(x) < v; });
    cuts.push_back(static_cast<std::uint64_t>(it - indptr.begin()));
  }
  cuts.push_back(n_cells);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) out.emplace_back(cuts[i], cuts[i + 1]);
  return out;
}

std::vector<std::byte> encode_tile(const TileCsr& csr, const TileEncodeOptions& o) {
  check_input(csr, o);
  const std::uint64_t n_cells = csr.indptr.size() - 1;
  const auto nnz = static_cast<std::uint64_t>(csr.indptr[n_cells]);
  const auto bounds = chunk_bounds(csr.indptr, o.n_chunks);

  std::vector<EncodedChunk> chunks(bounds.size());
  for (std::size_t m = 0; m < bounds.size(); ++m) {
    EncodedChunk& c = chunks[m];
    c.cell_lo = bounds[m].first;
    c.cell_hi = bounds[m].second;
    c.nnz_lo = static_cast<std::uint64_t>(csr.indptr[c.cell_lo]);
    c.nnz_hi = static_cast<std::uint64_t>(csr.indptr[c.cell_hi]);
    if (o.version == kVersion2 && c.nnz_hi - c.nnz_lo >= (std::uint64_t{1} << 32))
      detail::fail<LimitError>(o.name, detail::chunk_label(m), "holds 2^32 or more nonzeros; request more chunks",
                               "T12");
  }

  const codec::ZstdOptions zopt{.level = o.level, .content_size = true, .checksum = false};
  const auto encode_chunk = [&](std::size_t m) {
    thread_local std::vector<std::byte> gap_raw, val_raw;
    EncodedChunk& c = chunks[m];
    build_chunk(csr, c, gap_raw, val_raw);
    c.gaps = codec::zstd_compress(gap_raw, zopt);
    c.vals = codec::zstd_compress(val_raw, zopt);
    // Writers never emit an exception frame with k = 0 (§2.5).
    if (c.vexc.size() > 0) c.vexc_frame = codec::zstd_compress(detail::exception_bytes(c.vexc), zopt);
    if (c.gexc.size() > 0) c.gexc_frame = codec::zstd_compress(detail::exception_bytes(c.gexc), zopt);
  };
  // The exception policy is checked before compressing (the counts do not depend on zstd), but
  // the lists are built with the streams; count them in a cheap first pass instead.
  if (o.version == kVersion2) {
    std::uint64_t n_vexc = 0, n_gexc = 0;
    for (std::uint64_t r = 0; r < n_cells; ++r) {
      std::uint64_t prev = 0;
      for (auto j = static_cast<std::uint64_t>(csr.indptr[r]); j < static_cast<std::uint64_t>(csr.indptr[r + 1]); ++j) {
        n_gexc += csr.indices[j] - prev > kMaxStoredU16;
        n_vexc += csr.values[j] > kMaxStoredU16;
        prev = csr.indices[j];
      }
    }
    const std::uint64_t limit = std::max<std::uint64_t>(1024, nnz / 200);
    for (const auto& [count, kind] : {std::pair{n_vexc, "value"}, std::pair{n_gexc, "gap"}}) {
      if (count > limit)
        detail::fail<LimitError>(o.name, "",
                                 std::to_string(count) + " " + kind + " exceptions exceed the limit of " +
                                     std::to_string(limit) +
                                     " (max(1024, nnz / 200)); data with so many counts above "
                                     "65,535 is not raw counts",
                                 "");
    }
  }
  if (o.threads == 1 || chunks.size() < 2) {
    for (std::size_t m = 0; m < chunks.size(); ++m) encode_chunk(m);
  } else {
    const auto body = [&] {
      tbb::parallel_for(std::size_t{0}, chunks.size(), [&](std::size_t m) { encode_chunk(m); });
    };
    if (o.threads == 0) {
      body();
    } else {
      tbb::task_arena arena(detail::arena_size(o.threads));
      arena.execute(body);
    }
  }

  // §4.6 layout: header, table, indptr, then every frame on an 8-byte boundary.
  const std::uint64_t entry_size = ChunkEntry::size_for(o.version);
  TileHeader h;
  h.version = o.version;
  h.n_cells = n_cells;
  h.nnz = nnz;
  h.n_genes = static_cast<std::uint32_t>(csr.n_genes);
  h.n_chunks = static_cast<std::uint32_t>(chunks.size());
  h.indptr_off = TileHeader::kSize + entry_size * chunks.size();
  std::uint64_t pos = h.indptr_off + 8 * (n_cells + 1);
  std::vector<ChunkEntry> entries(chunks.size());
  const auto place = [&pos](const std::vector<std::byte>& frame) {
    if (frame.empty()) return FrameRef{};
    pos = align8(pos);
    const FrameRef ref{pos, frame.size()};
    pos += frame.size();
    return ref;
  };
  for (std::size_t m = 0; m < chunks.size(); ++m) {
    const EncodedChunk& c = chunks[m];
    ChunkEntry& e = entries[m];
    e.cell_lo = c.cell_lo;
    e.cell_hi = c.cell_hi;
    e.nnz_lo = c.nnz_lo;
    e.nnz_hi = c.nnz_hi;
    e.gaps = place(c.gaps);
    e.vals = place(c.vals);
    e.vexc = place(c.vexc_frame);
    e.gexc = place(c.gexc_frame);
  }
  h.total_size = pos;
  std::vector<std::byte> out(checked_size(pos, "tile size"), std::byte{0});
  for (std::size_t m = 0; m < entries.size(); ++m)
    entries[m].encode_to(out.data() + TileHeader::kSize + entry_size * m, o.version);
  for (std::uint64_t r = 0; r <= n_cells; ++r) store_le<std::int64_t>(out.data() + h.indptr_off + 8 * r, csr.indptr[r]);
  const auto copy_frame = [&out](const FrameRef& ref, const std::vector<std::byte>& frame) {
    if (!frame.empty()) std::memcpy(out.data() + ref.off, frame.data(), frame.size());
  };
  for (std::size_t m = 0; m < chunks.size(); ++m) {
    copy_frame(entries[m].gaps, chunks[m].gaps);
    copy_frame(entries[m].vals, chunks[m].vals);
    copy_frame(entries[m].vexc, chunks[m].vexc_frame);
    copy_frame(entries[m].gexc, chunks[m].gexc_frame);
  }
  h.crc32 = codec::crc32({out.data() + TileHeader::kSize, out.size() - TileHeader::kSize});
  h.encode_to(out.data());
  return out;
}

}  // namespace tessera::cells
