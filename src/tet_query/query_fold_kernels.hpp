// The streaming-fold kernels of query_fold.cpp, as templates over the element type. They are
// instantiated once per dtype in query_fold_{float,int,uint}.cpp (the `TESSERA_FOLD_DTYPES` list), so
// the ~130 accumulator × dtype instantiations compile in parallel translation units instead of one
// that dominates the build.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "query_fold_acc.hpp"
#include "query_internal.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::tet::qe::fold {

// ---- the scheduler -----------------------------------------------------------------------------

struct Group {
  CellFrame frame;                   // local cell frame over the group's kept sub-box
  std::vector<std::uint64_t> shape;  // kept sub-box extents (kept axes only)
  std::uint64_t cells = 1;
  std::vector<std::size_t> chunks;
};

struct Unit {
  std::size_t group = 0;
  std::size_t begin = 0, end = 0;  // range of the group's chunk list
};

// A block of a group's output cells: kept axes with `cut` set are restricted to indices
// [lo, lo + n) of the group's kept sub-box in any tile walk of the group; the others stay whole.
struct CellBlock {
  std::array<std::uint64_t, kMaxRank> lo{}, n{};
  std::array<bool, kMaxRank> cut{};
};
// Cuts a group's cells (kept extents from `w`, any walk of the group) into blocks of about
// 256 KiB of accumulators, so the chunks of a unit fold into a block that stays in cache; one
// uncut block when the whole group fits. Restricting a walk to a block never reorders the
// elements of one cell, so blocked and unblocked folds give identical bits.
std::vector<CellBlock> make_blocks(const Reduction& red, const TileWalk& w, std::size_t cell_bytes);
TileWalk restrict_walk(TileWalk w, const CellBlock& b);
// The global cell of the first local cell of row `row` of a group (rows run along its innermost
// kept axis, contiguous in the group's and in the global cell order).
std::uint64_t group_row_base(const Group& g, const Reduction& red, std::uint64_t row);

std::vector<Group> make_groups(const Plan& plan, const Reduction& red);
// Units per group, fixed by the plan alone so results never depend on the thread count.
std::vector<Unit> make_units(const std::vector<Group>& groups);
Json f64_array(const std::vector<double>& v);

template <typename Acc, typename T>
void fold_run(const Acc& acc, typename Acc::Cell* cells, const Run& r) {
  constexpr std::size_t es = std::is_same_v<T, F16> ? 2 : sizeof(T);
  if (r.cell_step == 0) {
    acc.template add_run<T>(cells[r.cell], r.data, r.n, r.stride, r.fiber, r.fiber_step);
  } else if constexpr (requires { acc.template add_cells<T>(cells, r.data, r.n, r.stride, r.cell_step); }) {
    acc.template add_cells<T>(cells + r.cell, r.data, r.n, r.stride, r.cell_step);
  } else {
    for (std::uint64_t j = 0; j < r.n; ++j)
      acc.add(cells[r.cell + j * r.cell_step], load_f64<T>(r.data + j * r.stride * es), r.fiber + j * r.fiber_step);
  }
}

