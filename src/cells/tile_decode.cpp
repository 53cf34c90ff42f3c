// Stage 5 of the reader validation: decoding a tile's chunks (spec deltacells.md §2.6, §3.4).
// Each chunk decompresses its two byte-planar streams into a per-thread scratch buffer, prefix-sums
// the gaps of every cell and recombines the counts, folding the v2 exception frames in while it
// walks (gap exceptions shift the rest of their cell, value exceptions replace one count).
// Chunks are independent and write disjoint output ranges, so they decode in parallel.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <vector>

#include "exception_frame.hpp"
#include "rules.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::cells {

using detail::chunk_label;
using detail::fail;

namespace {

std::span<const std::byte> frame_bytes(const Tile& tile, const FrameRef& f) {
  return tile.bytes().subspan(static_cast<std::size_t>(f.off), static_cast<std::size_t>(f.len));
}

}  // namespace

template <typename V>
void Tile::decode_one(std::size_t k, std::int32_t* indices, V* values) const {
  const ChunkEntry& e = chunks_[k];
  const std::uint64_t n = e.n();
  const std::string structure = chunk_label(k);
  // Two planar streams side by side: gaps in [0, 2n), vals in [2n, 4n).
  thread_local std::vector<std::byte> scratch;
  // n < 2^63 (indptr values are int64), so 2n and 4n fit 64 bits.
  const std::size_t two_n = checked_size(checked_mul(n, 2, "chunk stream size"), "chunk stream size");
  // Both frames must declare exactly 2n bytes before 4n bytes of scratch are sized from n.
  detail::check_stream_frame(frame_bytes(*this, e.gaps), two_n, name_, structure, "gaps");
  detail::check_stream_frame(frame_bytes(*this, e.vals), two_n, name_, structure, "vals");
  if (scratch.size() < checked_mul(two_n, 2, "chunk scratch size")) scratch.resize(2 * two_n);
  std::byte* gaps = scratch.data();
  std::byte* vals = scratch.data() + two_n;
  detail::decode_stream_frame(frame_bytes(*this, e.gaps), {gaps, two_n}, name_, structure, "gaps");
  detail::decode_stream_frame(frame_bytes(*this, e.vals), {vals, two_n}, name_, structure, "vals");

  thread_local detail::ExceptionList vexc, gexc;
  vexc.positions.clear();
  vexc.payloads.clear();
  gexc.positions.clear();
  gexc.payloads.clear();
  if (e.vexc.len != 0) detail::decode_exception_frame(frame_bytes(*this, e.vexc), n, name_, structure, "vexc", vexc);
  if (e.gexc.len != 0) detail::decode_exception_frame(frame_bytes(*this, e.gexc), n, name_, structure, "gexc", gexc);

  const auto* glo = reinterpret_cast<const std::uint8_t*>(gaps);
  const auto* ghi = glo + n;
  const auto* vlo = reinterpret_cast<const std::uint8_t*>(vals);
  const auto* vhi = vlo + n;
  const std::uint64_t n_genes = header_.n_genes;
  std::int32_t* idx = indices + e.nnz_lo;
  V* val = values + e.nnz_lo;

  // Genes: the running sum of a cell's gaps, in 64 bits. A cell holds at most n_genes <= 2^31
  // nonzeros (T18), so sums of u16 gaps plus u32 payloads cannot overflow.
  std::size_t next_g = 0;  // next gap exception
  const std::size_t n_gexc = gexc.size();
  for (std::uint64_t r = e.cell_lo; r < e.cell_hi; ++r) {
    const std::uint64_t s = static_cast<std::uint64_t>(indptr_[r]) - e.nnz_lo;
    const std::uint64_t end = static_cast<std::uint64_t>(indptr_[r + 1]) - e.nnz_lo;
    if (s == end) continue;
    std::uint64_t gene = 0;
    std::uint32_t repeated = 0;
    if (next_g < n_gexc && gexc.positions[next_g] < end) {
      // Slow path: this cell has gap exceptions.
      for (std::uint64_t j = s; j < end; ++j) {
        const std::uint32_t gap = glo[j] | (std::uint32_t{ghi[j]} << 8);
        repeated |= static_cast<std::uint32_t>(j > s && gap == 0);
        gene += gap;
        if (next_g < n_gexc && gexc.positions[next_g] == j) {
          const std::uint32_t payload = gexc.payloads[next_g];
          if (gap != kMaxStoredU16)
            fail(name_, structure,
                 "gexc position " + std::to_string(j) + " has stored gap " + std::to_string(gap) + ", not 65535", "X4");
          if (payload < 1 || payload > n_genes - 1)
            fail(name_, structure,
                 "gexc payload " + std::to_string(payload) + " at position " + std::to_string(j) + " outside 1.." +
                     std::to_string(n_genes - 1),
                 "X4");
          gene += payload;
          ++next_g;
        }
        idx[j] = static_cast<std::int32_t>(gene);
        if (gene >= n_genes) break;  // reported below; keeps later sums small
      }
    } else {
      gene = glo[s] | (std::uint32_t{ghi[s]} << 8);
      idx[s] = static_cast<std::int32_t>(gene);
      for (std::uint64_t j = s + 1; j < end; ++j) {
        const std::uint32_t gap = glo[j] | (std::uint32_t{ghi[j]} << 8);
        repeated |= static_cast<std::uint32_t>(gap == 0);
        gene += gap;
        idx[j] = static_cast<std::int32_t>(gene);
      }
    }
    if (repeated)
      fail(name_, structure, "cell " + std::to_string(r) + " repeats a gene (a stored gap of 0 after its first)", "T20");
    if (gene >= n_genes)
      fail(name_, structure,
           "cell " + std::to_string(r) + " reaches gene index " + std::to_string(gene) + ", not below n_genes " +
               std::to_string(n_genes),
           "T22");
  }

  // Counts.
  std::uint32_t zero = 0;
  for (std::uint64_t j = 0; j < n; ++j) {
    const std::uint32_t v = vlo[j] | (std::uint32_t{vhi[j]} << 8);
    zero |= static_cast<std::uint32_t>(v == 0);
    val[j] = static_cast<V>(v);
  }
  if (zero) {
    std::uint64_t j = 0;
    while ((vlo[j] | vhi[j]) != 0) ++j;
    fail(name_, structure, "stored count at position " + std::to_string(j) + " is 0", "T21");
  }
  for (std::size_t i = 0; i < vexc.size(); ++i) {
    const std::uint32_t pos = vexc.positions[i];
    const std::uint32_t payload = vexc.payloads[i];
    const std::uint32_t stored = vlo[pos] | (std::uint32_t{vhi[pos]} << 8);
    if (stored != kMaxStoredU16)
      fail(name_, structure,
           "vexc position " + std::to_string(pos) + " has stored count " + std::to_string(stored) + ", not 65535", "X3");
    if (payload < kMaxStoredU16 + 1 || payload > kMaxCountV2)
      fail(name_, structure,
           "vexc payload " + std::to_string(payload) + " at position " + std::to_string(pos) + " outside 65536..2147483647",
           "X3");
    val[pos] = static_cast<V>(payload);
  }
}

