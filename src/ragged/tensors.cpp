// read_tensors (spec §5.3): assembles populated read chunks into blocks, reconciles one z-window
// per block under the fit policy, rasterizes every digest's CDF into bins, casts, and places each
// cell at the deinterleave of its block-local rank (row = y, col = x) with the 0/1/2 mask.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <tbb/task_arena.h>

#include "sweep.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/kept.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"

namespace tessera::ragged {

FitPolicy parse_fit_policy(std::string_view name) {
  if (name == "raise") return FitPolicy::Raise;
  if (name == "degrade_resolution") return FitPolicy::DegradeResolution;
  if (name == "collapse_bins") return FitPolicy::CollapseBins;
  throw UsageError("unknown fit policy '" + std::string(name) + "' (raise, degrade_resolution, collapse_bins)");
}

TensorDType parse_tensor_dtype(std::string_view name) {
  if (name == "uint16") return TensorDType::U16;
  if (name == "uint32") return TensorDType::U32;
  if (name == "float32") return TensorDType::F32;
  throw UsageError("unknown tensor dtype '" + std::string(name) + "' (uint16, uint32, float32)");
}

std::string_view name_of(FitPolicy p) noexcept {
  switch (p) {
    case FitPolicy::Raise: return "raise";
    case FitPolicy::DegradeResolution: return "degrade_resolution";
    case FitPolicy::CollapseBins: return "collapse_bins";
  }
  return "raise";
}

std::string_view name_of(TensorDType t) noexcept {
  switch (t) {
    case TensorDType::U16: return "uint16";
    case TensorDType::U32: return "uint32";
    case TensorDType::F32: return "float32";
  }
  return "uint32";
}

std::size_t item_size(TensorDType t) noexcept { return t == TensorDType::U16 ? 2 : 4; }

namespace {

// A block being assembled from the read chunks of several batches.
struct PendingBlock {
  std::uint64_t start = 0;
  std::vector<std::uint64_t> morton;
  std::vector<detail::PopulatedChunk> chunks;
};

// The input of one block: its first cell, its words (all of them), its populated read chunks.
struct BlockView {
  std::uint64_t start = 0;
  std::span<const std::uint64_t> morton;
  std::span<const detail::PopulatedChunk> chunks;
};

struct Window {
  double z_lo = 0;
  std::uint32_t n_bins = 0;
  double res = 0;
};

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Window fit_window(const TensorOptions& o, double z_lo, double z_hi, const std::string& where) {
  const double needed = z_hi - z_lo;
  const double window = static_cast<double>(o.n_bins) * o.resolution;
  Window w{z_lo + 0.0, o.n_bins, o.resolution};  // + 0.0 turns a -0.0 offset into +0.0
  switch (o.fit) {
    case FitPolicy::CollapseBins: {
      if (needed > window)
        throw UsageError(where + ": z-window [" + fmt(z_lo) + ", " + fmt(z_hi) + "] spans " + fmt(needed) +
                         ", more than the " + fmt(window) +
                         " that n_bins·resolution covers (collapse_bins never widens the window)");
      std::uint32_t n = std::uint32_t{1} << static_cast<int>(std::floor(std::log2(static_cast<double>(o.n_bins))));
      while (n / 2 >= 1 && static_cast<double>(n / 2) * o.resolution >= needed) n /= 2;
      w.n_bins = n;
      return w;
    }
    case FitPolicy::Raise:
      if (needed > window)
        throw UsageError(where + ": z-window [" + fmt(z_lo) + ", " + fmt(z_hi) + "] spans " + fmt(needed) +
                         " but n_bins·resolution = " + fmt(window) +
                         "; use fit degrade_resolution or collapse_bins, or raise n_bins/resolution");
      return w;
    case FitPolicy::DegradeResolution:
      while (needed > static_cast<double>(o.n_bins) * w.res) w.res *= 2;
      return w;
  }
  return w;
}

// Round half to even of a non-negative double under the default rounding mode: adding and
// subtracting 2^52 leaves the nearest integer (ties to even), exactly as nearbyint would, without
// a libm call per bin. Values ≥ 2^52 are integers already.
inline double round_half_even(double x) noexcept {
  constexpr double k2p52 = 4503599627370496.0;
  return x < k2p52 ? (x + k2p52) - k2p52 : x;
}

[[noreturn]] void cast_overflow(const std::string& path, std::uint64_t cell, std::uint32_t bin, double count,
                                std::uint64_t max) {
  throw LimitError(path + ": cell " + std::to_string(cell) + " bin " + std::to_string(bin) + ": count " + fmt(count) +
                       " does not fit the tensor dtype (max " + std::to_string(max) + ")",
                   path, "tensor cast");
}

// The cast of one cell's counts of bins [range.lo, range.hi) (spec §5.3 step 5) into the cell's
// `dst`; its other bins are zero.
template <typename T>
void store_counts(std::span<const double> counts, tdigest::BinRange range, std::byte* dst, const std::string& path,
                  std::uint64_t cell) {
  std::memset(dst, 0, range.lo * sizeof(T));
  for (std::size_t b = range.lo; b < range.hi; ++b) {
    if constexpr (std::is_same_v<T, float>) {
      store_le<float>(dst + b * sizeof(T), static_cast<float>(counts[b]));
    } else {
      const double r = round_half_even(counts[b]);
      if (!(r <= static_cast<double>(std::numeric_limits<T>::max())))
        cast_overflow(path, cell, static_cast<std::uint32_t>(b), counts[b], std::numeric_limits<T>::max());
      store_le<T>(dst + b * sizeof(T), static_cast<T>(r));
    }
  }
  std::memset(dst + range.hi * sizeof(T), 0, (counts.size() - range.hi) * sizeof(T));
}

// The tensor bytes computed before they are handed to the sink (at least two blocks per core).
constexpr std::uint64_t kTensorBytesInFlight = std::uint64_t{128} << 20;

struct BlockContext {
  const RaggedField* field;
  const TensorOptions* options;
  const Occupancy* occupancy;
  int block_depth;  // d_b
  int chunk_depth;  // log4 C
};

// Tensor blocks whose storage a sink left behind, kept for the process's next read_tensors (see
// core/kept.hpp): up to kTensorBytesInFlight of tensors that would otherwise be faulted in anew.
Kept<std::vector<TensorBlock>>& kept_blocks() {
  static Kept<std::vector<TensorBlock>> kept(1);
  return kept;
}

// Computes `block` into `out` (all but its id, see set_block_id), reusing whatever storage `out`
// holds: a recycled block's tensor is overwritten cell by cell, never cleared whole.
void compute_block(const BlockContext& ctx, const BlockView& block, bool inner_parallel, TensorBlock& out) {
  const TensorOptions& o = *ctx.options;
  const std::string& path = ctx.field->payload().path();
  const int d = ctx.block_depth;
  const std::uint64_t cells = morton::pow4(d);

  // 1. decode and check every populated cell's digest (one pass over its bytes), its total weight
  // and its two quantiles (one walk). Digests are decoded into per-thread buffers (again, without
  // the checks, in step 4: re-reading the float32 rows costs less than keeping float64 copies of
  // a block's digests), so a block costs no allocation per cell.
  struct Cell {
    std::uint64_t local;
    std::span<const std::byte> payload;
    double lo = 0, hi = 0, total = 0;
  };
  std::vector<Cell> populated;
  for (const auto& chunk : block.chunks)
    for (std::uint64_t r = 0; r < chunk.cells.size(); ++r)
      if (!chunk.cells[r].empty()) populated.push_back({chunk.start - block.start + r, chunk.cells[r]});
  const auto for_cells = [&](const auto& fn) {
    if (inner_parallel) detail::parallel_for_each(o.threads, populated.size(), fn);
    else
      for (std::size_t i = 0; i < populated.size(); ++i) fn(i);
  };
  for_cells([&](std::size_t i) {
    thread_local tdigest::Digest d;
    Cell& c = populated[i];
    try {
      tdigest::decode_checked_into(c.payload, path, d);
    } catch (const FormatError& e) {
      const std::string where = path + " cell " + std::to_string(block.start + c.local);
      throw FormatError(where + ": " + e.what(), path, where);
    }
    c.total = tdigest::pairwise_sum(d.weights);
    const auto q = tdigest::quantiles(d, o.bottom, o.top, c.total);
    c.lo = q.a;
    c.hi = q.b;
  });

  // 2. the block-wide z-window
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Cell& c : populated) {
    if (!std::isfinite(c.lo) || !std::isfinite(c.hi)) continue;
    lo = std::min(lo, c.lo);
    hi = std::max(hi, c.hi);
  }
  const std::string where = path + " block at cell " + std::to_string(block.start);
  if (!std::isfinite(lo))
    throw FormatError(where + ": no cell has finite quantiles; no z-window", path, "tensor window");
  const double z_lo = std::floor(lo), z_hi = std::ceil(hi);
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (std::fabs(z_lo) >= kExact || std::fabs(z_hi) >= kExact)
    throw LimitError(where + ": z-window [" + fmt(z_lo) + ", " + fmt(z_hi) + "] is beyond 2^53", path, "tensor window");
  // 3. the fit policy
  const Window w = fit_window(o, z_lo, z_hi, where);

