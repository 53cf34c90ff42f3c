// The writer-side t-digest algebra (spec §6.3, §9.9): the leaf columns `all.pyramid.zarr` of the
// fixtures were written by zagg's k-way fold of the leaf cells, so merge_kway over the decoded
// leaf digests must reproduce groups 5 and 4 bit for bit, companions included; plus the build and
// pairwise rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "support.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/ragged/tdigest_build.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged {
namespace {

using tdigest::StoredDigest;

// One cell of a digest field with whatever companions the field binds.
StoredDigest read_digest(const io::Store& store, const std::string& group, const std::string& field,
                         std::uint64_t cell) {
  const RaggedArray payload = RaggedArray::open(store, group + "/" + field);
  StoredDigest d;
  const auto rows = payload.read_cell(static_cast<std::int64_t>(cell)).values<float>();
  for (std::size_t i = 0; i < rows.size(); i += 2) {
    d.means.push_back(rows[i]);
    d.weights.push_back(rows[i + 1]);
  }
  if (payload.locations_binding())
    d.locations = RaggedArray::open(store, group + "/" + *payload.locations_binding())
                      .read_cell(static_cast<std::int64_t>(cell))
                      .values<std::uint64_t>();
  if (payload.times_binding())
    d.times = RaggedArray::open(store, group + "/" + *payload.times_binding())
                  .read_cell(static_cast<std::int64_t>(cell))
                  .values<std::uint64_t>();
  return d;
}

void expect_same(const StoredDigest& got, const StoredDigest& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.means[i]), std::bit_cast<std::uint32_t>(want.means[i]))
        << what << " row " << i;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.weights[i]), std::bit_cast<std::uint32_t>(want.weights[i]))
        << what << " row " << i;
  }
  EXPECT_EQ(got.locations, want.locations) << what;
  EXPECT_EQ(got.times, want.times) << what;
}

struct FoldCase {
  std::string fixture;
  std::string field;
  std::vector<std::size_t> group5_rows;
  std::size_t group4_rows;
};

TEST(TdigestBuild, MergeKwayReproducesTheLeafColumns) {
  const std::vector<FoldCase> cases = {{"minimal", "h_tdigest", {19, 5, 0, 17}, 19},
                                       {"flux", "rx_flux", {19, 5, 0, 17}, 20},
                                       {"column", "h_tdigest", {19, 5, 0, 17}, 19},
                                       {"temporal", "h_tdigest", {19, 5, 0, 17}, 19}};
  std::mt19937_64 rng(7);
  for (const FoldCase& fc : cases) {
    SCOPED_TRACE(fc.fixture);
    io::DirectoryStore leaf(test::fixture_leaf(fc.fixture).string());
    io::DirectoryStore column((test::fixture_leaf(fc.fixture).parent_path() / "all.pyramid.zarr").string());
    std::vector<StoredDigest> cells;
    for (std::uint64_t i = 0; i < 16; ++i) cells.push_back(read_digest(leaf, "6", fc.field, i));
    for (std::uint64_t j = 0; j < 4; ++j) {
      std::vector<StoredDigest> group(cells.begin() + static_cast<std::ptrdiff_t>(4 * j),
                                      cells.begin() + static_cast<std::ptrdiff_t>(4 * j + 4));
      const StoredDigest want = read_digest(column, "5", fc.field, j);
      EXPECT_EQ(want.size(), fc.group5_rows[j]);
      expect_same(tdigest::merge_kway(group, 16), want, "group 5 cell " + std::to_string(j));
      std::shuffle(group.begin(), group.end(), rng);
      expect_same(tdigest::merge_kway(group, 16), want, "group 5 cell " + std::to_string(j) + " shuffled");
    }
    const StoredDigest want4 = read_digest(column, "4", fc.field, 0);
    EXPECT_EQ(want4.size(), fc.group4_rows);
    expect_same(tdigest::merge_kway(cells, 16), want4, "group 4");
    if (fc.fixture == "temporal") {
      EXPECT_FALSE(want4.locations.empty());
      EXPECT_FALSE(want4.times.empty());
    }
    std::reverse(cells.begin(), cells.end());
    expect_same(tdigest::merge_kway(cells, 16), want4, "group 4 reversed");
  }
}

TEST(TdigestBuild, K1ScaleAndPartitionRules) {
  EXPECT_EQ(tdigest::k1_scale(0.0, 16), 0.0);
  EXPECT_EQ(tdigest::k1_scale(1.0, 16), 16.0);
  EXPECT_EQ(tdigest::k1_scale(0.5, 16), 8.0);
  EXPECT_EQ(tdigest::k1_scale(-3.0, 16), 0.0);  // clamped
  // Loss-free while the total weight is at most delta.
  for (const std::size_t n : {1u, 2u, 7u, 16u, 100u, 8192u}) {
    std::vector<double> w(n, 1.0);
    const double delta = n <= 16 ? 16 : static_cast<double>(n);
    EXPECT_EQ(tdigest::compress_partition(w, delta).size(), n) << n;
  }
  // Far above delta the digest holds about delta centroids at most.
  std::vector<double> w(100000, 1.0);
  const auto starts = tdigest::compress_partition(w, 100);
  EXPECT_LE(starts.size(), 110u);
  EXPECT_GT(starts.size(), 40u);
  EXPECT_TRUE(tdigest::compress_partition({}, 16).empty());
  EXPECT_THROW(tdigest::compress_partition(w, 0.5), UsageError);
  EXPECT_THROW(tdigest::compress_partition(w, NAN), UsageError);
}