template <typename V>
void Tile::decode_all(std::span<std::int32_t> indices, std::span<V> values, const DecodeOptions& options) const {
  if (indices.size() != header_.nnz || values.size() != header_.nnz)
    throw UsageError(name_ + ": decode buffers hold " + std::to_string(indices.size()) + " indices and " +
                         std::to_string(values.size()) + " values; the tile has " + std::to_string(header_.nnz) +
                         " nonzeros",
                     name_);
  const std::size_t n_chunks = chunks_.size();
  if (options.threads == 1 || n_chunks < 2) {
    for (std::size_t k = 0; k < n_chunks; ++k) decode_one<V>(k, indices.data(), values.data());
    return;
  }
  const auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n_chunks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t k = r.begin(); k != r.end(); ++k) decode_one<V>(k, indices.data(), values.data());
    });
  };
  if (options.threads == 0) {
    body();
  } else {
    tbb::task_arena arena(detail::arena_size(options.threads));
    arena.execute(body);
  }
}

void Tile::decode(std::span<std::int32_t> indices, std::span<std::int32_t> values, const DecodeOptions& options) const {
  decode_all<std::int32_t>(indices, values, options);
}
void Tile::decode(std::span<std::int32_t> indices, std::span<float> values, const DecodeOptions& options) const {
  decode_all<float>(indices, values, options);
}

void Tile::decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<std::int32_t> values) const {
  if (k >= chunks_.size() || indices.size() < header_.nnz || values.size() < header_.nnz)
    throw UsageError(name_ + ": decode_chunk: chunk or buffer out of range", name_);
  decode_one<std::int32_t>(k, indices.data(), values.data());
}
void Tile::decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<float> values) const {
  if (k >= chunks_.size() || indices.size() < header_.nnz || values.size() < header_.nnz)
    throw UsageError(name_ + ": decode_chunk: chunk or buffer out of range", name_);
  decode_one<float>(k, indices.data(), values.data());
}

}  // namespace tessera::cells
