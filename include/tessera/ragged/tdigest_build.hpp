// The t-digest algebra of the writers (spec §6.3): building a cell's digest from raw
// observations and folding digests (pairwise and k-way), with the per-centroid companion
// channels. It reproduces zagg's merging digest with Dunning's k1 scale bit for bit, so a digest
// tessera writes equals the one zagg writes for the same inputs.
//
// Everything is float64 without FMA contraction (this room compiles with -ffp-contract=off);
// sums follow numpy's order (the running weight sum is sequential, a centroid's weight and
// weighted-mean sums are "first member, then numpy's pairwise sum over the rest", which is what
// numpy's segmented `add.reduceat` computes); the stored rows are the float64 results cast to
// float32 once, at the end.
//
// Companions over the final partition: a centroid with one member keeps that member's word; a
// centroid with several gets the deepest common ancestor of their location words (always an area
// word) and the toc join of their time words.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::ragged::tdigest {

// zagg's leaf compression (tessera's default δ); overviews use 512, the fixtures 16.
inline constexpr double kDefaultDelta = 8192;

// Dunning's k1 scale: δ·(asin(2·clamp(q, 0, 1) − 1)/π + 1/2), evaluated as written.
double k1_scale(double q, double delta) noexcept;

// A digest as the writers store it: k rows of float32 (mean, weight) sorted by mean, with the
// companion words of each row when the channel is carried (empty vector = channel absent).
struct StoredDigest {
  std::vector<float> means;
  std::vector<float> weights;
  std::vector<std::uint64_t> locations;  // one morton word per row, or empty
  std::vector<std::uint64_t> times;      // one toc word per row, or empty

  std::size_t size() const noexcept { return means.size(); }
  bool empty() const noexcept { return means.empty(); }
  // The zagg-ragged payload: the (k, 2) float32 rows, little-endian C order.
  std::vector<std::byte> payload() const;
  // Little-endian u64 payloads of the companions.
  std::vector<std::byte> locations_payload() const;
  std::vector<std::byte> times_payload() const;
};

// The centroid partition of sorted sub-centroids with positive weights: the start index of each
// centroid (ascending, first = 0). Empty input → no centroids.
std::vector<std::size_t> compress_partition(std::span<const double> weights, double delta);

// A cell's digest from raw observations. `values` are widened observations; `weights` empty
// means unit weights (counts), else one positive finite weight per value (flux). `locations`
// and `times` are empty (channel absent) or one nonzero valid word per value. Non-finite values
// are dropped together with their weights and words; the rest are stably co-sorted by value and
// compressed. UsageError: mismatched lengths, a non-positive or non-finite weight, a companion
// word that is 0 or invalid, δ not finite and ≥ 1.
StoredDigest build(std::span<const double> values, double delta, std::span<const double> weights = {},
                   std::span<const std::uint64_t> locations = {}, std::span<const std::uint64_t> times = {});

// Folds two digests: an empty side returns the other unchanged; otherwise `a` then `b` are
// stably sorted by mean and compressed with their weights. Both sides must carry the same
// channels (UsageError otherwise).
StoredDigest merge_pairwise(const StoredDigest& a, const StoredDigest& b, double delta);

// Folds many digests at once (spill blocks, pyramid levels): empty digests are dropped; one left
// is returned unchanged; otherwise all rows are sorted by (mean, weight, location word, time
// word) — companion keys only for carried channels — and compressed once, so the result does not
// depend on the order of `digests`. All inputs must carry the same channels (UsageError).
StoredDigest merge_kway(std::span<const StoredDigest> digests, double delta);

}  // namespace tessera::ragged::tdigest
