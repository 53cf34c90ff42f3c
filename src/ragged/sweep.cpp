// The sweep engine (spec §5.2, §5.4) and the cells-axis arithmetic it needs (spec §3.4, §3.5).
#include "sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "objects_ahead.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/kept.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged::detail {
namespace {

[[noreturn]] void axis_error(const std::string& path, const std::string& rule) {
  fail_at<FormatError>(path, "cells axis", rule);
}

// The working buffers of one sweep, one of each per slot of a batch.
struct SweepBuffers {
  std::vector<zarr::VlenChunk> decoded;
  std::vector<std::vector<std::byte>> encoded;
  std::vector<std::uint64_t> words;  // an object's morton words (only ever grows)
};

// The morton words of `box`, read into the start of `words`, which only grows.
std::span<const std::uint64_t> read_words(const zarr::Array& morton, const zarr::Box& box,
                                          std::vector<std::uint64_t>& words) {
  const std::span<std::uint64_t> out = grown_prefix(words, morton.box_bytes(box) / 8);
  morton.read_box_into(box, std::as_writable_bytes(out));
  return out;
}

}  // namespace

std::size_t batch_chunks(unsigned threads) {
  const std::size_t cores = threads ? threads : static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  return std::clamp<std::size_t>(8 * cores, 16, 64);
}

void parallel_for_each(unsigned threads, std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (n == 1) return fn(0);
  const auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) fn(i);
    });
  };
  if (threads == 0) return body();
  tbb::task_arena arena(static_cast<int>(threads));
  arena.execute(body);
}

int chunk_depth(const RaggedArray& array) {
  if (!array.on_cells_axis())
    throw UsageError(array.path() +
                     ": dimension_names is [\"chunks\"]: a per-chunk companion is readable with read_cell only");
  const auto depth = morton::log4_exact(array.chunk_cells());
  if (!depth)
    axis_error(array.path(),
               "read chunk of " + std::to_string(array.chunk_cells()) + " cells is not a power-of-four subtree");
  return *depth;
}

std::optional<std::uint64_t> chunk_id_of(std::span<const std::uint64_t> words, std::uint64_t chunk_cells,
                                         std::string_view what, int* cell_order) {
  const int depth = *morton::log4_exact(chunk_cells);
  std::optional<std::uint64_t> id;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::uint64_t w = words[i];
    if (w == 0) continue;
    const auto info = morton::inspect(w);
    // Named only for an error: a sweep checks about a million words.
    const auto where = [&] { return std::string(what) + " cell " + std::to_string(i); };
    if (!info) morton::check(w, where());  // throws with the rule
    if (info->point)
      throw FormatError(where() + ": morton word " + std::to_string(w) + " is a point word; cells are area words",
                        std::string(what), "morton");
    if (*cell_order < 0) *cell_order = info->order;
    if (info->order != *cell_order)
      throw FormatError(where() + ": morton word of order " + std::to_string(info->order) + " on an axis of order " +
                            std::to_string(*cell_order) + " (every written word has the cells-axis order)",
                        std::string(what), "morton");
    if (info->order < depth)
      throw FormatError(where() + ": order-" + std::to_string(info->order) +
                            " words cannot fill a read chunk of depth " + std::to_string(depth),
                        std::string(what), "morton");
    const std::uint64_t a = morton::clip(w, info->order - depth);
    if (id && *id != a)
      throw FormatError(std::string(what) + ": morton words " + std::to_string(*id) + " and " + std::to_string(a) +
                            " of one read chunk have different ancestors: the cells axis is not nested",
                        std::string(what), "morton");
    id = a;
  }
  return id;
}

