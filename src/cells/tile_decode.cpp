// Stage 5 of the reader validation: decoding a tile's chunks (spec deltacells.md §2.6, §3.4).
// Each chunk decompresses its two byte-planar streams into a per-thread scratch buffer, a block
// at a time, prefix-sums the gaps of every cell and recombines the counts as the blocks come out,
// folding the v2 exception frames in while it walks (gap exceptions shift the rest of their cell,
// value exceptions replace one count).
// Chunks are independent and write disjoint output ranges, so they decode in parallel.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <exception>
#include <type_traits>
#include <vector>

#include "decode_kernels.hpp"
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

// Chunk k's stream size (2 bytes per nonzero), once both of its frames are shown to declare
// exactly that: nothing is sized from a chunk's nonzero count before this.
std::size_t checked_stream_bytes(const Tile& tile, std::size_t k) {
  const ChunkEntry& e = tile.chunks()[k];
  // n < 2^63 (indptr values are int64), so 2n fits 64 bits.
  const std::size_t two_n = checked_size(checked_mul(e.n(), 2, "chunk stream size"), "chunk stream size");
  const std::string structure = chunk_label(k);
  detail::check_stream_frame(frame_bytes(tile, e.gaps), two_n, tile.name(), structure, "gaps");
  detail::check_stream_frame(frame_bytes(tile, e.vals), two_n, tile.name(), structure, "vals");
  return two_n;
}

}  // namespace

template <typename I, typename V>
void Tile::decode_one(std::size_t k, I* indices, V* values, std::vector<WideCount>* wide, std::uint64_t first) const {
  const ChunkEntry& e = chunks_[k];
  const std::uint64_t n = e.n();
  const std::string structure = chunk_label(k);
  const std::size_t two_n = checked_stream_bytes(*this, k);
  I* idx = indices + (e.nnz_lo - first);
  V* val = values + (e.nnz_lo - first);
  // Both streams decompress, one after the other, into one per-thread buffer, a zstd block (at
  // most 128 KiB) at a time. A stream is its n low bytes, then its n high bytes: once a block of
  // high bytes is out, the nonzeros it completes are un-planed into the output while that block is
  // still in cache, and the output is written while zstd works on the next block. Un-planing after
  // the whole stream would read every byte back from memory.
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < two_n) scratch.resize(two_n);
  const auto* lo = reinterpret_cast<const std::uint8_t*>(scratch.data());
  const auto* hi = lo + n;

  thread_local detail::ExceptionList vexc, gexc;
  vexc.positions.clear();
  vexc.payloads.clear();
  gexc.positions.clear();
  gexc.payloads.clear();
  const std::uint64_t n_genes = header_.n_genes;
  const bool stream = n >= detail::kStreamNnz;

  // The errors of the exception frames and of the gene pass are held back until both streams have
  // been decoded, so a damaged chunk still reports the first rule it breaks in the original order
  // (T19 for either stream before X1-X4, T20, T22). After the first, the pass stops.
  std::exception_ptr pending;
  const auto held = [&pending](const auto& step) {
    if (pending) return;
    try {
      step();
    } catch (const FormatError&) {
      pending = std::current_exception();
    }
  };
  held([&] {
    if (e.vexc.len != 0) detail::decode_exception_frame(frame_bytes(*this, e.vexc), n, name_, structure, "vexc", vexc);
    if (e.gexc.len != 0) detail::decode_exception_frame(frame_bytes(*this, e.gexc), n, name_, structure, "gexc", gexc);
  });

  // Genes: the running sum of a cell's gaps, in 64 bits, for the cells whose high bytes are out.
  // A cell holds at most n_genes <= 2^31 nonzeros (T18), so sums of u16 gaps plus u32 payloads
  // cannot overflow.
  std::uint64_t r = e.cell_lo;  // the next cell to un-plane
  std::size_t next_g = 0;       // the next gap exception
  const std::size_t n_gexc = gexc.size();
  const auto genes_until = [&](std::uint64_t ready) {
    for (; r < e.cell_hi; ++r) {
      const std::uint64_t s = static_cast<std::uint64_t>(indptr_[r]) - e.nnz_lo;
      const std::uint64_t end = static_cast<std::uint64_t>(indptr_[r + 1]) - e.nnz_lo;
      if (end > ready) return;
      if (s == end) continue;
      std::uint64_t gene = 0;
      std::uint32_t repeated = 0;
      if (next_g < n_gexc && gexc.positions[next_g] < end) {
        // Slow path: this cell has gap exceptions.
        for (std::uint64_t j = s; j < end; ++j) {
          const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
          repeated |= static_cast<std::uint32_t>(j > s && gap == 0);
          gene += gap;
          if (next_g < n_gexc && gexc.positions[next_g] == j) {
            const std::uint32_t payload = gexc.payloads[next_g];
            if (gap != kMaxStoredU16)
              fail(name_, structure,
                   "gexc position " + std::to_string(j) + " has stored gap " + std::to_string(gap) + ", not 65535",
                   "X4");
            if (payload < 1 || payload > n_genes - 1)
              fail(name_, structure,
                   "gexc payload " + std::to_string(payload) + " at position " + std::to_string(j) + " outside 1.." +
                       std::to_string(n_genes - 1),
                   "X4");
            gene += payload;
            ++next_g;
          }
          idx[j] = static_cast<I>(gene);
          if (gene >= n_genes) break;  // reported below; keeps later sums small
        }
      } else if (detail::cell_genes(lo, hi, s, end, idx, n_genes, stream)) {
        continue;  // valid: nothing to report
      } else {
        // A repeated gene or an index past n_genes: the exact walk finds which, for the message.
        gene = lo[s] | (std::uint32_t{hi[s]} << 8);
        idx[s] = static_cast<I>(gene);
        for (std::uint64_t j = s + 1; j < end; ++j) {
          const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
          repeated |= static_cast<std::uint32_t>(gap == 0);
          gene += gap;
          idx[j] = static_cast<I>(gene);
        }
      }
      if (repeated)
        fail(name_, structure, "cell " + std::to_string(r) + " repeats a gene (a stored gap of 0 after its first)",
             "T20");
      if (gene >= n_genes)
        fail(name_, structure,
             "cell " + std::to_string(r) + " reaches gene index " + std::to_string(gene) + ", not below n_genes " +
                 std::to_string(n_genes),
             "T22");
    }
  };
  const std::span<std::byte> planes(scratch.data(), two_n);
  detail::decode_stream_frame(frame_bytes(*this, e.gaps), planes, name_, structure, "gaps", [&](std::size_t produced) {
    if (produced > n) held([&] { genes_until(produced - n); });
  });

  // Counts, in whole vectors of the kernels until the last block.
  std::uint64_t counted = 0;
  bool zero = false;
  detail::decode_stream_frame(frame_bytes(*this, e.vals), planes, name_, structure, "vals", [&](std::size_t produced) {
    if (produced <= n || pending) return;
    const std::uint64_t ready = produced == two_n ? n : (produced - n) & ~std::uint64_t{63};
    if (ready <= counted) return;
    zero |= detail::chunk_values(lo + counted, hi + counted, ready - counted, val + counted, stream);
    counted = ready;
  });
