// t-digest payload decoding and the numpy-exact kernels of the tensor cast (spec §5.3).
// Every operation is written in the order numpy evaluates it; the build's -ffp-contract=off keeps
// the compiler from fusing a multiply and an add, which would change results by an ulp.
#include "tessera/ragged/tdigest.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::ragged::tdigest {

namespace {
constexpr std::size_t kRowBytes = 8;  // float32 mean, float32 weight
}

void decode_into(std::span<const std::byte> payload, std::string_view what, Digest& out) {
  if (payload.size() % kRowBytes != 0)
    throw FormatError(std::string(what) + ": t-digest payload of " + std::to_string(payload.size()) +
                          " bytes is not a whole number of (mean, weight) float32 rows",
                      std::string(what), "t-digest");
  const std::size_t k = payload.size() / kRowBytes;
  out.means.resize(k);
  out.weights.resize(k);
  const std::byte* p = payload.data();
  for (std::size_t i = 0; i < k; ++i, p += kRowBytes) {
    out.means[i] = static_cast<double>(load_le<float>(p));
    out.weights[i] = static_cast<double>(load_le<float>(p + 4));
  }
}

Digest decode(std::span<const std::byte> payload, std::string_view what) {
  Digest d;
  decode_into(payload, what, d);
  return d;
}

void validate(const Digest& d, std::string_view what) {
  for (std::size_t i = 0; i < d.size(); ++i) {
    const auto bad = [&](const std::string& rule) {
      throw FormatError(std::string(what) + ": t-digest row " + std::to_string(i) + ": " + rule, std::string(what), "t-digest");
    };
    if (!std::isfinite(d.means[i])) bad("mean is not finite");
    if (!std::isfinite(d.weights[i]) || !(d.weights[i] > 0)) bad("weight must be finite and > 0");
    if (i > 0 && d.means[i] < d.means[i - 1]) bad("means are not sorted ascending");
  }
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

double quantile(const Digest& d, double q) noexcept {
  const std::size_t k = d.size();
  if (k == 0) return std::nan("");
  const double n = pairwise_sum(d.weights);
  const double target = q * (n - 1);
  const auto& m = d.means;
  double running = 0;  // U_{i-1}
  for (std::size_t i = 0; i < k; ++i) {
    const double lo = i == 0 ? 0.0 : running;
    running = i == 0 ? d.weights[0] : running + d.weights[i];
    const double hi = running - 1;
    if (target <= hi) {
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
  }
  return m[k - 1];
}

namespace {

// numpy interp(x, xp, fp, left=0, right=total) for one x (xp ascending, possibly repeated).
double interp_one(double x, std::span<const double> xp, std::span<const double> fp, double total) noexcept {
  const std::size_t k = xp.size();
  if (std::isnan(x)) return x;
  if (x > xp[k - 1]) return total;
  if (x < xp[0]) return 0.0;
  // j: the last index with xp[j] <= x.
  const std::size_t j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j == k - 1) return fp[k - 1];
  if (xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double r = slope * (x - xp[j]) + fp[j];
  if (std::isnan(r)) {
    r = slope * (x - xp[j + 1]) + fp[j + 1];
    if (std::isnan(r) && fp[j] == fp[j + 1]) r = fp[j];
  }
  return r;
}

// Knots c_k = U_k − w_k/2 (U sequential) into `knots`; returns the pairwise total W.
double knots_of(const Digest& d, std::vector<double>& knots) {
  knots.resize(d.size());
  double running = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    running = i == 0 ? d.weights[0] : running + d.weights[i];
    knots[i] = running - d.weights[i] / 2;
  }
  return pairwise_sum(d.weights);
}

void cdf_with(const Digest& d, std::span<const double> x, std::span<double> out, std::vector<double>& knots) {
  if (d.empty()) {
    std::fill(out.begin(), out.end(), std::nan(""));
    return;
  }
  const double total = knots_of(d, knots);
  if (d.size() == 1) {
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] >= d.means[0] ? total : 0.0;
    return;
  }
  // Sorted query points (bin edges): walk the knots forward instead of searching each time; the
  // index found is the same "last j with m_j <= x" numpy's search returns. Slopes are computed
  // once per interval, as numpy does when there are at least as many points as knots.
  const std::span<const double> xp = d.means;
  const std::size_t k = xp.size();
  thread_local std::vector<double> slopes;
  slopes.assign(k - 1, std::nan(""));
  std::size_t j = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (v > xp[k - 1]) {
      out[i] = total;
      continue;
    }
    if (v < xp[0]) {
      out[i] = 0.0;
      continue;
    }
    if (std::isnan(v) || (i > 0 && v < x[i - 1])) {  // NaN or not ascending: search
      out[i] = interp_one(v, xp, knots, total);
      j = 0;
      continue;
    }
    while (j + 1 < k && xp[j + 1] <= v) ++j;
    if (j == k - 1) {
      out[i] = knots[k - 1];
    } else if (xp[j] == v) {
      out[i] = knots[j];
    } else {
      if (std::isnan(slopes[j])) slopes[j] = (knots[j + 1] - knots[j]) / (xp[j + 1] - xp[j]);
      const double slope = slopes[j];
      double r = slope * (v - xp[j]) + knots[j];
      if (std::isnan(r)) {
        r = slope * (v - xp[j + 1]) + knots[j + 1];
        if (std::isnan(r) && knots[j] == knots[j + 1]) r = knots[j];
      }
      out[i] = r;
    }
  }
}

}  // namespace

void cdf(const Digest& d, std::span<const double> x, std::span<double> out) {
  std::vector<double> knots;
  cdf_with(d, x, out, knots);
}

void rasterize(const Digest& d, double z_lo, double res, std::uint32_t n_bins, std::span<double> out,
               std::vector<double>& scratch) {
  if (d.empty()) {
    std::fill(out.begin(), out.begin() + n_bins, 0.0);
    return;
  }
  // scratch: [edges (n+1) | cdf (n+1) | knots (k)]
  const std::size_t ne = static_cast<std::size_t>(n_bins) + 1;
  scratch.resize(2 * ne);
  double* edges = scratch.data();
  for (std::size_t i = 0; i < ne; ++i) edges[i] = z_lo + res * static_cast<double>(i);
  thread_local std::vector<double> knots;
  cdf_with(d, std::span<const double>(edges, ne), std::span<double>(scratch.data() + ne, ne), knots);
  const double* c = scratch.data() + ne;
  for (std::size_t i = 0; i < n_bins; ++i) {
    const double diff = c[i + 1] - c[i];
    out[i] = diff >= 0.0 ? diff : 0.0;
  }
}

}  // namespace tessera::ragged::tdigest