std::optional<CellsAxis> read_axis(const RaggedArray& payload, const zarr::Array& morton, MortonCache& cache) {
  const std::string& path = morton.path();
  const auto objects = morton.list_stored_objects();
  if (objects.empty()) return std::nullopt;
  const zarr::Box span = morton.stored_span(objects.front());
  cache.object = objects.front();
  const auto words = read_words(morton, span, cache.words);
  const auto it = std::find_if(words.begin(), words.end(), [](std::uint64_t w) { return w != 0; });
  if (it == words.end()) axis_error(path, "the first stored object holds no written word");
  const std::uint64_t anchor = *it;
  const std::uint64_t anchor_index = span[0].begin + static_cast<std::uint64_t>(it - words.begin());
  const auto info = morton::inspect(anchor);
  if (!info || info->point) axis_error(path, "anchor word " + std::to_string(anchor) + " is not a valid area word");

  CellsAxis axis;
  axis.length = payload.size();
  axis.chunk_cells = payload.chunk_cells();
  axis.cell_order = info->order;
  const int depth = chunk_depth(payload);
  if (axis.cell_order < depth)
    axis_error(path, "cell order " + std::to_string(axis.cell_order) + " is shallower than the read chunk");
  axis.chunk_order = axis.cell_order - depth;
  const std::uint64_t nested = morton::nested(anchor);
  const auto sphere = mul_u64(12, morton::pow4(axis.cell_order));
  if (sphere && *sphere == axis.length) {
    axis.flat = true;
    if (nested != anchor_index)
      axis_error(path, "placement: word " + std::to_string(anchor) + " (NESTED " + std::to_string(nested) +
                           ") written at index " + std::to_string(anchor_index));
    return axis;
  }
  const auto d = morton::log4_exact(axis.length);
  if (!d || *d > axis.cell_order)
    axis_error(path, "length " + std::to_string(axis.length) + " is neither 4^d (one subtree) nor 12·4^" +
                         std::to_string(axis.cell_order) + " (the sphere at the words' order)");
  axis.depth = *d;
  axis.root = morton::clip(anchor, axis.cell_order - axis.depth);
  axis.root_start = morton::nested(axis.root) << (2 * axis.depth);
  if (nested - axis.root_start != anchor_index)
    axis_error(path, "placement: word " + std::to_string(anchor) + " belongs at index " +
                         std::to_string(nested - axis.root_start) + " but is written at index " +
                         std::to_string(anchor_index));
  return axis;
}

CellSpan subtree_span(const CellsAxis& axis, std::uint64_t word) {
  const auto info = morton::check(word, "subtree", morton::Source::User);
  if (info.point)
    throw UsageError("subtree: " + std::to_string(word) + " is a point word; a subtree needs an area word");
  if (info.order > axis.cell_order)
    throw UsageError("subtree: order-" + std::to_string(info.order) + " word " + morton::to_decimal(word) +
                     " is deeper than the cells axis (order " + std::to_string(axis.cell_order) + ")");
  const int below = axis.cell_order - info.order;
  if (axis.flat) {
    const std::uint64_t begin = morton::nested(word) << (2 * below);
    return {begin, begin + morton::pow4(below)};
  }
  const int root_order = axis.cell_order - axis.depth;
  if (info.order <= root_order) {
    if (morton::clip(axis.root, info.order) == word) return {0, axis.length};
    return {};
  }
  if (morton::clip(word, root_order) != axis.root) return {};
  const std::uint64_t begin = (morton::nested(word) << (2 * below)) - axis.root_start;
  return {begin, begin + morton::pow4(below)};
}

namespace {

// Runs fn(order[0]), fn(order[1]), … on up to `threads` workers (0: oneTBB's default), each
// taking the next position from a shared counter, so work is handed out in `order`. Largest
// first leaves the smallest pieces for the end of a batch, where one core otherwise waits while
// the other finishes a large one.
void for_each_in_turn(unsigned threads, std::span<const std::size_t> order,
                      const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  const std::size_t cores = threads ? threads : static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  parallel_for_each(threads, std::min(order.size(), cores), [&](std::size_t) {
    for (std::size_t p; (p = next.fetch_add(1, std::memory_order_relaxed)) < order.size();) fn(order[p]);
  });
}

}  // namespace

