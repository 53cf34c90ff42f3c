// t-digest cell payloads and the cast kernels of `read_tensors` (spec §2.5, §5.3).
//
// A digest is k rows of float32 (mean, weight), sorted by mean. The kernels work in float64 and
// reproduce numpy bit for bit: sums in numpy's pairwise order (`pairwise_sum`), running sums
// sequential, `interp` semantics for the CDF, and no fused multiply-add (the build compiles with
// -ffp-contract=off).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::ragged::tdigest {

// A decoded digest widened to float64, with the running sums of its weights.
struct Digest {
  std::vector<double> means;
  std::vector<double> weights;
  // U_i = w_0 + … + w_i, summed left to right (the spec's cumulative weights). The decoders
  // fill it in the same pass, where its chain of dependent adds overlaps the loads, so that the
  // kernels below look U up instead of each summing it again row by row.
  std::vector<double> cumulative;
  std::size_t size() const noexcept { return means.size(); }
  bool empty() const noexcept { return means.empty(); }
};

// Decodes a `(k, 2)` float32 payload. FormatError naming `what` when the length is not a
// multiple of 8.
Digest decode(std::span<const std::byte> payload, std::string_view what);
// Decodes into `out`, reusing its storage (sweeps decode many cells without allocating).
void decode_into(std::span<const std::byte> payload, std::string_view what, Digest& out);
// The [RD-5] checks: finite means and weights, weights > 0, means non-decreasing (FormatError
// naming `what` and the row).
void validate(const Digest& d, std::string_view what);
// decode_into then validate, in one pass over the payload (same results, same errors).
void decode_checked_into(std::span<const std::byte> payload, std::string_view what, Digest& out);

// numpy's float64 `np.sum` order (pairwise, 8-way unrolled blocks of up to 128).
double pairwise_sum(std::span<const double> values) noexcept;

// Quantile q of a digest (spec §5.3); NaN for an empty digest.
double quantile(const Digest& d, double q) noexcept;
// quantile(d, qa) and quantile(d, qb), given total = pairwise_sum(d.weights); each a binary
// search of U, so the weights must be >= 0 (validate checks > 0).
struct QuantilePair {
  double a = 0, b = 0;
};
QuantilePair quantiles(const Digest& d, double qa, double qb, double total) noexcept;

// The CDF of a digest at points `x`, in any order (numpy `interp(x, means, knots, 0, W)`); the
// knots and total are computed once. Empty digest → NaN everywhere.
void cdf(const Digest& d, std::span<const double> x, std::span<double> out);

// Counts per bin for edges z_lo + res·i (i = 0..n_bins): max(0, CDF(e_{i+1}) − CDF(e_i)).
// An empty digest gives zeros. `scratch` avoids allocations across calls; the overload taking
// `total` (= pairwise_sum(d.weights)) skips recomputing it.
void rasterize(const Digest& d, double z_lo, double res, std::uint32_t n_bins, std::span<double> out,
               std::vector<double>& scratch);
void rasterize(const Digest& d, double total, double z_lo, double res, std::uint32_t n_bins, std::span<double> out,
               std::vector<double>& scratch);
// The bin edges z_lo + res·i, i = 0..n_bins (n_bins + 1 values), and the same counts from edges
// computed once for many digests (a tensor block's cells share them): `edges` as bin_edges
// gives them, `out` of edges.size() − 1 bins.
std::vector<double> bin_edges(double z_lo, double res, std::uint32_t n_bins);
void rasterize_at(const Digest& d, double total, std::span<const double> edges, std::span<double> out,
                  std::vector<double>& scratch);
// The bins [lo, hi) of rasterize_at that can hold a count: the CDF is 0 at every edge below the
// first mean and `total` above the last, so a bin with both edges on one side is +0.0 (0 − 0,
// total − total). Only those bins of `out` are written, with rasterize_at's values; `edges` are
// ascending and not NaN, as bin_edges gives them. A sweep's block-wide window is much wider
// than most cells' digests, so most bins are skipped.
struct BinRange {
  std::size_t lo = 0, hi = 0;
};
BinRange rasterize_range(const Digest& d, double total, std::span<const double> edges, std::span<double> out,
                         std::vector<double>& scratch);

}  // namespace tessera::ragged::tdigest