TEST(TdigestBuild, BuildDropsNonFiniteValuesAndCarriesCompanions) {
  const std::uint64_t p1 = morton::parse_decimal("112131123333333333333333442343p");
  const std::uint64_t p2 = morton::parse_decimal("112131123333333333333333442344p");
  const std::uint64_t p3 = morton::parse_decimal("112131444444444444444444444444p");
  const std::uint64_t t1 = toc::encode_timestamp(5344625776250000000ULL);
  const std::uint64_t t2 = toc::encode_timestamp(5344625776250000001ULL);
  const std::vector<double> values = {3.0, NAN, 1.0, 3.0};
  const std::vector<std::uint64_t> locs = {p1, p2, p3, p2};
  const std::vector<std::uint64_t> times = {t1, t2, t2, t1};
  // Loss-free: one centroid per finite value, sorted, ties in input order.
  const StoredDigest d = tdigest::build(values, 16, {}, locs, times);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.means, (std::vector<float>{1, 3, 3}));
  EXPECT_EQ(d.weights, (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(d.locations, (std::vector<std::uint64_t>{p3, p1, p2}));
  EXPECT_EQ(d.times, (std::vector<std::uint64_t>{t2, t1, t1}));
  // Forced into one centroid (δ = 1): the common ancestor (an area word) and the toc join.
  const StoredDigest one = tdigest::build(std::vector<double>{2.0, 2.0}, 1, {}, std::vector<std::uint64_t>{p1, p2},
                                          std::vector<std::uint64_t>{t1, t2});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.weights[0], 2.0f);
  EXPECT_FALSE(morton::is_point(one.locations[0]));
  EXPECT_EQ(one.locations[0], morton::common_ancestor(std::vector<std::uint64_t>{p1, p2}));
  EXPECT_EQ(one.times[0], toc::join(t1, t2));
  // Two equal point words still merge to the area word of their cell.
  const StoredDigest same = tdigest::build(std::vector<double>{2.0, 2.0}, 1, {}, std::vector<std::uint64_t>{p1, p1});
  EXPECT_FALSE(morton::is_point(same.locations[0]));
  EXPECT_EQ(morton::order_of(same.locations[0]), 29);
  EXPECT_EQ(morton::clip(same.locations[0], 28), morton::clip(p1, 28));

  EXPECT_THROW(tdigest::build(values, 16, {}, std::vector<std::uint64_t>{p1, 0, p1, p1}), UsageError);
  EXPECT_THROW(tdigest::build(values, 16, std::vector<double>{1, 1, -1, 1}), UsageError);
  EXPECT_THROW(tdigest::build(values, 16, std::vector<double>{1, 1}), UsageError);
  EXPECT_TRUE(tdigest::build(std::vector<double>{NAN, INFINITY}, 16).empty());
}

TEST(TdigestBuild, FluxWeightsSumInFloat64AndCastOnce) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.1, 3.0);
  std::vector<double> values(5000), weights(5000);
  double total = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = u(rng) * 10;
    weights[i] = u(rng);
  }
  const StoredDigest d = tdigest::build(values, 64, weights);
  double sum = 0;
  for (const float w : d.weights) sum += w;
  for (const double w : weights) total += w;
  EXPECT_NEAR(sum, total, 1e-3 * total);
  EXPECT_LE(d.size(), 70u);
  EXPECT_TRUE(std::is_sorted(d.means.begin(), d.means.end()));
}

TEST(TdigestBuild, PairwiseMergeRules) {
  const StoredDigest a = tdigest::build(std::vector<double>{1, 2, 3}, 16);
  const StoredDigest b = tdigest::build(std::vector<double>{2.5, 0.5}, 16);
  const StoredDigest empty;
  expect_same(tdigest::merge_pairwise(a, empty, 16), a, "a + empty");
  expect_same(tdigest::merge_pairwise(empty, b, 16), b, "empty + b");
  const StoredDigest ab = tdigest::merge_pairwise(a, b, 16);
  EXPECT_EQ(ab.means, (std::vector<float>{0.5, 1, 2, 2.5, 3}));
  // Equal means keep a's row before b's (stable), visible through the weights.
  StoredDigest x, y;
  x.means = {1};
  x.weights = {2};
  y.means = {1};
  y.weights = {3};
  const StoredDigest xy = tdigest::merge_pairwise(x, y, 16);
  EXPECT_EQ(xy.weights, (std::vector<float>{2, 3}));
  // Mixed channels are refused.
  StoredDigest z = y;
  z.locations = {morton::parse_decimal("1121311")};
  EXPECT_THROW(tdigest::merge_pairwise(x, z, 16), UsageError);
  const std::vector<StoredDigest> mixed = {x, z};
  EXPECT_THROW(tdigest::merge_kway(mixed, 16), UsageError);
}

}  // namespace
}  // namespace tessera::ragged
