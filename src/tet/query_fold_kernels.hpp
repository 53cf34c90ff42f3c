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

#include "query_internal.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::tet::qe::fold {

// ---- accumulators ------------------------------------------------------------------------------
// Each has a Cell (identity by default construction), add(cell, x, fiber_index), a run form for
// runs that stay in one cell, and merge(a, b) for b folded after a.

template <typename T>
inline double at(const std::byte* p, std::uint64_t j, std::uint64_t stride) {
  constexpr std::size_t es = std::is_same_v<T, F16> ? 2 : sizeof(T);
  return load_f64<T>(p + j * stride * es);
}

enum class SumKind { Plain, Abs, Square };

template <SumKind K>
struct SumAcc {
  struct Cell {
    double s = 0;
  };
  static double term(double x) {
    if constexpr (K == SumKind::Abs) return std::fabs(x);
    else if constexpr (K == SumKind::Square) return x * x;
    else return x;
  }
  static void add(Cell& c, double x, std::uint64_t) { c.s += term(x); }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t, std::uint64_t) {
    // Four independent lanes: faster than one dependency chain, and a fixed order.
    double l0 = 0, l1 = 0, l2 = 0, l3 = 0;
    std::uint64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      l0 += term(at<T>(p, j, stride));
      l1 += term(at<T>(p, j + 1, stride));
      l2 += term(at<T>(p, j + 2, stride));
      l3 += term(at<T>(p, j + 3, stride));
    }
    for (; j < n; ++j) l0 += term(at<T>(p, j, stride));
    c.s += (l0 + l1) + (l2 + l3);
  }
  static void merge(Cell& a, const Cell& b) { a.s += b.s; }
};

struct ProdAcc {
  struct Cell {
    double p = 1;
  };
  static void add(Cell& c, double x, std::uint64_t) { c.p *= x; }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t, std::uint64_t) {
    for (std::uint64_t j = 0; j < n; ++j) c.p *= at<T>(p, j, stride);
  }
  static void merge(Cell& a, const Cell& b) { a.p *= b.p; }
};

// Mean and M2 (Chan et al.): two passes inside a run, pairwise merges between runs and units.
template <bool SkipNan>
struct VarAcc {
  struct Cell {
    double n = 0, mean = 0, m2 = 0;
  };
  static void add(Cell& c, double x, std::uint64_t) {
    if (SkipNan && std::isnan(x)) return;
    c.n += 1;
    const double d = x - c.mean;
    c.mean += d / c.n;
    c.m2 += d * (x - c.mean);
  }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t, std::uint64_t) {
    Cell r;
    double s = 0;
    for (std::uint64_t j = 0; j < n; ++j) {
      const double x = at<T>(p, j, stride);
      if (SkipNan && std::isnan(x)) continue;
      s += x;
      r.n += 1;
    }
    if (r.n == 0) return;
    r.mean = s / r.n;
    for (std::uint64_t j = 0; j < n; ++j) {
      const double x = at<T>(p, j, stride);
      if (SkipNan && std::isnan(x)) continue;
      r.m2 += (x - r.mean) * (x - r.mean);
    }
    merge(c, r);
  }
  static void merge(Cell& a, const Cell& b) {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const double n = a.n + b.n;
    const double d = b.mean - a.mean;
    a.mean += d * (b.n / n);
    a.m2 += b.m2 + d * d * (a.n * b.n / n);
    a.n = n;
  }
};

// Extreme value with the first index; NaN wins (numpy semantics, first NaN's index).
template <bool IsMax>
struct ExtremeAcc {
  struct Cell {
    double v = 0;
    std::uint64_t idx = 0;
    bool seen = false;
    bool nan = false;
    std::uint64_t nan_idx = 0;
  };
  static void add(Cell& c, double x, std::uint64_t i) {
    if (std::isnan(x)) {
      if (!c.nan || i < c.nan_idx) c.nan_idx = i;
      c.nan = true;
      return;
    }
    const bool better = !c.seen || (IsMax ? x > c.v : x < c.v) || (x == c.v && i < c.idx);
    if (better) {
      c.v = x;
      c.idx = i;
      c.seen = true;
    }
  }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t fiber,
                      std::uint64_t fiber_step) {
    for (std::uint64_t j = 0; j < n; ++j) add(c, at<T>(p, j, stride), fiber + j * fiber_step);
  }
  static void merge(Cell& a, const Cell& b) {
    if (b.nan && (!a.nan || b.nan_idx < a.nan_idx)) {
      a.nan = true;
      a.nan_idx = b.nan_idx;
    }
    if (b.seen) add_value(a, b.v, b.idx);
  }
  static void add_value(Cell& c, double x, std::uint64_t i) {
    const bool better = !c.seen || (IsMax ? x > c.v : x < c.v) || (x == c.v && i < c.idx);
    if (better) {
      c.v = x;
      c.idx = i;
      c.seen = true;
    }
  }
};

