// Tier-C operations (spec tet.md §3.5, §4.2): median, quantile, histogram, covariance and
// correlation. The selection is materialized cell-major in the dataset dtype (each output cell's
// fiber contiguous) — in memory when the logical bytes fit the budget, else in a temporary
// spill file mapped shared (`temp_spill_materialize`, deleted when the op ends) — and each cell
// is then reduced in place. Selection works on the stored values (every dtype promotes to f64
// monotonically), so no f64 copy of the selection is ever made.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "query_internal.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::tet::qe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
using Stored = std::conditional_t<std::is_same_v<T, F16>, std::uint16_t, T>;

template <typename T>
double value_of(Stored<T> v) {
  if constexpr (std::is_same_v<T, F16>) return half_to_double(v);
  else return static_cast<double>(v);
}

template <typename T>
bool less(Stored<T> a, Stored<T> b) {
  if constexpr (std::is_same_v<T, F16>) return half_to_float(a) < half_to_float(b);
  else return a < b;
}

template <typename T>
bool has_nan(const Stored<T>* v, std::uint64_t n) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, F16>) {
    for (std::uint64_t i = 0; i < n; ++i)
      if (std::isnan(value_of<T>(v[i]))) return true;
  }
  return false;
}

// The k-th smallest of v[0..n) (partially reorders v).
template <typename T>
double kth(Stored<T>* v, std::uint64_t n, std::uint64_t k) {
  std::nth_element(v, v + k, v + n, less<T>);
  return value_of<T>(v[k]);
}
// The smallest of v[k..n) after kth(v, n, k − 1) placed everything ≥ it there.
template <typename T>
double min_from(const Stored<T>* v, std::uint64_t n, std::uint64_t k) {
  return value_of<T>(*std::min_element(v + k, v + n, less<T>));
}

template <typename T>
double median_of(Stored<T>* v, std::uint64_t n) {
  if (has_nan<T>(v, n)) return kNaN;
  if (n % 2 == 1) return kth<T>(v, n, n / 2);
  const double lo = kth<T>(v, n, n / 2 - 1);
  const double hi = min_from<T>(v, n, n / 2);
  return (lo + hi) / 2.0;
}

// numpy "linear": virtual index (n − 1)·q, then numpy's two-sided lerp.
template <typename T>
double quantile_of(Stored<T>* v, std::uint64_t n, double q) {
  if (has_nan<T>(v, n)) return kNaN;
  const double vi = static_cast<double>(n - 1) * q;
  const double prev_f = std::floor(vi);
  const auto prev = static_cast<std::uint64_t>(prev_f);
  const std::uint64_t next = std::min(prev + 1, n - 1);
  const double gamma = vi - prev_f;
  const double a = kth<T>(v, n, prev);
  const double b = next == prev ? a : min_from<T>(v, n, next);
  const double diff = b - a;
  return gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;
}

struct Histogram {
  std::vector<double> counts;
  std::vector<double> edges;
  double excluded = 0;
};

template <typename T>
Histogram histogram_of(const Stored<T>* v, std::uint64_t n, const QueryOperation& op) {
  double lo, hi;
  if (op.min) {
    lo = *op.min;
    hi = *op.max;
  } else {
    bool any = false;
    lo = hi = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const double x = value_of<T>(v[i]);
      if (!std::isfinite(x)) continue;
      if (!any || x < lo) lo = x;
      if (!any || x > hi) hi = x;
      any = true;
    }
    if (!any) fail("histogram: no finite values to derive a range; pass `min` and `max`");
  }
  Histogram h;
  const std::uint32_t bins = op.bins;
  h.counts.assign(bins, 0.0);
  const double span = hi - lo;
  const bool degenerate = span < 2.220446049250313e-16;
  const double width = span / bins;
  h.edges.push_back(lo);
  for (std::uint32_t i = 1; i < bins; ++i) h.edges.push_back(degenerate ? hi : lo + i * width);
  h.edges.push_back(hi);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double x = value_of<T>(v[i]);
    if (!(x >= lo && x <= hi)) {  // outside, NaN (and ±inf unless inside a given range: never, it is finite)
      h.excluded += 1;
      continue;
    }
    std::uint64_t b = 0;
    if (!degenerate) {
      const double f = std::floor((x - lo) / width);
      b = f >= bins ? bins - 1 : static_cast<std::uint64_t>(f);
    }
    h.counts[b] += 1;
  }
  return h;
}

// Population covariance (reference order of operations), correlation = cov / (σⱼσₖ).
template <typename T>
std::vector<double> covariance_of(const Stored<T>* base, std::uint64_t vars, std::uint64_t obs, bool correlation) {
  std::vector<double> means(vars);
  for (std::uint64_t j = 0; j < vars; ++j) {
    double sum = 0;
    for (std::uint64_t i = 0; i < obs; ++i) {
      const double x = value_of<T>(base[j * obs + i]);
      if (!std::isfinite(x)) fail("covariance/correlation require finite values in the logical selection");
      sum += x;
    }
    means[j] = sum / static_cast<double>(obs);
  }
  std::vector<double> cov(vars * vars);
  for (std::uint64_t j = 0; j < vars; ++j) {
    for (std::uint64_t k = j; k < vars; ++k) {
      double acc = 0;
      for (std::uint64_t i = 0; i < obs; ++i)
        acc += (value_of<T>(base[j * obs + i]) - means[j]) * (value_of<T>(base[k * obs + i]) - means[k]);
      cov[j * vars + k] = cov[k * vars + j] = acc / static_cast<double>(obs);
    }
  }
  if (!correlation) return cov;
  std::vector<double> sd(vars), out(vars * vars);
  for (std::uint64_t j = 0; j < vars; ++j) sd[j] = cov[j * vars + j] > 0 ? std::sqrt(cov[j * vars + j]) : 0.0;
  for (std::uint64_t j = 0; j < vars; ++j)
    for (std::uint64_t k = 0; k < vars; ++k)
      out[j * vars + k] = j == k ? 1.0 : (sd[j] == 0 || sd[k] == 0) ? 0.0 : cov[j * vars + k] / (sd[j] * sd[k]);
  return out;
}