  out.start = block.start;
  out.side = std::uint32_t{1} << d;
  out.n_bins = w.n_bins;
  out.offset = w.z_lo;
  out.gain = w.res;
  out.dtype = o.dtype;
  out.populated = out.observed_empty = 0;
  out.weight_in_window = 0;
  const std::size_t item = item_size(o.dtype);
  const std::size_t cell_bytes = static_cast<std::size_t>(w.n_bins) * item;
  // A new buffer is zero-filled by resize; a recycled one is cleared below, only where no digest
  // lands (populated cells are overwritten whole).
  const bool zero_filled = out.tensor.empty();
  out.tensor.resize(checked_size(cells * cell_bytes, "tensor block"));
  out.mask.assign(checked_size(cells, "mask"), 0);

  // 7. the mask base from exact occupancy
  OccupancyCursor occupancy(*ctx.occupancy);
  for (std::uint64_t r = 0; r < cells; ++r) {
    if (occupancy.observed(block.morton[r])) {
      const auto rc = morton::rank_to_rowcol(r);
      out.mask[static_cast<std::size_t>(rc.row) * out.side + rc.col] = 1;
    }
  }

  // 4–6. rasterize, cast, place (the block's cells share one set of bin edges)
  std::vector<double> sums(populated.size(), 0.0);
  const std::vector<double> edges = tdigest::bin_edges(w.z_lo, w.res, w.n_bins);
  for_cells([&](std::size_t i) {
    const Cell& c = populated[i];
    thread_local tdigest::Digest d;
    thread_local std::vector<double> counts, scratch;
    tdigest::decode_into(c.payload, path, d);
    counts.resize(w.n_bins);
    // Only the bins the digest reaches are computed (most cells cover a small part of the
    // block's window); the others are +0.0, which leaves the sum as it is and casts to zero bytes.
    const auto range = tdigest::rasterize_range(d, c.total, edges, counts, scratch);
    const auto rc = morton::rank_to_rowcol(c.local);
    const std::size_t at = static_cast<std::size_t>(rc.row) * out.side + rc.col;
    std::byte* dst = out.tensor.data() + at * cell_bytes;
    const std::uint64_t cell = block.start + c.local;
    double sum = 0;
    for (std::size_t b = range.lo; b < range.hi; ++b) sum += counts[b];
    switch (o.dtype) {
      case TensorDType::U16: store_counts<std::uint16_t>(counts, range, dst, path, cell); break;
      case TensorDType::U32: store_counts<std::uint32_t>(counts, range, dst, path, cell); break;
      case TensorDType::F32: store_counts<float>(counts, range, dst, path, cell); break;
    }
    sums[i] = sum;
  });
  for (std::size_t i = 0; i < populated.size(); ++i) {
    const auto rc = morton::rank_to_rowcol(populated[i].local);
    out.mask[static_cast<std::size_t>(rc.row) * out.side + rc.col] = 2;
    out.weight_in_window += sums[i];
  }
  if (!zero_filled)
    for (std::size_t at = 0; at < out.mask.size(); ++at)
      if (out.mask[at] != 2) std::memset(out.tensor.data() + at * cell_bytes, 0, cell_bytes);
  for (const std::uint8_t m : out.mask) {
    out.populated += m == 2;
    out.observed_empty += m == 1;
  }
}

// The block id: the common ancestor at the block order of its written words. A block of one read
// chunk has the chunk id the sweep derived from the same words (and checked).
void set_block_id(const BlockContext& ctx, const BlockView& block, TensorBlock& out) {
  const int d = ctx.block_depth;
  if (d == ctx.chunk_depth) {
    out.morton = block.chunks.front().chunk_id;
    out.order = morton::order_of(out.morton);
    return;
  }
  std::optional<std::uint64_t> id;
  for (const std::uint64_t word : block.morton) {
    if (word == 0) continue;
    const std::uint64_t a = morton::clip(word, morton::order_of(word) - d);
    if (id && *id != a) {
      const std::string& path = ctx.field->payload().path();
      throw FormatError(path + " block at cell " + std::to_string(block.start) +
                            ": morton words under different order-" + std::to_string(morton::order_of(word) - d) +
                            " ancestors: the cells axis is not nested",
                        path, "morton");
    }
    id = a;
  }
  out.morton = *id;  // a populated block always has written words (checked by the sweep)
  out.order = morton::order_of(*id);
}

}  // namespace