enum class CountKind { Nan, Inf, NonFinite, Fill, None };

template <CountKind K>
struct CountAcc {
  struct Cell {
    std::uint64_t c = 0;
  };
  double fill = 0;  // NullCount: the resolved fill value
  bool hit(double x) const {
    if constexpr (K == CountKind::Nan) return std::isnan(x);
    else if constexpr (K == CountKind::Inf) return std::isinf(x);
    else if constexpr (K == CountKind::NonFinite) return !std::isfinite(x);
    else if constexpr (K == CountKind::Fill)
      return std::isnan(fill) ? std::isnan(x) : std::memcmp(&x, &fill, sizeof x) == 0;
    else return false;
  }
  void add(Cell& c, double x, std::uint64_t) const { c.c += hit(x) ? 1 : 0; }
  template <typename T>
  void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t, std::uint64_t) const {
    if constexpr (K == CountKind::None) return;
    if constexpr (!std::is_floating_point_v<T> && !std::is_same_v<T, F16> && K != CountKind::Fill) return;  // integers are finite
    for (std::uint64_t j = 0; j < n; ++j) c.c += hit(at<T>(p, j, stride)) ? 1 : 0;
  }
  static void merge(Cell& a, const Cell& b) { a.c += b.c; }
};

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

std::vector<Group> make_groups(const Plan& plan, const Reduction& red);
// Units per group, fixed by the plan alone so results never depend on the thread count.
std::vector<Unit> make_units(const std::vector<Group>& groups);
Json f64_array(const std::vector<double>& v);

template <typename Acc, typename T>
void fold_run(const Acc& acc, typename Acc::Cell* cells, const Run& r) {
  constexpr std::size_t es = std::is_same_v<T, F16> ? 2 : sizeof(T);
  if (r.cell_step == 0) {
    acc.template add_run<T>(cells[r.cell], r.data, r.n, r.stride, r.fiber, r.fiber_step);
  } else {
    for (std::uint64_t j = 0; j < r.n; ++j)
      acc.add(cells[r.cell + j * r.cell_step], load_f64<T>(r.data + j * r.stride * es), r.fiber + j * r.fiber_step);
  }
}