// Folds the plan into one Cell per output cell (row-major over the kept shape).
//
// Work comes in two shapes. A unit folds its chunk range into a partial per group cell (block by
// block, so the accumulators a tile feeds stay in cache); the partials merge in plan order at the
// end. A group whose cells span several blocks and whose chunks are raw views of an in-core map
// runs instead as one task per block: the task folds each unit's chunks, restricted to the block,
// into a block-sized buffer and merges it straight into `out`, unit after unit — no partial of the
// whole group is ever allocated. Both give every cell the same additions in the same order: its
// elements in chunk then tile order within a unit, units merged in plan order into the identity.
template <typename Acc, typename T>
std::vector<typename Acc::Cell> fold_cells(const Plan& plan, const Reduction& red, const FoldPolicy& policy,
                                           const ExecContext& ctx, PreviewBuffer& preview, const Acc& acc = Acc{}) {
  using Cell = typename Acc::Cell;
  const std::vector<Group> groups = make_groups(plan, red);
  const std::vector<Unit> units = make_units(groups);
  std::vector<Cell> out(checked_size(red.cells));
  std::vector<std::vector<Cell>> partial(units.size());

  std::vector<std::vector<CellBlock>> blocks(groups.size());
  std::vector<std::pair<std::size_t, std::size_t>> group_units(groups.size());  // [first, last) unit
  std::vector<char> direct(groups.size(), 0);
  for (std::size_t u = 0; u < units.size(); ++u) {  // a group's units are consecutive
    auto& range = group_units[units[u].group];
    if (range.second == 0) range.first = u;
    range.second = u + 1;
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    blocks[gi] = make_blocks(red, tile_walk(plan, g.chunks.front()), sizeof(Cell));
    direct[gi] = policy.parallel && policy.io_regime == "in_core" && blocks[gi].size() > 1 &&
                 std::all_of(g.chunks.begin(), g.chunks.end(),
                             [&](std::size_t k) { return tile_view(plan, k) != nullptr || reads_raw_pieces(plan, k); });
  }

  auto fold_tile = [&](Cell* cells, const CellFrame& frame, const TileWalk& w, const std::byte* tile) {
    // Runs that each fold into one cell are summed two at a time where the accumulator can
    // (add_run_pair); the cells still receive the run sums in walk order.
    const Run* pending = nullptr;
    Run held;
    for_each_run(plan, w, tile, red, frame, [&](const Run& r) {
      preview.take(r);
      if constexpr (requires { Acc::template add_run_pair<T>(cells[0], r.data, cells[0], r.data, r.n, r.stride); }) {
        if (r.cell_step == 0) {
          if (pending && pending->n == r.n && pending->stride == r.stride) {
            Acc::template add_run_pair<T>(cells[pending->cell], pending->data, cells[r.cell], r.data, r.n, r.stride);
            pending = nullptr;
          } else {
            if (pending) fold_run<Acc, T>(acc, cells, *pending);
            held = r;
            pending = &held;
          }
          return;
        }
        if (pending) fold_run<Acc, T>(acc, cells, *pending);
        pending = nullptr;
      }
      fold_run<Acc, T>(acc, cells, r);
    });
    if (pending) fold_run<Acc, T>(acc, cells, *pending);
  };
  // Folds walk `w` of chunk k: from `tile` (a view or a decoded tile), else piece by piece.
  auto fold_walk = [&](Cell* cells, const CellFrame& frame, std::size_t k, const TileWalk& w, const std::byte* tile) {
    if (tile) fold_tile(cells, frame, w, tile);
    else
      for_each_raw_piece(plan, k, w, [&](const TileWalk& pw, const std::byte* p) { fold_tile(cells, frame, pw, p); });
  };
  auto run_unit = [&](std::size_t u) {
    const Unit& unit = units[u];
    const Group& g = groups[unit.group];
    std::vector<Cell> cells(checked_size(g.cells));
    thread_local std::vector<std::byte> scratch;
    for (std::size_t m = unit.begin; m < unit.end; ++m) {
      const std::size_t k = g.chunks[m];
      hint_chunk(plan, k);
      if (m + 1 < unit.end) hint_chunk(plan, g.chunks[m + 1]);
      const TileWalk w = tile_walk(plan, k);
      const std::byte* tile = reads_raw_pieces(plan, k) ? nullptr : tile_bytes(plan, k, scratch);
      for (const CellBlock& b : blocks[unit.group]) fold_walk(cells.data(), g.frame, k, restrict_walk(w, b), tile);
    }
    partial[u] = std::move(cells);
  };
  // Merges `n` partial cells starting at group-local cell `first` into `out`.
  auto merge_into_out = [&](const Group& g, std::uint64_t first, std::uint64_t n, const Cell* src) {
    const std::uint64_t row = g.shape.empty() ? 1 : g.shape.back();
    for (std::uint64_t l = 0; l < n;) {
      const std::uint64_t at = first + l, i = at % row, len = std::min(row - i, n - l);
      Cell* dst = out.data() + group_row_base(g, red, at / row) + i;
      for (std::uint64_t j = 0; j < len; ++j) Acc::merge(dst[j], src[l + j]);
      l += len;
    }
  };
  auto run_block = [&](std::size_t gi, std::size_t bi) {
    const Group& g = groups[gi];
    const CellBlock& b = blocks[gi][bi];
    // The block's cells are a contiguous range of the group's; shift the frame to its first one.
    CellFrame frame = g.frame;
    std::uint64_t first = 0, n = 1;
    for (std::size_t d = 0, kd = 0; d < red.rank; ++d) {
      if (red.reduced[d]) continue;
      if (b.cut[d]) {
        frame.origin[d] += b.lo[d];
        first += b.lo[d] * g.frame.stride[d];
      }
      n *= b.cut[d] ? b.n[d] : g.shape[kd];
      ++kd;
    }
    std::vector<Cell> cells(checked_size(n));
    for (std::size_t u = group_units[gi].first; u < group_units[gi].second; ++u) {
      std::fill(cells.begin(), cells.end(), Cell{});
      for (std::size_t m = units[u].begin; m < units[u].end; ++m) {
        const std::size_t k = g.chunks[m];
        hint_chunk(plan, k);
        fold_walk(cells.data(), frame, k, restrict_walk(tile_walk(plan, k), b), tile_view(plan, k));
      }
      merge_into_out(g, first, n, cells.data());
    }
  };

  if (policy.parallel) {
    struct Task {
      std::size_t group, index;  // a unit (index into `units`) or, for a direct group, a block
    };
    std::vector<Task> tasks;
    for (std::size_t u = 0; u < units.size(); ++u)
      if (!direct[units[u].group]) tasks.push_back({units[u].group, u});
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
      for (std::size_t bi = 0; direct[gi] && bi < blocks[gi].size(); ++bi) tasks.push_back({gi, bi});
    for_chunks(tasks.size(), true, ctx.threads, plan.read_ahead != nullptr, [&](std::size_t t) {
      if (direct[tasks[t].group]) run_block(tasks[t].group, tasks[t].index);
      else run_unit(tasks[t].index);
    });
  } else {
    // Sequential folds visit chunks in ascending payload offset (the linear order on disk).
    std::vector<std::size_t> order(units.size());
    for (std::size_t u = 0; u < order.size(); ++u) order[u] = u;
    auto offset = [&](std::size_t u) {
      const Unit& unit = units[u];
      return plan.file->entry(plan.chunks[groups[unit.group].chunks[unit.begin]].entry).payload_offset;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return offset(a) < offset(b); });
    for (std::size_t u : order) run_unit(u);
  }

  // The units of the other groups merge row by row, each cell taking its partials in plan order.
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    if (direct[gi]) continue;
    const Group& g = groups[gi];
    // Plain variables, not a structured binding: clang before 16 cannot capture bindings in lambdas.
    const std::size_t u0 = group_units[gi].first, u1 = group_units[gi].second;
    const std::uint64_t row = g.shape.empty() ? 1 : g.shape.back();
    for_chunks(checked_size(g.cells / row), policy.parallel && g.cells >= 65536, ctx.threads, false,
               [&](std::size_t r) {
                 for (std::size_t u = u0; u < u1; ++u) merge_into_out(g, r * row, row, partial[u].data() + r * row);
               });
    for (std::size_t u = u0; u < u1; ++u) partial[u] = {};
  }
  return out;
}