void sweep(const SweepRequest& req, const std::function<void(SweepBatch&)>& consume) {
  const zarr::Array& a = *req.array;
  const zarr::Array& morton = *req.morton;
  const std::uint64_t length = a.shape()[0];
  const std::uint64_t chunk_cells = a.read_chunk_elements();
  const std::uint64_t object_cells = a.object_shape()[0];
  const std::uint64_t k = a.chunks_per_object_count();

  std::vector<zarr::Coords> objects;
  CellSpan cover{0, length};
  if (!req.span) {
    objects = a.list_stored_objects();
  } else {
    if (req.span->empty()) return;
    // Widen to whole read chunks.
    cover.begin = req.span->begin / chunk_cells * chunk_cells;
    cover.end = std::min(length, (req.span->end + chunk_cells - 1) / chunk_cells * chunk_cells);
    for (std::uint64_t o = cover.begin / object_cells; o * object_cells < cover.end; ++o) objects.push_back({o});
  }

  int cell_order = -1;
  // One decoded-chunk buffer per slot of a batch, reused from batch to batch (a chunk the consumer
  // leaves in its batch comes back), and one for the encoded bytes when a local object is copied
  // out with pread rather than read through its map (zarr::StoredObject::scan_read_path). They
  // are kept for the process's next sweep, so decoding allocates and faults in no new memory once
  // the buffers have grown.
  const std::size_t batch_size = batch_chunks(req.threads);
  static Kept<SweepBuffers> kept(1);
  KeptLease<SweepBuffers> lease(kept);
  if (lease->decoded.size() < batch_size) lease->decoded.resize(batch_size);
  if (lease->encoded.size() < batch_size) lease->encoded.resize(batch_size);
  std::vector<zarr::VlenChunk>& buffers = lease->decoded;
  std::vector<std::vector<std::byte>>& encoded = lease->encoded;
  // What the cover takes of object `o`: cells [first_cell, last_cell) of its stored span (empty
  // when the cover misses it), and whether it is read whole (one GET) rather than by its index.
  struct ObjectCover {
    zarr::Box span;
    std::uint64_t first_cell = 0, last_cell = 0;
    bool whole = false;
  };
  const auto cover_of = [&](const zarr::Coords& o) {
    ObjectCover c{a.stored_span(o)};
    c.first_cell = std::max(c.span[0].begin, cover.begin);
    c.last_cell = std::min(c.span[0].end, cover.end);
    c.whole = c.first_cell < c.last_cell &&
              ((c.first_cell == c.span[0].begin && c.last_cell == c.span[0].end) || !a.sharded());
    return c;
  };
  // On a remote store the objects read whole are fetched ahead while this one is decoded.
  detail::ObjectsAhead ahead(a, objects, [&](std::size_t n) { return cover_of(objects[n]).whole; });
  for (std::size_t at = 0; at < objects.size(); ++at) {
    const zarr::Coords& object = objects[at];
    // Named copies, not a structured binding: the batch lambdas below capture them.
    const ObjectCover covered = cover_of(object);
    const zarr::Box& ospan = covered.span;
    const std::uint64_t first_cell = covered.first_cell, last_cell = covered.last_cell;
    const bool whole = covered.whole;
    if (first_cell >= last_cell) continue;
    const std::uint64_t first_inner = (first_cell - ospan[0].begin) / chunk_cells;
    const std::uint64_t end_inner = std::min(k, (last_cell - ospan[0].begin + chunk_cells - 1) / chunk_cells);

    // The encoded chunks: the whole object in one GET, or its index then the covering chunks.
    std::optional<zarr::StoredObject> stored;
    std::optional<zarr::ShardIndex> index;
    io::ReadPath read_path = io::ReadPath::Mmap;
    if (whole) {
      stored.emplace(ahead.take(at));
      if (!stored->exists()) continue;
      read_path = stored->scan_read_path();
    } else {
      index = a.read_shard_index(object);
      if (!index) continue;
    }

    // Morton words of the covered range, read once per object (or taken from the anchor read).
    const std::uint64_t words_begin = ospan[0].begin + first_inner * chunk_cells;
    const std::uint64_t words_end = std::min(ospan[0].end, ospan[0].begin + end_inner * chunk_cells);
    std::span<const std::uint64_t> object_words;
    if (req.cache && req.cache->object && morton.object_shape() == a.object_shape() && *req.cache->object == object) {
      const std::uint64_t base = object[0] * object_cells;
      object_words =
          std::span<const std::uint64_t>(req.cache->words).subspan(words_begin - base, words_end - words_begin);
    } else {
      object_words = read_words(morton, {{words_begin, words_end}}, lease->words);
    }

    for (std::uint64_t g = first_inner; g < end_inner; g += batch_size) {
      const std::uint64_t g_end = std::min<std::uint64_t>(end_inner, g + batch_size);
      SweepBatch batch;
      batch.begin = ospan[0].begin + g * chunk_cells;
      const std::uint64_t batch_end = std::min(ospan[0].end, ospan[0].begin + g_end * chunk_cells);
      batch.morton = object_words.subspan(batch.begin - words_begin, batch_end - batch.begin);
      // The morton words of the read chunk at `start` (shorter at the axis end).
      const auto words_of_chunk = [&](std::uint64_t start) {
        const std::uint64_t off = start - batch.begin;
        return std::span<const std::uint64_t>(batch.morton)
            .subspan(off, std::min(chunk_cells, batch.morton.size() - off));
      };

      // The batch's inner chunks of a partly covered shard: one ranged GET when they lie together.
      std::vector<std::optional<std::vector<std::byte>>> fetched(g_end - g);
      if (index) fetched = a.read_stored_chunks(*index, g, g_end);
      std::vector<std::optional<PopulatedChunk>> decoded(g_end - g);
      std::vector<std::exception_ptr> deferred(g_end - g);
      // Each populated chunk's words are checked by its worker, against an order of their own;
      // a chunk that fails, or whose order is not the sweep's, is checked again in axis order
      // below, so errors are the ones a serial sweep raises.
      struct WordsCheck {
        std::optional<std::uint64_t> id;
        int order = -1;
        bool failed = false;
      };
      std::vector<WordsCheck> checks(g_end - g);
      const auto what_of = [&](std::uint64_t start) {
        return morton.path() + " read chunk at cell " + std::to_string(start);
      };
      // The batch's chunks, largest stored first (their work grows with their populated cells).
      std::vector<std::size_t> order(g_end - g);
      std::vector<std::uint64_t> stored_bytes(g_end - g, 0);
      for (std::size_t j = 0; j < order.size(); ++j) {
        order[j] = j;
        if (stored && stored->index()) {
          if (const auto range = stored->index()->chunk_range(g + j)) stored_bytes[j] = range->nbytes;
        } else if (!stored && fetched[j]) {
          stored_bytes[j] = fetched[j]->size();
        }
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return stored_bytes[x] > stored_bytes[y]; });
      for_each_in_turn(req.threads, order, [&](std::size_t j) {
        const std::uint64_t inner = g + j;
        const std::uint64_t start = ospan[0].begin + inner * chunk_cells;
        if (start >= length) return;
        zarr::VlenChunk& cells = buffers[j];
        if (stored) {
          const auto bytes = stored->stored_chunk(inner, read_path, encoded[j]);
          if (!bytes) return;
          a.decode_vlen_chunk_into(*bytes, zarr::ChunkRef{stored->key(), a.sharded(), inner}, cells);
        } else {
          if (!fetched[j]) return;
          a.decode_vlen_chunk_into(*fetched[j], zarr::ChunkRef{index->key(), true, inner}, cells);
        }
        if (cells.all_empty()) return;
        decoded[j].emplace(PopulatedChunk{start, 0, j, std::move(cells)});
        try {
          checks[j].id = chunk_id_of(words_of_chunk(start), chunk_cells, what_of(start), &checks[j].order);
        } catch (const Error&) {  // raised again below, in axis order
          checks[j].failed = true;
        }
        if (req.task) {
          try {
            req.task(*decoded[j], words_of_chunk(start));
          } catch (...) {
            deferred[j] = std::current_exception();
          }
        }
      });
      for (std::size_t j = 0; j < decoded.size(); ++j) {
        if (!decoded[j]) continue;
        PopulatedChunk& chunk = *decoded[j];
        const std::string what = what_of(chunk.start);
        const WordsCheck& check = checks[j];
        std::optional<std::uint64_t> id = check.id;
        if (check.failed || (check.order >= 0 && cell_order >= 0 && check.order != cell_order))
          id = chunk_id_of(words_of_chunk(chunk.start), chunk_cells, what, &cell_order);  // throws
        else if (cell_order < 0) cell_order = check.order;
        if (!id)
          throw FormatError(
              what + ": a populated chunk of " + a.path() + " has no written morton word (no chunk identity)",
              morton.path(), "morton");
        if (deferred[j]) std::rethrow_exception(deferred[j]);
        chunk.chunk_id = *id;
        batch.chunks.push_back(std::move(chunk));
      }
      consume(batch);
      for (PopulatedChunk& chunk : batch.chunks) buffers[chunk.slot] = std::move(chunk.cells);
    }
  }
}

}  // namespace tessera::ragged::detail