// Folds the plan into one Cell per output cell (row-major over the kept shape).
template <typename Acc, typename T>
std::vector<typename Acc::Cell> fold_cells(const Plan& plan, const Reduction& red, const FoldPolicy& policy,
                                           const ExecContext& ctx, PreviewBuffer& preview, const Acc& acc = Acc{}) {
  using Cell = typename Acc::Cell;
  const std::vector<Group> groups = make_groups(plan, red);
  const std::vector<Unit> units = make_units(groups);
  std::vector<std::vector<Cell>> partial(units.size());

  auto run_unit = [&](std::size_t u) {
    const Unit& unit = units[u];
    const Group& g = groups[unit.group];
    std::vector<Cell> cells(checked_size(g.cells));
    thread_local std::vector<std::byte> scratch;
    for (std::size_t m = unit.begin; m < unit.end; ++m) {
      const std::size_t k = g.chunks[m];
      const TileWalk w = tile_walk(plan, k);
      const std::byte* tile = tile_bytes(plan, k, scratch);
      for_each_run(plan, w, tile, red, g.frame, [&](const Run& r) {
        preview.take(r);
        fold_run<Acc, T>(acc, cells.data(), r);
      });
    }
    partial[u] = std::move(cells);
  };

  if (policy.parallel) {
    for_chunks(units.size(), true, ctx.threads, run_unit);
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

  std::vector<Cell> out(checked_size(red.cells));
  const std::size_t nd = red.rank;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const Group& g = groups[units[u].group];
    // Local cell l of the group maps to the global cell of its kept coordinates.
    std::vector<std::uint64_t> idx(g.shape.size(), 0);
    for (std::uint64_t l = 0; l < g.cells; ++l) {
      std::uint64_t global = 0;
      for (std::size_t d = 0, kd = 0; d < nd; ++d) {
        if (red.reduced[d]) continue;
        global += (g.frame.origin[d] + idx[kd]) * red.cell_stride[d];
        ++kd;
      }
      Acc::merge(out[global], partial[u][l]);
      for (std::size_t kd = g.shape.size(); kd-- > 0;) {
        if (++idx[kd] < g.shape[kd]) break;
        idx[kd] = 0;
      }
    }
    partial[u] = {};
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
    Json a = Json::array();
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
      return fold_to_fields<SumAcc<SumKind::Plain>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.s); });
    case QueryOp::Mean:
      return fold_to_fields<SumAcc<SumKind::Plain>, T>(plan, red, scalar, sk, pk, ctx, res, [n](auto& c) { return Json(c.s / n); });
    case QueryOp::NormL1:
      return fold_to_fields<SumAcc<SumKind::Abs>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.s); });
    case QueryOp::NormL2:
      return fold_to_fields<SumAcc<SumKind::Square>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(std::sqrt(c.s)); });
    case QueryOp::Product:
      return fold_to_fields<ProdAcc, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.p); });
    case QueryOp::Var:
      return fold_to_fields<VarAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.m2 / c.n); });
    case QueryOp::Std:
      return fold_to_fields<VarAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(std::sqrt(c.m2 / c.n)); });
    case QueryOp::NanMean:
      return fold_to_fields<VarAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res,
                                             [&](auto& c) { return Json(nan_or(c.n == 0, c.mean)); });
    case QueryOp::NanStd:
      return fold_to_fields<VarAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res,
                                             [&](auto& c) { return Json(nan_or(c.n == 0, std::sqrt(c.m2 / c.n))); });
    case QueryOp::Min:
      return fold_to_fields<ExtremeAcc<false>, T>(plan, red, scalar, sk, pk, ctx, res, [&](auto& c) { return Json(nan_or(c.nan, c.v)); });
    case QueryOp::Max:
      return fold_to_fields<ExtremeAcc<true>, T>(plan, red, scalar, sk, pk, ctx, res, [&](auto& c) { return Json(nan_or(c.nan, c.v)); });
    case QueryOp::ArgMin:
      return fold_to_fields<ExtremeAcc<false>, T>(plan, red, scalar, "operation_argmin_index", "operation_reduced_argmin", ctx,
                                                  res, [](auto& c) { return Json(c.nan ? c.nan_idx : c.idx); });
    case QueryOp::ArgMax:
      return fold_to_fields<ExtremeAcc<true>, T>(plan, red, scalar, "operation_argmax_index", "operation_reduced_argmax", ctx,
                                                 res, [](auto& c) { return Json(c.nan ? c.nan_idx : c.idx); });
    case QueryOp::Count:
      fold_cells<CountAcc<CountKind::None>, T>(plan, red, res.policy, ctx, res.preview);
      if (!scalar) res.fields.emplace_back(pk, f64_array(std::vector<double>(checked_size(red.cells), n)));
      return;
    case QueryOp::AllFinite:
      return fold_to_fields<CountAcc<CountKind::NonFinite>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.c == 0); });
    case QueryOp::AnyNan:
      return fold_to_fields<CountAcc<CountKind::Nan>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.c > 0); });
    case QueryOp::AnyInf:
      return fold_to_fields<CountAcc<CountKind::Inf>, T>(plan, red, scalar, sk, pk, ctx, res, [](auto& c) { return Json(c.c > 0); });
    case QueryOp::NanCount:
      return fold_to_fields<CountAcc<CountKind::Nan>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(static_cast<double>(c.c)); });
    case QueryOp::InfCount:
      return fold_to_fields<CountAcc<CountKind::Inf>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                         [](auto& c) { return Json(static_cast<double>(c.c)); });
    case QueryOp::NullCount: {
      CountAcc<CountKind::Fill> acc;
      acc.fill = fill;
      return fold_to_fields<CountAcc<CountKind::Fill>, T>(plan, red, scalar, sk, pk, ctx, res,
                                                          [](auto& c) { return Json(static_cast<double>(c.c)); }, acc);
    }
    default:
      throw UsageError("validation: operation `" + key + "` is not a streaming fold");
  }
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
      each(fold_cells<VarAcc<false>, T>(plan, red, policy, ctx, none), [](auto& c) { return c.mean; },
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
      each(fold_cells<ExtremeAcc<false>, T>(plan, red, policy, ctx, none), [&](auto& c) { return nan_or(c.nan, c.v); }, zero);
      break;
    case CellStat::Max:
      each(fold_cells<ExtremeAcc<true>, T>(plan, red, policy, ctx, none), [&](auto& c) { return nan_or(c.nan, c.v); }, zero);
      break;
    case CellStat::NormL1:
      each(fold_cells<SumAcc<SumKind::Abs>, T>(plan, red, policy, ctx, none), [](auto& c) { return c.s; }, zero);
      break;
    case CellStat::NormL2:
      each(fold_cells<SumAcc<SumKind::Square>, T>(plan, red, policy, ctx, none), [](auto& c) { return std::sqrt(c.s); }, zero);
      break;
  }
  return out;
}

// Explicit instantiation declarations/definitions, one per element type.
#define TESSERA_FOLD_INSTANTIATE(EXTERN, T)                                                                      \
  EXTERN template void dispatch<T>(const Plan&, const QueryOperation*, const Reduction&, bool, double,          \
                                   const ExecContext&, ExecResult&);                                            \
  EXTERN template StatCells stats_for<T>(const Plan&, const Reduction&, CellStat, const FoldPolicy&,            \
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