#if defined(__SSE2__)
  // Streamed stores are weakly ordered: fence them before the exception fix-ups below overwrite
  // some of them and before another thread reads the output.
  if (stream) _mm_sfence();
#endif
  if (pending) std::rethrow_exception(pending);
  if (zero) {
    std::uint64_t j = 0;
    while ((lo[j] | hi[j]) != 0) ++j;
    fail(name_, structure, "stored count at position " + std::to_string(j) + " is 0", "T21");
  }
  for (std::size_t i = 0; i < vexc.size(); ++i) {
    const std::uint32_t pos = vexc.positions[i];
    const std::uint32_t payload = vexc.payloads[i];
    const std::uint32_t stored = lo[pos] | (std::uint32_t{hi[pos]} << 8);
    if (stored != kMaxStoredU16)
      fail(name_, structure,
           "vexc position " + std::to_string(pos) + " has stored count " + std::to_string(stored) + ", not 65535",
           "X3");
    if (payload < kMaxStoredU16 + 1 || payload > kMaxCountV2)
      fail(name_, structure,
           "vexc payload " + std::to_string(payload) + " at position " + std::to_string(pos) +
               " outside 65536..2147483647",
           "X3");
    if constexpr (sizeof(V) == 2)
      wide->push_back({e.nnz_lo + pos, payload});  // the narrow output keeps the stored 65535
    else val[pos] = static_cast<V>(payload);
  }
}

