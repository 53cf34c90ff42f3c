// Splitting a distributed build's rows by shard (see partition.hpp).
#include "tessera/ragged/partition.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged {
namespace {

constexpr std::uint64_t kRefused = std::numeric_limits<std::uint64_t>::max();
// Shard orders whose ids fit a counting table (12·4^10 entries); higher ones are sorted.
constexpr int kMaxTableOrder = 10;

std::vector<std::uint64_t> shards_of(std::span<const double> lat, std::span<const double> lon, int order,
                                     geo::Latitude convention) {
  std::vector<std::uint64_t> shards(lat.size());
  const int shift = 2 * (morton::kMaxOrder - order);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, lat.size(), 1 << 14), [&](const auto& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      const auto id = geo::point_nested29(lat[i], lon[i], convention);
      shards[i] = id ? *id >> shift : kRefused;
    }
  });
  return shards;
}

}  // namespace

std::vector<std::size_t> cut_into_runs(std::span<const std::size_t> group_starts, std::size_t n_rows,
                                       std::size_t partitions) {
  const std::size_t groups = group_starts.size();
  partitions = std::max<std::size_t>(1, std::min(partitions, groups));
  std::vector<std::size_t> firsts{0};
  for (std::size_t k = 1; k < partitions; ++k) {
    const double target = static_cast<double>(k) * (static_cast<double>(n_rows) / static_cast<double>(partitions));
    const auto cut = static_cast<std::size_t>(
        std::lower_bound(group_starts.begin(), group_starts.end(), target,
                         [](std::size_t start, double t) { return static_cast<double>(start) < t; }) -
        group_starts.begin());
    if (cut > firsts.back() && cut < groups) firsts.push_back(cut);
  }
  return firsts;
}

ShardPartitions partition_by_shard(std::span<const double> lat, std::span<const double> lon, int shard_order,
                                   geo::Latitude convention, std::size_t partitions) {
  if (shard_order < 0 || shard_order > morton::kMaxOrder)
    throw UsageError("shard order " + std::to_string(shard_order) + " is outside 0…29");
  if (lat.size() != lon.size())
    throw UsageError("lat and lon differ in length (" + std::to_string(lat.size()) + " and " +
                     std::to_string(lon.size()) + ")");
  if (partitions < 1 || partitions > kMaxPartitions)
    throw UsageError("partitions must be 1…" + std::to_string(kMaxPartitions) + ", not " + std::to_string(partitions));
  const std::vector<std::uint64_t> shards = shards_of(lat, lon, shard_order, convention);
  ShardPartitions out;

  // The occupied shards and their rows.
  std::vector<std::size_t> counts;
  const bool table = shard_order <= kMaxTableOrder;
  if (table) {
    std::vector<std::size_t> per_shard(morton::kBaseCells * (std::size_t{1} << (2 * shard_order)));
    for (const std::uint64_t s : shards) {
      if (s == kRefused) ++out.refused;
      else ++per_shard[s];
    }
    for (std::size_t s = 0; s < per_shard.size(); ++s)
      if (per_shard[s]) {
        out.occupied.push_back(s);
        counts.push_back(per_shard[s]);
      }
  } else {
    std::vector<std::uint64_t> sorted(shards);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size();) {
      std::size_t j = i;
      while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
      if (sorted[i] == kRefused) out.refused += j - i;
      else {
        out.occupied.push_back(sorted[i]);
        counts.push_back(j - i);
      }
      i = j;
    }
  }
  std::vector<std::size_t> starts(counts.size());
  std::size_t valid = 0;
  for (std::size_t g = 0; g < counts.size(); ++g) {
    starts[g] = valid;
    valid += counts[g];
  }
  const std::vector<std::size_t> firsts = cut_into_runs(starts, valid, partitions);

  // Each row's run: the last run whose first shard is at most the row's (refused rows, the
  // largest id, land in the last run).
  std::vector<std::uint64_t> first_shards;
  for (std::size_t k = 1; k < firsts.size(); ++k) first_shards.push_back(out.occupied[firsts[k]]);
  out.part.resize(shards.size());
  out.sizes.assign(firsts.size(), 0);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto run = static_cast<std::uint16_t>(std::upper_bound(first_shards.begin(), first_shards.end(), shards[i]) -
                                                first_shards.begin());
    out.part[i] = run;
    ++out.sizes[run];
  }
  return out;
}

}  // namespace tessera::ragged
