// The writer-side t-digest algebra (spec §6.3): k1 compression, build, pairwise and k-way folds
// with companion channels. Compiled with -ffp-contract=off like every room that must match numpy.
#include "tessera/ragged/tdigest_build.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged::tdigest {
namespace {

void check_delta(double delta) {
  if (!std::isfinite(delta) || delta < 1) throw UsageError("t-digest: delta must be a finite number >= 1");
}

// Sorted sub-centroids in float64 with their companions, before compression.
struct Rows {
  std::vector<double> means;
  std::vector<double> weights;
  std::vector<std::uint64_t> locations;
  std::vector<std::uint64_t> times;
};

// "first element, then numpy's pairwise sum over the rest" of values[begin, end).
double segment_sum(std::span<const double> values, std::size_t begin, std::size_t end) {
  return values[begin] + pairwise_sum(values.subspan(begin + 1, end - begin - 1));
}

StoredDigest compress_rows(const Rows& rows, double delta) {
  StoredDigest out;
  if (rows.means.empty()) return out;
  const std::vector<std::size_t> starts = compress_partition(rows.weights, delta);
  const std::size_t n = rows.means.size();
  std::vector<double> products(n);
  // The products are formed first, as numpy evaluates `m * w` before the reduction.
  for (std::size_t i = 0; i < n; ++i) products[i] = rows.means[i] * rows.weights[i];
  const bool located = !rows.locations.empty(), timed = !rows.times.empty();
  out.means.reserve(starts.size());
  out.weights.reserve(starts.size());
  for (std::size_t c = 0; c < starts.size(); ++c) {
    const std::size_t b = starts[c], e = c + 1 < starts.size() ? starts[c + 1] : n;
    const double w = segment_sum(rows.weights, b, e);
    const double mw = segment_sum(products, b, e);
    out.means.push_back(static_cast<float>(mw / w));
    out.weights.push_back(static_cast<float>(w));
    if (located) {
      out.locations.push_back(
          e - b == 1 ? rows.locations[b]
                     : morton::common_ancestor(std::span(rows.locations).subspan(b, e - b), "centroid locations"));
    }
    if (timed) {
      std::uint64_t t = rows.times[b];
      for (std::size_t i = b + 1; i < e; ++i) t = toc::join(t, rows.times[i]);
      out.times.push_back(t);
    }
  }
  return out;
}

// The rows of stored digests, widened, in input order.
Rows widen(std::span<const StoredDigest* const> digests) {
  Rows rows;
  for (const StoredDigest* d : digests) {
    rows.means.insert(rows.means.end(), d->means.begin(), d->means.end());
    rows.weights.insert(rows.weights.end(), d->weights.begin(), d->weights.end());
    rows.locations.insert(rows.locations.end(), d->locations.begin(), d->locations.end());
    rows.times.insert(rows.times.end(), d->times.begin(), d->times.end());
  }
  return rows;
}

// Checks a stored digest's shape and that every non-empty input carries the same channels.
void check_channels(std::span<const StoredDigest* const> digests) {
  const StoredDigest* first = nullptr;
  for (const StoredDigest* d : digests) {
    if (d->weights.size() != d->size() || (!d->locations.empty() && d->locations.size() != d->size()) ||
        (!d->times.empty() && d->times.size() != d->size()))
      throw UsageError("t-digest merge: a digest's weights or companion words are not row-aligned");
    if (d->empty()) continue;
    if (!first) first = d;
    else if (first->locations.empty() != d->locations.empty() || first->times.empty() != d->times.empty())
      throw UsageError("t-digest merge: the digests carry different companion channels");
  }
}

Rows permuted(const Rows& in, std::span<const std::size_t> order) {
  Rows out;
  out.means.reserve(order.size());
  out.weights.reserve(order.size());
  for (const std::size_t i : order) {
    out.means.push_back(in.means[i]);
    out.weights.push_back(in.weights[i]);
    if (!in.locations.empty()) out.locations.push_back(in.locations[i]);
    if (!in.times.empty()) out.times.push_back(in.times[i]);
  }
  return out;
}

std::vector<std::byte> le_bytes(std::span<const std::uint64_t> words) {
  std::vector<std::byte> out;
  out.reserve(words.size() * 8);
  for (const std::uint64_t w : words) append_le<std::uint64_t>(out, w);
  return out;
}

}  // namespace

double k1_scale(double q, double delta) noexcept {
  const double c = std::clamp(q, 0.0, 1.0);
  return delta * (std::asin(2.0 * c - 1.0) / std::numbers::pi + 0.5);
}

std::vector<std::byte> StoredDigest::payload() const {
  std::vector<std::byte> out;
  out.reserve(means.size() * 8);
  for (std::size_t i = 0; i < means.size(); ++i) {
    append_le<float>(out, means[i]);
    append_le<float>(out, weights[i]);
  }
  return out;
}

std::vector<std::byte> StoredDigest::locations_payload() const { return le_bytes(locations); }
std::vector<std::byte> StoredDigest::times_payload() const { return le_bytes(times); }