template <typename I, typename V>
void Tile::decode_all(std::span<I> indices, std::span<V> values, std::vector<WideCount>* wide,
                      const DecodeOptions& options) const {
  if (indices.size() != header_.nnz || values.size() != header_.nnz)
    throw UsageError(name_ + ": decode buffers hold " + std::to_string(indices.size()) + " indices and " +
                         std::to_string(values.size()) + " values; the tile has " + std::to_string(header_.nnz) +
                         " nonzeros",
                     name_);
  const std::size_t n_chunks = chunks_.size();
  if (options.threads == 1 || n_chunks < 2) {
    for (std::size_t k = 0; k < n_chunks; ++k) decode_one<I, V>(k, indices.data(), values.data(), wide);
    return;
  }
  // In parallel each chunk lists its wide counts apart; the lists join in chunk order.
  std::vector<std::vector<WideCount>> per_chunk(wide ? n_chunks : 0);
  const auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n_chunks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t k = r.begin(); k != r.end(); ++k)
        decode_one<I, V>(k, indices.data(), values.data(), wide ? &per_chunk[k] : nullptr);
    });
  };
  if (options.threads == 0) {
    body();
  } else {
    tbb::task_arena arena(detail::arena_size(options.threads));
    arena.execute(body);
  }
  for (const auto& list : per_chunk) wide->insert(wide->end(), list.begin(), list.end());
}

void Tile::decode(std::span<std::int32_t> indices, std::span<std::int32_t> values, const DecodeOptions& options) const {
  decode_all<std::int32_t, std::int32_t>(indices, values, nullptr, options);
}
void Tile::decode(std::span<std::int32_t> indices, std::span<float> values, const DecodeOptions& options) const {
  decode_all<std::int32_t, float>(indices, values, nullptr, options);
}

void Tile::check_decodes(const DecodeOptions& options) const {
  const auto check = [this](std::size_t k) {
    thread_local std::vector<std::int32_t> indices, values;
    const std::size_t n = checked_stream_bytes(*this, k) / 2;  // proven by the frames before it sizes a buffer
    if (indices.size() < n) indices.resize(n), values.resize(n);
    decode_one<std::int32_t, std::int32_t>(k, indices.data(), values.data(), nullptr, chunks_[k].nnz_lo);
  };
  const std::size_t n_chunks = chunks_.size();
  if (options.threads == 1 || n_chunks < 2) {
    for (std::size_t k = 0; k < n_chunks; ++k) check(k);
    return;
  }
  const auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n_chunks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t k = r.begin(); k != r.end(); ++k) check(k);
    });
  };
  if (options.threads == 0) {
    body();
  } else {
    tbb::task_arena arena(detail::arena_size(options.threads));
    arena.execute(body);
  }
}

void Tile::decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<std::int32_t> values) const {
  if (k >= chunks_.size() || indices.size() < header_.nnz || values.size() < header_.nnz)
    throw UsageError(name_ + ": decode_chunk: chunk or buffer out of range", name_);
  decode_one<std::int32_t, std::int32_t>(k, indices.data(), values.data(), nullptr);
}
void Tile::decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<float> values) const {
  if (k >= chunks_.size() || indices.size() < header_.nnz || values.size() < header_.nnz)
    throw UsageError(name_ + ": decode_chunk: chunk or buffer out of range", name_);
  decode_one<std::int32_t, float>(k, indices.data(), values.data(), nullptr);
}

void Tile::decode_narrow(std::span<std::uint16_t> genes, std::span<std::uint16_t> counts,
                         std::vector<WideCount>& wide_counts, const DecodeOptions& options) const {
  if (!narrow_decodable())
    throw UsageError(name_ + ": a narrow decode needs at most " + std::to_string(kNarrowMaxGenes) +
                         " genes; the tile has " + std::to_string(header_.n_genes),
                     name_);
  wide_counts.clear();
  decode_all<std::uint16_t, std::uint16_t>(genes, counts, &wide_counts, options);
}

void Tile::decode_chunk_narrow(std::size_t k, std::span<std::uint16_t> genes, std::span<std::uint16_t> counts,
                               std::vector<WideCount>& wide_counts) const {
  if (!narrow_decodable() || k >= chunks_.size() || genes.size() < header_.nnz || counts.size() < header_.nnz)
    throw UsageError(name_ + ": decode_chunk_narrow: chunk or buffer out of range, or too many genes", name_);
  wide_counts.clear();
  decode_one<std::uint16_t, std::uint16_t>(k, genes.data(), counts.data(), &wide_counts);
}

}  // namespace tessera::cells