// ---- op dispatch ------------------------------------------------------------------------------

template <typename Acc, typename T, typename Finish>
void fold_to_fields(const Plan& plan, const Reduction& red, bool scalar, const std::string& scalar_key,
                    const std::string& partial_key, const ExecContext& ctx, ExecResult& res, Finish finish,
                    const Acc& acc = Acc{}) {
  const auto cells = fold_cells<Acc, T>(plan, red, res.policy, ctx, res.preview, acc);
  if (scalar) {
    res.fields.emplace_back(scalar_key, finish(cells[0]));
  } else {
    // Reserved first: growing a million-element array by doubling moved every element ~20 times.
    Json a = Json::array();
    a.get_ref<Json::array_t&>().reserve(cells.size());
    for (const auto& c : cells) a.push_back(finish(c));
    res.fields.emplace_back(partial_key, std::move(a));
  }
}

template <typename T>
void dispatch(const Plan& plan, const QueryOperation* op, const Reduction& red, bool scalar, double fill,
              const ExecContext& ctx, ExecResult& res) {
  const double n = static_cast<double>(red.fiber_len);
  if (!op) {
    fold_cells<CountAcc<CountKind::None>, T>(plan, red, res.policy, ctx, res.preview);
    return;
  }
  const std::string key(query_op_key(op->op));
  const std::string sk = "operation_" + key, pk = "operation_reduced_" + key;
  auto nan_or = [](bool nan, double v) { return nan ? std::numeric_limits<double>::quiet_NaN() : v; };
  switch (op->op) {
    case QueryOp::Sum:
      return fold_to_fields<SumAcc<SumKind::Plain>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                       [](auto& c) { return Json(c.s); });
    case QueryOp::Mean:
      return fold_to_fields<SumAcc<SumKind::Plain>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                       [n](auto& c) { return Json(c.s / n); });
    case QueryOp::NormL1:
      return fold_to_fields<SumAcc<SumKind::Abs>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                     [](auto& c) { return Json(c.s); });
    case QueryOp::NormL2:
      return fold_to_fields<SumAcc<SumKind::Square>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                        [](auto& c) { return Json(std::sqrt(c.s)); });
    case QueryOp::Product:
      return fold_to_fields<ProdAcc, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.p); });
    case QueryOp::Var:
      return fold_to_fields<VarAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res,
                                              [](auto& c) { return Json(c.m2 / c.n); });
    case QueryOp::Std:
      return fold_to_fields<VarAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res,
                                              [](auto& c) { return Json(std::sqrt(c.m2 / c.n)); });
    case QueryOp::NanMean:
      return fold_to_fields<VarAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res,
                                             [&](auto& c) { return Json(nan_or(c.n == 0, c.mean)); });
    case QueryOp::NanStd:
      return fold_to_fields<VarAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res,
                                             [&](auto& c) { return Json(nan_or(c.n == 0, std::sqrt(c.m2 / c.n))); });
    case QueryOp::Min:
      return fold_to_fields<ExtremeAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                  [&](auto& c) { return Json(nan_or(c.nan, c.v)); });
    case QueryOp::Max:
      return fold_to_fields<ExtremeAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                 [&](auto& c) { return Json(nan_or(c.nan, c.v)); });
    case QueryOp::ArgMin:
      return fold_to_fields<ExtremeAcc<false>, T>(plan, red, scalar, "operation_argmin_index",
                                                  "operation_reduced_argmin", ctx, res,
                                                  [](auto& c) { return Json(c.nan ? c.nan_idx : c.idx); });
    case QueryOp::ArgMax:
      return fold_to_fields<ExtremeAcc<true>, T>(plan, red, scalar, "operation_argmax_index",
                                                 "operation_reduced_argmax", ctx, res,
                                                 [](auto& c) { return Json(c.nan ? c.nan_idx : c.idx); });
    case QueryOp::Count:
      fold_cells<CountAcc<CountKind::None>, T>(plan, red, res.policy, ctx, res.preview);
      if (!scalar) res.fields.emplace_back(pk, f64_array(std::vector<double>(checked_size(red.cells), n)));
      return;
    case QueryOp::AllFinite:
      return fold_to_fields<CountAcc<CountKind::NonFinite>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                               [](auto& c) { return Json(c.c == 0); });
    case QueryOp::AnyNan:
      return fold_to_fields<CountAcc<CountKind::Nan>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(c.c > 0); });
    case QueryOp::AnyInf:
      return fold_to_fields<CountAcc<CountKind::Inf>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(c.c > 0); });
    case QueryOp::NanCount:
      return fold_to_fields<CountAcc<CountKind::Nan>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(static_cast<double>(c.c)); });
    case QueryOp::InfCount:
      return fold_to_fields<CountAcc<CountKind::Inf>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(static_cast<double>(c.c)); });
    case QueryOp::NullCount: {
      CountAcc<CountKind::Fill> acc;
      acc.fill = fill;
      return fold_to_fields<CountAcc<CountKind::Fill>, T>(
          plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(static_cast<double>(c.c)); }, acc);
    }
    case QueryOp::Median:
    case QueryOp::Quantile:
    case QueryOp::Histogram:
    case QueryOp::Covariance:
    case QueryOp::Correlation:
    case QueryOp::Transform: break;
  }
  throw UsageError("validation: operation `" + key + "` is not a streaming fold");
}