void RaggedField::read_tensors(const TensorOptions& o, const std::function<void(TensorBlock&&)>& sink) const {
  if (o.n_bins < 1 || o.n_bins > (1u << 20)) throw UsageError("read_tensors: n_bins must be in 1..2^20");
  if (!std::isfinite(o.resolution) || !(o.resolution > 0))
    throw UsageError("read_tensors: resolution must be finite and > 0");
  if (!(o.bottom >= 0 && o.bottom <= o.top && o.top <= 1))
    throw UsageError("read_tensors: need 0 <= bottom <= top <= 1");
  if (!payload_.element().is_tdigest())
    throw UsageError(payload_.path() + ": read_tensors needs a t-digest element (float32 [-1, 2]), not " +
                     payload_.element().dtype_name);
  const int depth = detail::chunk_depth(payload_);
  const zarr::Array& morton = morton_array();
  if (o.subtree) {
    const auto info = morton::check(*o.subtree, "subtree", morton::Source::User);
    if (info.point)
      throw UsageError("subtree: " + std::to_string(*o.subtree) + " is a point word; a subtree needs an area word");
  }
  if (payload_.weights() == Weights::Flux && o.dtype != TensorDType::F32 && o.warn)
    o.warn({"flux_integer_cast",
            payload_.path() + ": weights are flux; an integer tensor dtype discards the fractional counts"});

  const auto stamp = hive::read_commit_stamp(*store_);
  const bool occupancy_declared =
      stamp && stamp->coverage.present && stamp->coverage.encoding != hive::CoverageEnvelope::Encoding::BoxOnly;
  detail::MortonCache cache;
  std::optional<CellsAxis> axis;
  if (o.subtree || o.block_order || occupancy_declared) {
    axis = detail::read_axis(payload_, morton, cache);
    if (!axis) return;  // an empty store yields nothing
  }
  const Occupancy occupancy = axis ? read_occupancy(*store_, *axis) : Occupancy{};

  std::optional<detail::CellSpan> span;
  int floor_order = 0;
  if (o.subtree) {
    span = detail::subtree_span(*axis, *o.subtree);
    if (span->empty()) {
      if (o.warn)
        o.warn({"subtree_disjoint", "subtree " + morton::to_decimal(*o.subtree) +
                                        " is disjoint from the cells axis of " + payload_.path()});
      return;
    }
    const std::uint64_t len = span->end - span->begin;
    if (len < axis->chunk_cells)
      throw UsageError(payload_.path() + ": subtree " + morton::to_decimal(*o.subtree) +
                       " is smaller than one read chunk; read_tensors emits whole read chunks (use read_cell or the "
                       "per-cell readers)");
    floor_order = axis->cell_order - *morton::log4_exact(len);
  }
  int block_depth = depth;
  if (o.block_order) {
    const int b = *o.block_order;
    if (b < floor_order || b > axis->chunk_order)
      throw UsageError(payload_.path() + ": block_order " + std::to_string(b) + " outside [" +
                       std::to_string(floor_order) + ", " + std::to_string(axis->chunk_order) + "]");
    block_depth = axis->cell_order - b;
    if (payload_.size() % morton::pow4(block_depth) != 0)
      throw UsageError(payload_.path() + ": block_order " + std::to_string(b) + ": the axis of " +
                       std::to_string(payload_.size()) + " cells is not a whole number of order-" + std::to_string(b) +
                       " blocks");
  }
  const std::uint64_t block_cells = morton::pow4(block_depth);
  {
    const auto bytes = mul_u64(block_cells, o.n_bins);
    const auto total = bytes ? mul_u64(*bytes, item_size(o.dtype)) : std::nullopt;
    if (!total || *total > o.max_block_bytes)
      throw LimitError(payload_.path() + ": a block of " + std::to_string(block_cells) + " cells × " +
                           std::to_string(o.n_bins) + " bins needs " +
                           (total ? std::to_string(*total) : std::string("more than 2^64")) +
                           " bytes, above max_block_bytes " + std::to_string(o.max_block_bytes),
                       payload_.path(), "read_tensors");
  }

  const BlockContext ctx{this, &o, &occupancy, block_depth, depth};
  const std::uint64_t block_bytes = block_cells * o.n_bins * item_size(o.dtype);
  detail::SweepRequest req{&payload_.array(), &morton, span, o.threads, &cache, {}};
  // The sink may move a block's vectors out; whatever storage it leaves in the block is recycled
  // for a later one, so a sink that only looks at its blocks costs no allocation (and no page
  // faults) per block.

  // Blocks of one read chunk: each is computed by the worker that decoded its chunk, while the
  // chunk's bytes are still in that core's cache, into the slot of the chunk in its batch; the
  // sweep rethrows a block's error after checking the chunk's words. The batch's blocks then go
  // to the sink in order.
  const std::size_t batch_chunks = detail::batch_chunks(o.threads);
  if (block_depth == depth && batch_chunks * block_bytes <= kTensorBytesInFlight) {
    KeptLease<std::vector<TensorBlock>> lease(kept_blocks());
    std::vector<TensorBlock>& slots = *lease;
    if (slots.size() < batch_chunks) slots.resize(batch_chunks);
    req.task = [&](const detail::PopulatedChunk& chunk, std::span<const std::uint64_t> words) {
      thread_local std::vector<std::uint64_t> padded;  // a chunk cut short by the axis end
      if (words.size() < block_cells) {
        padded.assign(block_cells, 0);
        std::copy(words.begin(), words.end(), padded.begin());
        words = padded;
      }
      compute_block(ctx, BlockView{chunk.start, words, {&chunk, 1}}, false, slots[chunk.slot]);
    };
    detail::sweep(req, [&](detail::SweepBatch& batch) {
      for (const detail::PopulatedChunk& chunk : batch.chunks) {
        TensorBlock& block = slots[chunk.slot];
        set_block_id(ctx, BlockView{chunk.start, {}, {&chunk, 1}}, block);
        sink(std::move(block));
      }
    });
    return;
  }

  // Blocks of several read chunks (or too large to hold a batch of): assembled across batches,
  // then computed a group at a time and handed over in order. A group gives every core several
  // blocks (blocks differ widely in work, and the group ends at a barrier) while the tensors in
  // flight stay within kTensorBytesInFlight.
  const bool blocks_span_objects = block_cells > payload_.array().object_shape()[0];
  std::optional<PendingBlock> current;
  std::vector<PendingBlock> complete;
  const auto flush = [&] {
    if (current && !current->chunks.empty()) {
      if (blocks_span_objects) {
        // The block's words come from several objects, some possibly without payload: read them whole.
        const auto bytes = morton.read_box({{current->start, current->start + block_cells}});
        std::memcpy(current->morton.data(), bytes.data(), bytes.size());
      }
      complete.push_back(std::move(*current));
    }
    current.reset();
  };
  const std::size_t cores = o.threads ? o.threads : static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  const std::size_t group =
      static_cast<std::size_t>(std::max<std::uint64_t>(2 * cores, kTensorBytesInFlight / block_bytes));
  KeptLease<std::vector<TensorBlock>> lease(kept_blocks());
  std::vector<TensorBlock>& recycled = *lease;
  const auto emit = [&] {
    const auto view = [&](std::size_t i) {
      return BlockView{complete[i].start, complete[i].morton, complete[i].chunks};
    };
    for (std::size_t first = 0; first < complete.size(); first += group) {
      const std::size_t n = std::min(group, complete.size() - first);
      if (recycled.size() < n) recycled.resize(n);
      if (n == 1) compute_block(ctx, view(first), true, recycled[0]);
      else
        detail::parallel_for_each(o.threads, n,
                                  [&](std::size_t i) { compute_block(ctx, view(first + i), false, recycled[i]); });
      for (std::size_t i = 0; i < n; ++i) {
        set_block_id(ctx, view(first + i), recycled[i]);
        sink(std::move(recycled[i]));
      }
    }
    complete.clear();
  };

  detail::sweep(req, [&](detail::SweepBatch& batch) {
    const std::uint64_t end = batch.begin + batch.morton.size();
    std::size_t next_chunk = 0;
    for (std::uint64_t b = batch.begin / block_cells; b * block_cells < end; ++b) {
      const std::uint64_t b_start = b * block_cells;
      if (!current || current->start != b_start) {
        flush();
        current.emplace();
        current->start = b_start;
        current->morton.assign(block_cells, 0);
      }
      const std::uint64_t lo = std::max(b_start, batch.begin), hi = std::min(b_start + block_cells, end);
      std::copy(batch.morton.begin() + static_cast<std::ptrdiff_t>(lo - batch.begin),
                batch.morton.begin() + static_cast<std::ptrdiff_t>(hi - batch.begin),
                current->morton.begin() + static_cast<std::ptrdiff_t>(lo - b_start));
      while (next_chunk < batch.chunks.size() && batch.chunks[next_chunk].start < b_start + block_cells)
        current->chunks.push_back(std::move(batch.chunks[next_chunk++]));
      if (hi == b_start + block_cells) flush();
    }
    if (!complete.empty()) emit();
  });
  flush();
  if (!complete.empty()) emit();
}

}  // namespace tessera::ragged
