// Dense per-cell statistics of `ragged build --stats` (spec §6.1a), private to the ragged module.
// Each statistic is computed in float64 exactly as numpy computes it on the cell's values in
// input order, then cast to float32: sums are numpy's pairwise sums (`np.sum`, `np.mean`),
// the variance is `mean((x − mean)²)`, quantiles use numpy's default "linear" method with its
// `_lerp` (a + (b − a)·t, or b − (b − a)·(1 − t) when t ≥ 0.5).
#pragma once

#include <span>
#include <vector>

#include "tessera/ragged/leaf_writer.hpp"

namespace tessera::ragged::detail {

// `x`: the cell's values (n ≥ 1, finite); `sigma`: empty, or one positive finite σ per value
// (inverse-variance weighted mean and Sigma). `scratch` is reused between cells. Writes one value
// per entry of `stats` into `out`.
void cell_stats(std::span<const double> x, std::span<const double> sigma, std::span<const Stat> stats,
                std::span<float> out, std::vector<double>& scratch);

// numpy's linear quantile of sorted values (n ≥ 1).
double linear_quantile(std::span<const double> sorted, double q) noexcept;

}  // namespace tessera::ragged::detail