// The per-cell statistics of fold_stats for element type T.
template <typename T>
StatCells stats_for(const Plan& plan, const Reduction& red, CellStat stat, const FoldPolicy& policy,
                    const ExecContext& ctx) {
  StatCells out;
  PreviewBuffer none;
  auto each = [&](const auto& cells, auto a, auto b) {
    for (const auto& c : cells) {
      out.a.push_back(a(c));
      out.b.push_back(b(c));
    }
  };
  auto nan_or = [](bool nan, double v) { return nan ? std::numeric_limits<double>::quiet_NaN() : v; };
  auto zero = [](const auto&) { return 0.0; };
  switch (stat) {
    case CellStat::MeanStd:
      each(
          fold_cells<VarAcc<false>, T>(plan, red, policy, ctx, none), [](auto& c) { return c.mean; },
          [](auto& c) { return std::sqrt(c.m2 / c.n); });
      break;
    case CellStat::MinMax: {
      const auto lo = fold_cells<ExtremeAcc<false>, T>(plan, red, policy, ctx, none);
      const auto hi = fold_cells<ExtremeAcc<true>, T>(plan, red, policy, ctx, none);
      for (std::size_t i = 0; i < lo.size(); ++i) {
        out.a.push_back(nan_or(lo[i].nan, lo[i].v));
        out.b.push_back(nan_or(hi[i].nan, hi[i].v));
      }
      break;
    }
    case CellStat::Min:
      each(
          fold_cells<ExtremeAcc<false>, T>(plan, red, policy, ctx, none), [&](auto& c) { return nan_or(c.nan, c.v); },
          zero);
      break;
    case CellStat::Max:
      each(
          fold_cells<ExtremeAcc<true>, T>(plan, red, policy, ctx, none), [&](auto& c) { return nan_or(c.nan, c.v); },
          zero);
      break;
    case CellStat::NormL1:
      each(
          fold_cells<SumAcc<SumKind::Abs>, T>(plan, red, policy, ctx, none), [](auto& c) { return c.s; }, zero);
      break;
    case CellStat::NormL2:
      each(
          fold_cells<SumAcc<SumKind::Square>, T>(plan, red, policy, ctx, none), [](auto& c) { return std::sqrt(c.s); },
          zero);
      break;
  }
  return out;
}

