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
  const std::byte* p = payload.data();
  for (std::size_t i = 0; i < k; ++i, p += kRowBytes) {
    out.means[i] = static_cast<double>(load_le<float>(p));
    out.weights[i] = static_cast<double>(load_le<float>(p + 4));
  }
}

void decode_checked_into(std::span<const std::byte> payload, std::string_view what, Digest& out) {
  const std::size_t k = row_count(payload, what);
  out.means.resize(k);
  out.weights.resize(k);
  // The rules are folded into one flag so the loop stays branch-free; a digest that breaks one
  // is checked again row by row for the message.
  const std::byte* p = payload.data();
  double* means = out.means.data();
  double* weights = out.weights.data();
  constexpr double kMax = std::numeric_limits<double>::max();
  bool ok = true;
  double prev = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < k; ++i, p += kRowBytes) {
    const double mean = static_cast<double>(load_le<float>(p));
    const double weight = static_cast<double>(load_le<float>(p + 4));
    ok &= (std::fabs(mean) <= kMax) & (weight > 0) & (weight <= kMax) & (mean >= prev);
    means[i] = prev = mean;
    weights[i] = weight;
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
  const double ta = qa * (total - 1), tb = qb * (total - 1);
  // The first row whose segment reaches each target (a NaN target reaches none: the last mean).
  QuantilePair out{d.means[k - 1], d.means[k - 1]};
  bool found_a = false, found_b = false;
  double running = 0;  // U_{i-1}
  for (std::size_t i = 0; i < k && !(found_a && found_b); ++i) {
    const double lo = i == 0 ? 0.0 : running;
    running = i == 0 ? d.weights[0] : running + d.weights[i];
    const double hi = running - 1;
    if (!found_a && ta <= hi) {
      out.a = quantile_in_row(d, i, lo, hi, ta);
      found_a = true;
    }
    if (!found_b && tb <= hi) {
      out.b = quantile_in_row(d, i, lo, hi, tb);
      found_b = true;
    }
  }
  return out;
}

double quantile(const Digest& d, double q) noexcept {
  if (d.empty()) return std::nan("");
  return quantiles(d, q, q, pairwise_sum(d.weights)).a;
}

namespace {

// numpy interp(x, means, knots, left=0, right=total) of a non-empty digest, whose knots are
// c_j = U_j − w_j/2 (U the sequential running sum) and whose weights sum (pairwise) to `total`.
// Points are bin edges in the sweeps, so the walk moves forward through the rows, accumulating
// U as it goes (no knot array); a point below the one the walk stopped at restarts it, so the
// row found is always numpy's "last j with m_j <= x". Each value is the expression numpy
// evaluates: the same slope (kept while the walk stays in one interval), the same fallback
// when a slope is not finite.
void cdf_with(const Digest& d, double total, std::span<const double> x, std::span<double> out) {
  if (d.size() == 1) {  // spec §5.3: one centroid is a step to W at m_0
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] >= d.means[0] ? total : 0.0;
    return;
  }
  const double* m = d.means.data();
  const double* w = d.weights.data();
  const std::size_t k = d.size();
  std::size_t j = 0, slope_j = k;
  double u = w[0];       // U_j
  double walked = m[0];  // the walk has passed every row with m <= walked
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
    if (v < walked) {
      j = 0;
      u = w[0];
    }
    walked = v;
    while (j + 1 < k && m[j + 1] <= v) u += w[++j];
    const double knot = u - w[j] / 2;
    if (j == k - 1 || m[j] == v) {
      out[i] = knot;
      continue;
    }
    const double next = (u + w[j + 1]) - w[j + 1] / 2;
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
  if (d.empty()) {
    std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n_bins), 0.0);
    return;
  }
  scratch.resize(edges.size());  // the CDF at every edge
  cdf_with(d, total, edges, scratch);
  const double* c = scratch.data();
  for (std::size_t i = 0; i < n_bins; ++i) {
    const double diff = c[i + 1] - c[i];
    out[i] = diff >= 0.0 ? diff : 0.0;
  }
}

}  // namespace tessera::ragged::tdigest
