// How a distributed build splits its rows (ragged/partition.hpp): every shard whole in one run,
// runs in ascending shard order and of about equal rows, rows in input order, refused rows last;
// checked against a plain recomputation from point_nested29.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/ragged/partition.hpp"

namespace tessera::ragged {
namespace {

std::uint64_t shard_of(double lat, double lon, int order) {
  return *geo::point_nested29(lat, lon, geo::Latitude::Authalic) >> (2 * (29 - order));
}

struct Points {
  std::vector<double> lat, lon;
};

Points random_points(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> lat(-20, 60), lon(-100, 40);
  Points p;
  for (std::size_t i = 0; i < n; ++i) {
    p.lat.push_back(lat(rng));
    p.lon.push_back(lon(rng));
  }
  return p;
}

void expect_sound(const Points& p, int order, std::size_t partitions, const ShardPartitions& split) {
  ASSERT_EQ(split.part.size(), p.lat.size());
  std::size_t total = 0;
  for (const std::size_t rows : split.sizes) {
    EXPECT_GT(rows, 0u);
    total += rows;
  }
  EXPECT_EQ(total, p.lat.size());
  EXPECT_LE(split.sizes.size(), partitions);
  // Every shard lies in one run; runs follow the shards' order.
  std::map<std::uint64_t, std::uint16_t> run_of;
  std::size_t refused = 0;
  for (std::size_t i = 0; i < p.lat.size(); ++i) {
    if (!geo::point_nested29(p.lat[i], p.lon[i], geo::Latitude::Authalic)) {
      ++refused;
      EXPECT_EQ(split.part[i], split.sizes.size() - 1) << "refused rows go with the last run";
      continue;
    }
    const auto [it, fresh] = run_of.emplace(shard_of(p.lat[i], p.lon[i], order), split.part[i]);
    EXPECT_EQ(it->second, split.part[i]) << "a shard split between runs";
  }
  EXPECT_EQ(refused, split.refused);
  std::vector<std::uint64_t> occupied;
  std::uint16_t last = 0;
  for (const auto& [shard, run] : run_of) {
    occupied.push_back(shard);
    EXPECT_GE(run, last) << "runs out of shard order";
    last = run;
  }
  EXPECT_EQ(split.occupied, occupied);
}

TEST(Partition, RunsHoldWholeShardsInOrderAndAboutEqualRows) {
  Points p = random_points(200'000, 5);
  p.lat[7] = NAN;
  p.lon[99] = INFINITY;
  p.lat[1234] = 95;
  for (const int order : {1, 3, 5}) {
    const ShardPartitions split = partition_by_shard(p.lat, p.lon, order, geo::Latitude::Authalic, 8);
    expect_sound(p, order, 8, split);
    EXPECT_EQ(split.refused, 3u);
    if (order == 5) {  // many small shards: the runs come out within a few percent of equal
      ASSERT_EQ(split.sizes.size(), 8u);
      for (const std::size_t rows : split.sizes) EXPECT_NEAR(static_cast<double>(rows), 25'000.0, 1'500.0);
    }
  }
}

TEST(Partition, HighShardOrdersAreSortedRatherThanCounted) {
  const Points p = random_points(20'000, 9);
  const ShardPartitions split = partition_by_shard(p.lat, p.lon, 14, geo::Latitude::Authalic, 5);
  expect_sound(p, 14, 5, split);
  EXPECT_EQ(split.sizes.size(), 5u);
}

TEST(Partition, FewerShardsThanPartitionsAndOnlyRefusedRows) {
  const Points p = random_points(1'000, 3);
  const ShardPartitions coarse = partition_by_shard(p.lat, p.lon, 0, geo::Latitude::Authalic, 64);
  expect_sound(p, 0, 64, coarse);
  // At most one run per shard (small shards share a run: the cuts follow rows).
  EXPECT_LE(coarse.sizes.size(), coarse.occupied.size());
  EXPECT_GE(coarse.sizes.size(), 2u);

  const std::vector<double> nan(4, NAN), zero(4, 0.0);
  const ShardPartitions refused = partition_by_shard(nan, zero, 3, geo::Latitude::Authalic, 4);
  EXPECT_TRUE(refused.occupied.empty());
  EXPECT_EQ(refused.sizes, std::vector<std::size_t>{4});
  EXPECT_EQ(refused.refused, 4u);
}

TEST(Partition, BadArgumentsAreUsageErrors) {
  const std::vector<double> one{1.0}, two{1.0, 2.0};
  EXPECT_THROW(partition_by_shard(one, two, 3, geo::Latitude::Authalic, 2), UsageError);
  EXPECT_THROW(partition_by_shard(one, one, 30, geo::Latitude::Authalic, 2), UsageError);
  EXPECT_THROW(partition_by_shard(one, one, 3, geo::Latitude::Authalic, 0), UsageError);
  EXPECT_THROW(partition_by_shard(one, one, 3, geo::Latitude::Authalic, kMaxPartitions + 1), UsageError);
}

TEST(Partition, CutIntoRunsOfAboutEqualRows) {
  // Groups of 10, 10, 50, 10, 20 rows (100 in all) in three runs: cuts at the groups where
  // rows 33.3 and 66.7 fall.
  const std::vector<std::size_t> starts{0, 10, 20, 70, 80};
  EXPECT_EQ(cut_into_runs(starts, 100, 3), (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(cut_into_runs(starts, 100, 1), (std::vector<std::size_t>{0}));
  // At most one run per group: targets 20, 40, 60, 80 fall in groups 2, 3, 3, 4.
  EXPECT_EQ(cut_into_runs(starts, 100, 99), (std::vector<std::size_t>{0, 2, 3, 4}));
}

}  // namespace
}  // namespace tessera::ragged