// Explicit instantiation declarations/definitions, one per element type.
#define TESSERA_FOLD_INSTANTIATE(EXTERN, T)                                                            \
  EXTERN template void dispatch<T>(const Plan&, const QueryOperation*, const Reduction&, bool, double, \
                                   const ExecContext&, ExecResult&);                                   \
  EXTERN template StatCells stats_for<T>(const Plan&, const Reduction&, CellStat, const FoldPolicy&,   \
                                         const ExecContext&);
#define TESSERA_FOLD_EXTERN(T) TESSERA_FOLD_INSTANTIATE(extern, T)
TESSERA_FOLD_EXTERN(float)
TESSERA_FOLD_EXTERN(double)
TESSERA_FOLD_EXTERN(F16)
TESSERA_FOLD_EXTERN(std::int16_t)
TESSERA_FOLD_EXTERN(std::int32_t)
TESSERA_FOLD_EXTERN(std::int64_t)
TESSERA_FOLD_EXTERN(std::uint8_t)
TESSERA_FOLD_EXTERN(std::uint16_t)
TESSERA_FOLD_EXTERN(std::uint32_t)
TESSERA_FOLD_EXTERN(std::uint64_t)
#undef TESSERA_FOLD_EXTERN

}  // namespace tessera::tet::qe::fold
