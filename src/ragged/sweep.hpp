// The sweep engine shared by the ragged readers (spec §5.2, §5.4; private to the module):
// finds the stored objects a sweep touches, reads each once (or, for a subtree, its index and
// the covering inner chunks), decodes inner chunks in parallel, pairs them with their `morton`
// words and chunk ids, and hands populated read chunks to a consumer in ascending order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/ragged/ragged_field.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged::detail {

// A read chunk with at least one non-empty cell.
struct PopulatedChunk {
  std::uint64_t start = 0;     // first cell index on the axis
  std::uint64_t chunk_id = 0;  // common ancestor of its morton words at the chunk order
  std::size_t slot = 0;        // position in its batch (< batch_chunks), as a ChunkTask saw it
  zarr::VlenChunk cells;       // C cells
};

// What one step of a sweep delivers: the morton words of every covered read chunk (populated or
// not, so masks can see observed-but-empty cells) and the populated chunks among them.
struct SweepBatch {
  std::uint64_t begin = 0;                // first cell of the covered range
  std::span<const std::uint64_t> morton;  // words of [begin, begin + morton.size()), valid during the call
  std::vector<PopulatedChunk> chunks;     // ascending
};

// [begin, end) on the cells axis.
struct CellSpan {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool empty() const noexcept { return begin >= end; }
};

// The morton words of the first stored object of `morton` (the axis anchor, RD-4), kept so the
// sweep does not read that object twice.
struct MortonCache {
  std::optional<zarr::Coords> object;
  std::vector<std::uint64_t> words;  // the object's stored span (may hold more words after it)
};

// Reads the axis from the anchor (one LIST, one GET); nullopt when `morton` stores nothing.
std::optional<CellsAxis> read_axis(const RaggedArray& payload, const zarr::Array& morton, MortonCache& cache);

// Spec §3.5: the cells span of the subtree below `word` (UsageError for points and words deeper
// than the axis; empty when disjoint).
CellSpan subtree_span(const CellsAxis& axis, std::uint64_t word);

// Runs `fn(i)` for i in [0, n) on oneTBB (inside an arena of `threads` when nonzero).
void parallel_for_each(unsigned threads, std::size_t n, const std::function<void(std::size_t)>& fn);

// Work on one populated chunk that needs no other chunk (read_tensors' blocks of one read chunk).
// It runs on the worker that decoded the chunk, right after decoding, while the chunk's bytes are
// still in that core's cache. `words` are the chunk's morton words, not yet checked (chunk_id is
// not set yet). Whatever it throws is held back and rethrown in axis order, after the checks of
// the chunk's words, so a sweep reports the first failing chunk whatever the thread count.
using ChunkTask = std::function<void(const PopulatedChunk& chunk, std::span<const std::uint64_t> words)>;

struct SweepRequest {
  const zarr::Array* array = nullptr;  // the vlen array swept (payload or a sibling)
  const zarr::Array* morton = nullptr;
  std::optional<CellSpan> span;  // none: the whole store (listed)
  unsigned threads = 0;
  MortonCache* cache = nullptr;
  ChunkTask task;  // optional
};

// Inner chunks decoded per batch for `threads` (0: oneTBB's default): several per core, so the
// barrier that ends a batch costs little, while the decoded chunks held at once (and what a
// ChunkTask makes of them) stay bounded on large shards.
std::size_t batch_chunks(unsigned threads);

// Calls `consume` with batches in ascending order (batches of one object never overlap). Every
// populated chunk's morton words must carry one chunk id at the chunk order (FormatError
// otherwise), and every written word of the sweep has one order (RD-3).
void sweep(const SweepRequest& request, const std::function<void(SweepBatch&)>& consume);

// The chunk id of a read chunk from its words at chunk cells C (FormatError naming `what`);
// nullopt when no word is written.
std::optional<std::uint64_t> chunk_id_of(std::span<const std::uint64_t> words, std::uint64_t chunk_cells,
                                         std::string_view what, int* cell_order);

// Checks the sweep's preconditions: a cells axis and a power-of-four read chunk.
int chunk_depth(const RaggedArray& array);

}  // namespace tessera::ragged::detail
