// numpy-exact per-cell statistics (spec §6.1a). Compiled with -ffp-contract=off.
#include "cell_stats.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/ragged/tdigest.hpp"

namespace tessera::ragged::detail {

double linear_quantile(std::span<const double> sorted, double q) noexcept {
  const std::size_t n = sorted.size();
  const double virtual_index = static_cast<double>(n - 1) * q;
  if (virtual_index >= static_cast<double>(n - 1)) return sorted[n - 1];
  if (virtual_index < 0) return sorted[0];
  const double previous = std::floor(virtual_index);
  const auto i = static_cast<std::size_t>(previous);
  const double a = sorted[i], b = sorted[i + 1], t = virtual_index - previous;
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

void cell_stats(std::span<const double> x, std::span<const double> sigma, std::span<const Stat> stats,
                std::span<float> out, std::vector<double>& scratch) {
  const std::size_t n = x.size();
  const double count = static_cast<double>(n);
  const double mean = tdigest::pairwise_sum(x) / count;
  double weighted_mean = mean, inverse_sum = 0;
  if (!sigma.empty()) {
    // np.sum(x / s**2) / np.sum(1 / s**2); s**2 is numpy's square (s * s).
    std::vector<double> inverse(n);
    scratch.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double s2 = sigma[i] * sigma[i];
      scratch[i] = x[i] / s2;
      inverse[i] = 1.0 / s2;
    }
    inverse_sum = tdigest::pairwise_sum(inverse);
    weighted_mean = tdigest::pairwise_sum(scratch) / inverse_sum;
  }
  bool sorted_ready = false;
  for (std::size_t k = 0; k < stats.size(); ++k) {
    double v = 0;
    switch (stats[k]) {
      case Stat::Min: v = *std::min_element(x.begin(), x.end()); break;
      case Stat::Max: v = *std::max_element(x.begin(), x.end()); break;
      case Stat::Mean: v = weighted_mean; break;
      case Stat::Sigma: v = 1.0 / std::sqrt(inverse_sum); break;
      case Stat::Variance: {
        scratch.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
          const double d = x[i] - mean;
          scratch[i] = d * d;
        }
        v = tdigest::pairwise_sum(scratch) / count;
        sorted_ready = false;
        break;
      }
      case Stat::Q25:
      case Stat::Q50:
      case Stat::Q75: {
        if (!sorted_ready) {
          scratch.assign(x.begin(), x.end());
          std::sort(scratch.begin(), scratch.end());
          sorted_ready = true;
        }
        v = linear_quantile(scratch, stats[k] == Stat::Q25 ? 0.25 : stats[k] == Stat::Q50 ? 0.5 : 0.75);
        break;
      }
    }
    out[k] = static_cast<float>(v);
  }
}

}  // namespace tessera::ragged::detail
