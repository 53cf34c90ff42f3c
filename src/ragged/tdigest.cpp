// t-digest payload decoding and the numpy-exact kernels of the tensor cast (spec §5.3).
// Every operation is written in the order numpy evaluates it; the build's -ffp-contract=off keeps
// the compiler from fusing a multiply and an add, which would change results by an ulp.
#include "tessera/ragged/tdigest.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::ragged::tdigest {

namespace {
constexpr std::size_t kRowBytes = 8;  // float32 mean, float32 weight

std::size_t row_count(std::span<const std::byte> payload, std::string_view what) {
  if (payload.size() % kRowBytes != 0)
    throw FormatError(std::string(what) + ": t-digest payload of " + std::to_string(payload.size()) +
                          " bytes is not a whole number of (mean, weight) float32 rows",
                      std::string(what), "t-digest");
  return payload.size() / kRowBytes;
}

// The [RD-5] checks of row i (`prev`: the mean of row i − 1).
inline void check_row(std::size_t i, double mean, double weight, double prev, std::string_view what) {
  const auto bad = [&](const char* rule) {
    throw FormatError(std::string(what) + ": t-digest row " + std::to_string(i) + ": " + rule, std::string(what),
                      "t-digest");
  };
  if (!std::isfinite(mean)) bad("mean is not finite");
  if (!std::isfinite(weight) || !(weight > 0)) bad("weight must be finite and > 0");
  if (i > 0 && mean < prev) bad("means are not sorted ascending");
}

}  // namespace

void decode_into(std::span<const std::byte> payload, std::string_view what, Digest& out) {
  const std::size_t k = row_count(payload, what);
  out.means.resize(k);
  out.weights.resize(k);
  out.cumulative.resize(k);
  const std::byte* p = payload.data();
  double running = 0;
  for (std::size_t i = 0; i < k; ++i, p += kRowBytes) {
    const double weight = static_cast<double>(load_le<float>(p + 4));
    out.means[i] = static_cast<double>(load_le<float>(p));
    out.weights[i] = weight;
    running = i == 0 ? weight : running + weight;  // U_0 is w_0 itself, even when it is -0.0
    out.cumulative[i] = running;
  }
}

void decode_checked_into(std::span<const std::byte> payload, std::string_view what, Digest& out) {
  const std::size_t k = row_count(payload, what);
  out.means.resize(k);
  out.weights.resize(k);
  out.cumulative.resize(k);
  // The rules are folded into one flag so the loop stays branch-free; a digest that breaks one
  // is checked again row by row for the message.
  const std::byte* p = payload.data();
  double* means = out.means.data();
  double* weights = out.weights.data();
  double* cumulative = out.cumulative.data();
  constexpr double kMax = std::numeric_limits<double>::max();
  bool ok = true;
  double prev = -std::numeric_limits<double>::infinity(), running = 0;
  for (std::size_t i = 0; i < k; ++i, p += kRowBytes) {
    const double mean = static_cast<double>(load_le<float>(p));
    const double weight = static_cast<double>(load_le<float>(p + 4));
    ok &= (std::fabs(mean) <= kMax) & (weight > 0) & (weight <= kMax) & (mean >= prev);
    means[i] = prev = mean;
    weights[i] = weight;
    running = i == 0 ? weight : running + weight;
    cumulative[i] = running;
  }
  if (!ok) validate(out, what);
}

Digest decode(std::span<const std::byte> payload, std::string_view what) {
  Digest d;
  decode_into(payload, what, d);
  return d;
}

void validate(const Digest& d, std::string_view what) {
  for (std::size_t i = 0; i < d.size(); ++i) check_row(i, d.means[i], d.weights[i], i > 0 ? d.means[i - 1] : 0.0, what);
}

double pairwise_sum(std::span<const double> a) noexcept {
  const std::size_t n = a.size();
  if (n < 8) {
    double res = -0.0;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[static_cast<std::size_t>(j)];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a.first(n2)) + pairwise_sum(a.subspan(n2));
}

namespace {

// The spec §5.3 interpolation inside row i, whose cumulative-weight segment is [lo, hi]
// (lo = U_{i-1}, hi = U_i − 1), at `target` ≤ hi.
double quantile_in_row(const Digest& d, std::size_t i, double lo, double hi, double target) noexcept {
  const std::size_t k = d.size();
  const auto& m = d.means;
  if (hi <= lo) return m[i];
  const double frac = (target - lo) / (hi - lo);
  double lv, hv;
  if (i == 0) {
    lv = m[0];
    hv = k == 1 ? m[0] : (m[0] + m[1]) / 2;
  } else {
    lv = (m[i - 1] + m[i]) / 2;
    hv = i == k - 1 ? m[i] : (m[i] + m[i + 1]) / 2;
  }
  return lv + frac * (hv - lv);
}

}  // namespace

QuantilePair quantiles(const Digest& d, double qa, double qb, double total) noexcept {
  const std::size_t k = d.size();
  if (k == 0) return {std::nan(""), std::nan("")};
  const double* u = d.cumulative.data();
  // The first row whose segment [U_{i-1}, U_i − 1] reaches the target, as a walk up the rows
  // would find it (U ascends); a NaN target reaches none: the last mean.
  const auto at = [&](double q) {
    const double target = q * (total - 1);
    const std::size_t i = static_cast<std::size_t>(
        std::partition_point(u, u + k, [&](double running) { return !(target <= running - 1); }) - u);
    return i == k ? d.means[k - 1] : quantile_in_row(d, i, i == 0 ? 0.0 : u[i - 1], u[i] - 1, target);
  };
  return {at(qa), at(qb)};
}