std::vector<std::size_t> compress_partition(std::span<const double> weights, double delta) {
  check_delta(delta);
  const std::size_t n = weights.size();
  std::vector<std::size_t> starts;
  if (n == 0) return starts;
  // kr_i = k(U_i / T) with U the sequential running sum (np.cumsum), T its last value.
  std::vector<double> kr(n);
  double running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    running += weights[i];
    kr[i] = running;
  }
  const double total = running;
  for (double& k : kr) k = k1_scale(k / total, delta);
  std::size_t s = 0;
  while (s < n) {
    starts.push_back(s);
    const double limit = (s == 0 ? k1_scale(0.0, delta) : kr[s - 1]) + 1.0;
    // The first index whose kr exceeds the limit (kr is non-decreasing): searchsorted 'right'.
    std::size_t e = static_cast<std::size_t>(std::upper_bound(kr.begin(), kr.end(), limit) - kr.begin());
    if (e <= s) e = s + 1;
    s = e;
  }
  return starts;
}

StoredDigest build(std::span<const double> values, double delta, std::span<const double> weights,
                   std::span<const std::uint64_t> locations, std::span<const std::uint64_t> times) {
  check_delta(delta);
  const std::size_t n = values.size();
  if ((!weights.empty() && weights.size() != n) || (!locations.empty() && locations.size() != n) ||
      (!times.empty() && times.size() != n))
    throw UsageError("t-digest build: weights and companion words must have one entry per value");
  // A single unit-weight observation (most cells of a fine grid) is its own centroid: m·1/1 = m
  // exactly, so this shortcut gives the algorithm's bytes without its allocations.
  if (n == 1 && weights.empty() && std::isfinite(values[0]) && (locations.empty() || morton::is_valid(locations[0])) &&
      (times.empty() || times[0] != 0)) {
    StoredDigest out;
    out.means.push_back(static_cast<float>(values[0]));
    out.weights.push_back(1.0f);
    out.locations.assign(locations.begin(), locations.end());
    out.times.assign(times.begin(), times.end());
    return out;
  }
  std::vector<std::size_t> order;
  order.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!weights.empty() && !(std::isfinite(weights[i]) && weights[i] > 0))
      throw UsageError("t-digest build: weight " + std::to_string(i) + " is not a positive finite number");
    if (!locations.empty() && !morton::is_valid(locations[i]))
      throw UsageError("t-digest build: location word " + std::to_string(i) + " is 0 or not a valid morton word");
    if (!times.empty() && times[i] == 0)
      throw UsageError("t-digest build: time word " + std::to_string(i) + " is 0 (unobserved)");
    if (std::isfinite(values[i])) order.push_back(i);
  }
  // numpy's stable argsort: ties keep their input order, companions travel with their value.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  Rows rows;
  rows.means.reserve(order.size());
  rows.weights.reserve(order.size());
  for (const std::size_t i : order) {
    rows.means.push_back(values[i]);
    rows.weights.push_back(weights.empty() ? 1.0 : weights[i]);
    if (!locations.empty()) rows.locations.push_back(locations[i]);
    if (!times.empty()) rows.times.push_back(times[i]);
  }
  return compress_rows(rows, delta);
}

StoredDigest merge_pairwise(const StoredDigest& a, const StoredDigest& b, double delta) {
  check_delta(delta);
  const StoredDigest* both[] = {&a, &b};
  check_channels(both);
  if (a.empty()) return b;
  if (b.empty()) return a;
  const Rows rows = widen(both);
  std::vector<std::size_t> order(rows.means.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return rows.means[x] < rows.means[y]; });
  return compress_rows(permuted(rows, order), delta);
}

StoredDigest merge_kway(std::span<const StoredDigest> digests, double delta) {
  check_delta(delta);
  std::vector<const StoredDigest*> inputs;
  for (const StoredDigest& d : digests) inputs.push_back(&d);
  check_channels(inputs);
  std::erase_if(inputs, [](const StoredDigest* d) { return d->empty(); });
  if (inputs.empty()) return {};
  if (inputs.size() == 1) return *inputs.front();
  const Rows rows = widen(inputs);
  const bool located = !rows.locations.empty(), timed = !rows.times.empty();
  std::vector<std::size_t> order(rows.means.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Lexicographic (mean, weight, location, time): a total order on the row content, so the result
  // does not depend on the order of the inputs.
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    if (rows.means[x] != rows.means[y]) return rows.means[x] < rows.means[y];
    if (rows.weights[x] != rows.weights[y]) return rows.weights[x] < rows.weights[y];
    if (located && rows.locations[x] != rows.locations[y]) return rows.locations[x] < rows.locations[y];
    if (timed && rows.times[x] != rows.times[y]) return rows.times[x] < rows.times[y];
    return false;
  });
  return compress_rows(permuted(rows, order), delta);
}

}  // namespace tessera::ragged::tdigest