Json doubles(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(x);
  return a;
}

template <typename T>
void reduce_cells(Stored<T>* base, const Reduction& red, const QueryOperation& op, bool scalar, ExecResult& res) {
  const std::uint64_t cells = red.cells, f = red.fiber_len;
  switch (op.op) {
    case QueryOp::Median:
    case QueryOp::Quantile: {
      std::vector<double> out(checked_size(cells));
      for (std::uint64_t c = 0; c < cells; ++c)
        out[c] = op.op == QueryOp::Median ? median_of<T>(base + c * f, f) : quantile_of<T>(base + c * f, f, op.q);
      const std::string key(query_op_key(op.op));
      if (scalar) res.fields.emplace_back("operation_" + key, out[0]);
      else res.fields.emplace_back("operation_reduced_" + key, doubles(out));
      break;
    }
    case QueryOp::Histogram: {
      if (scalar) {
        Histogram h = histogram_of<T>(base, f, op);
        res.fields.emplace_back("operation_histogram_counts", doubles(h.counts));
        res.fields.emplace_back("operation_histogram_edges", doubles(h.edges));
        res.fields.emplace_back("operation_histogram_excluded", h.excluded);
      } else {
        std::vector<double> counts, excluded;
        for (std::uint64_t c = 0; c < cells; ++c) {
          Histogram h = histogram_of<T>(base + c * f, f, op);
          counts.insert(counts.end(), h.counts.begin(), h.counts.end());
          excluded.push_back(h.excluded);
        }
        res.fields.emplace_back("operation_reduced_histogram_counts", doubles(counts));
        res.fields.emplace_back("operation_reduced_histogram_excluded", doubles(excluded));
      }
      break;
    }
    case QueryOp::Covariance:
    case QueryOp::Correlation: {
      const bool corr = op.op == QueryOp::Correlation;
      const std::string key = corr ? "operation_correlation" : "operation_covariance";
      res.fields.emplace_back(key, doubles(covariance_of<T>(base, cells, f, corr)));
      res.fields.emplace_back(key + "_order", cells);
      break;
    }
    case QueryOp::Sum:
    case QueryOp::Mean:
    case QueryOp::Min:
    case QueryOp::Max:
    case QueryOp::Var:
    case QueryOp::Std:
    case QueryOp::Product:
    case QueryOp::NormL1:
    case QueryOp::NormL2:
    case QueryOp::Count:
    case QueryOp::AllFinite:
    case QueryOp::AnyNan:
    case QueryOp::AnyInf:
    case QueryOp::ArgMin:
    case QueryOp::ArgMax:
    case QueryOp::NanCount:
    case QueryOp::InfCount:
    case QueryOp::NullCount:
    case QueryOp::NanMean:
    case QueryOp::NanStd:
    case QueryOp::Transform: fail("operation `" + std::string(query_op_key(op.op)) + "` does not materialize");
  }
}

}  // namespace

ExecResult run_materialize(const Plan& plan, const QueryOperation& op, const std::vector<std::size_t>& axes,
                           const ExecContext& ctx) {
  ExecResult res;
  res.tier_c_zero_preview = true;
  const std::size_t es = plan.ds->element_size();
  res.preview.init(ctx.preview, plan.count, es);
  const Reduction red = make_reduction(plan.logical_shape, axes);
  if ((op.op == QueryOp::Covariance || op.op == QueryOp::Correlation) && red.cells > 1024)
    fail("variable axis length " + std::to_string(red.cells) + " exceeds maximum 1024");

  const bool in_memory = plan.logical_bytes <= ctx.budget;
  res.memory_strategy = in_memory ? "in_memory_materialize" : "temp_spill_materialize";
  std::unique_ptr<MappedFile> spill;
  std::vector<std::uint64_t> memory;  // 8-byte aligned storage for every dtype
  std::byte* base;
  if (in_memory) {
    memory.resize(checked_size((plan.logical_bytes + 7) / 8));
    base = reinterpret_cast<std::byte*>(memory.data());
  } else {
    spill = std::make_unique<MappedFile>(temp_spill_path(ctx, "spill", ".bin"), plan.logical_bytes, false);
    base = spill->data();
  }

  const CellFrame frame = global_frame(red);
  const std::uint64_t f = red.fiber_len;
  for_chunks(plan.chunks.size(), plan.chunks.size() > 1, ctx.threads, plan.read_ahead != nullptr, [&](std::size_t k) {
    thread_local std::vector<std::byte> scratch;
    const TileWalk w = tile_walk(plan, k);
    const std::byte* tile = tile_bytes(plan, k, scratch);
    for_each_run(plan, w, tile, red, frame, [&](const Run& r) {
      res.preview.take(r);
      for (std::uint64_t j = 0; j < r.n; ++j) {
        const std::uint64_t pos = (r.cell + j * r.cell_step) * f + r.fiber + j * r.fiber_step;
        std::memcpy(base + pos * es, r.data + j * r.stride * es, es);
      }
    });
  });

  visit_element(plan.ds->dtype, [&](auto tag) {
    using T = decltype(tag);
    reduce_cells<T>(reinterpret_cast<Stored<T>*>(base), red, op, axes.empty(), res);
  });
  return res;
}

}  // namespace tessera::tet::qe