double quantile(const Digest& d, double q) noexcept {
  if (d.empty()) return std::nan("");
  return quantiles(d, q, q, pairwise_sum(d.weights)).a;
}

namespace {

// The last row j with m_j <= v, given m_0 <= v (so there is one): a binary search whose steps
// select without branching on the data. A walk up the rows from the previous point takes fewer
// steps, but its exit mispredicts once per point, and the points of a sweep (bin edges about
// seven rows apart) paid more for that than for the rows they walked.
inline std::size_t last_row_at_or_below(const double* m, std::size_t k, double v) noexcept {
  const double* base = m;  // base[0] <= v throughout; the row is in [base, base + len)
  for (std::size_t len = k; len > 1;) {
    const std::size_t half = len / 2;
    base = base[half] <= v ? base + half : base;
    len -= half;
  }
  return static_cast<std::size_t>(base - m);
}

// numpy interp(x, means, knots, left=0, right=total) of a non-empty digest, whose knots are
// c_j = U_j − w_j/2 (U the sequential running sum) and whose weights sum (pairwise) to `total`,
// reading U from d.cumulative (no knot array). The row of each point is numpy's "last j with
// m_j <= x", whatever the order of the points. Each value is the expression numpy evaluates: the
// same slope (kept while consecutive points fall in one interval), the same fallback when a
// slope is not finite.
void cdf_with(const Digest& d, double total, std::span<const double> x, std::span<double> out) {
  if (d.size() == 1) {  // spec §5.3: one centroid is a step to W at m_0
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] >= d.means[0] ? total : 0.0;
    return;
  }
  const double* m = d.means.data();
  const double* w = d.weights.data();
  const double* u = d.cumulative.data();
  const std::size_t k = d.size();
  std::size_t slope_j = k;
  double slope = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (v > m[k - 1]) {
      out[i] = total;
      continue;
    }
    if (v < m[0]) {
      out[i] = 0.0;
      continue;
    }
    if (std::isnan(v)) {
      out[i] = v;
      continue;
    }
    const std::size_t j = last_row_at_or_below(m, k, v);
    const double knot = u[j] - w[j] / 2;
    if (j == k - 1 || m[j] == v) {
      out[i] = knot;
      continue;
    }
    const double next = u[j + 1] - w[j + 1] / 2;  // U_{j+1} is U_j + w_{j+1}
    if (slope_j != j) {
      slope = (next - knot) / (m[j + 1] - m[j]);
      slope_j = j;
    }
    double r = slope * (v - m[j]) + knot;
    if (std::isnan(r)) {
      r = slope * (v - m[j + 1]) + next;
      if (std::isnan(r) && knot == next) r = knot;
    }
    out[i] = r;
  }
}

}  // namespace

void cdf(const Digest& d, std::span<const double> x, std::span<double> out) {
  if (d.empty()) {
    std::fill(out.begin(), out.end(), std::nan(""));
    return;
  }
  cdf_with(d, pairwise_sum(d.weights), x, out);
}

void rasterize(const Digest& d, double z_lo, double res, std::uint32_t n_bins, std::span<double> out,
               std::vector<double>& scratch) {
  rasterize(d, d.empty() ? 0.0 : pairwise_sum(d.weights), z_lo, res, n_bins, out, scratch);
}

std::vector<double> bin_edges(double z_lo, double res, std::uint32_t n_bins) {
  std::vector<double> edges(static_cast<std::size_t>(n_bins) + 1);
  for (std::size_t i = 0; i < edges.size(); ++i) edges[i] = z_lo + res * static_cast<double>(i);
  return edges;
}

void rasterize(const Digest& d, double total, double z_lo, double res, std::uint32_t n_bins, std::span<double> out,
               std::vector<double>& scratch) {
  if (d.empty()) {
    std::fill(out.begin(), out.begin() + n_bins, 0.0);
    return;
  }
  rasterize_at(d, total, bin_edges(z_lo, res, n_bins), out, scratch);
}

void rasterize_at(const Digest& d, double total, std::span<const double> edges, std::span<double> out,
                  std::vector<double>& scratch) {
  const std::size_t n_bins = edges.size() - 1;
  const BinRange r = rasterize_range(d, total, edges, out, scratch);
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(r.lo), 0.0);
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(r.hi), out.begin() + static_cast<std::ptrdiff_t>(n_bins), 0.0);
}

BinRange rasterize_range(const Digest& d, double total, std::span<const double> edges, std::span<double> out,
                         std::vector<double>& scratch) {
  const std::size_t n_bins = edges.size() - 1;
  if (d.empty()) return {};
  // Bin b spans edges b and b + 1: zero when edge b + 1 lies below the first mean or edge b
  // above the last (cdf_with's first two cases).
  const auto first = static_cast<std::size_t>(std::lower_bound(edges.begin(), edges.end(), d.means.front()) -
                                              edges.begin());  // first edge >= the first mean
  const auto past = static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), d.means.back()) -
                                             edges.begin());  // first edge > the last mean
  const BinRange r{first > 0 ? first - 1 : 0, std::min(past, n_bins)};
  if (r.lo >= r.hi) return {};
  // cdf_with's values depend on the point only, not on the points before it.
  scratch.resize(r.hi - r.lo + 1);  // the CDF at edges lo..hi
  cdf_with(d, total, edges.subspan(r.lo, r.hi - r.lo + 1), scratch);
  const double* c = scratch.data();
  for (std::size_t b = r.lo; b < r.hi; ++b) {
    const double diff = c[b - r.lo + 1] - c[b - r.lo];
    out[b] = diff >= 0.0 ? diff : 0.0;
  }
  return r;
}

}  // namespace tessera::ragged::tdigest
