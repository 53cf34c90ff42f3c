// Robustness of `tessera ragged build` (spec §6.1 step 2): the builder is killed (SIGKILL) during
// a first build and during --overwrite rewrites. After every kill each leaf at a final path must
// be stamped and complete — its content equal to either the previous committed leaf or the new
// one, never a mix or a part — and no previously committed leaf may be missing. A later
// uninterrupted run cleans up what the killed ones left behind.
//
// The kills land at named test points (core/test_hooks.hpp), not after a guessed delay: a traced
// uninterrupted run (TESSERA_TEST_TRACE) lists how often each point is passed — before each
// file's rename, once a leaf is stamped, after it is swapped into place, after its stats.json —
// and each kill run raises SIGKILL at one pass of one point (TESSERA_TEST_KILL_AT=<point>:<n>),
// the passes spread from the first to the last.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;

// Points over a few order-8 shards (40,000: the kill runs, not the points, are what is tested);
// `seed` changes the values only.
std::string points_csv(std::uint64_t seed) {
  std::mt19937_64 positions(1), values(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::ostringstream out;
  out.precision(17);
  out << "lat,lon,value\n";
  for (int i = 0; i < 40000; ++i)
    out << -70.3 + 0.6 * u(positions) << "," << 9.7 + 0.6 * u(positions) << "," << 100 * u(values) << "\n";
  return out.str();
}

std::vector<std::string> build_args(const fs::path& csv, const fs::path& store, bool overwrite) {
  std::vector<std::string> a = {tessera::testing::cli_path(),
                                "ragged",
                                "build",
                                "--input",
                                csv.string(),
                                "--out",
                                store.string(),
                                "--value-col",
                                "value",
                                "--cell-order",
                                "14",
                                "--shard-order",
                                "8",
                                "--chunk-order",
                                "11",
                                "--stats",
                                "--delta",
                                "64"};
  if (overwrite) a.push_back("--overwrite");
  return a;
}

using Env = std::vector<std::pair<std::string, std::string>>;

// Runs the builder to the end (or to its kill) with extra environment; returns its status.
int run_build(const std::vector<std::string>& args, const Env& env = {}) {
  return testing::wait_process(testing::start_process(args, {.env = env}));
}

#if defined(TESSERA_SANITIZED)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The passes to kill at: for each point, its first, second, quarter, half, three-quarter,
// second-to-last and last pass. Under the sanitizers, where each build costs ten times more,
// the first, half and last pass: the Release run covers the rest, and the sanitizers look for
// memory errors, which every kill run exercises alike.
std::vector<std::pair<std::string, std::uint64_t>> kill_plan(const std::map<std::string, std::uint64_t>& passes) {
  std::vector<std::pair<std::string, std::uint64_t>> plan;
  for (const auto& [point, count] : passes) {
    const std::set<std::uint64_t> ns =
        kSanitized ? std::set<std::uint64_t>{1, count / 2, count}
                   : std::set<std::uint64_t>{1, 2, count / 4, count / 2, 3 * count / 4, count - 1, count};
    for (const auto n : ns)
      if (n >= 1 && n <= count) plan.emplace_back(point, n);
  }
  return plan;
}

// Leaf key → combined content hash of every stamped leaf below `root` (readers' view: `*.zarr`
// directories only; temporaries are `*.zarr.tmp-*`). Fails the test for a stamped leaf whose
// arrays do not all decode.
std::map<std::string, std::string> committed_leaves(const fs::path& root) {
  std::map<std::string, std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_directory() || e.path().extension() != ".zarr") continue;
    io::DirectoryStore leaf(e.path().string());
    if (!hive::is_committed(hive::read_commit_stamp(leaf))) continue;
    ContentHashes hashes;
    EXPECT_NO_THROW(hashes = hash_tree(leaf)) << e.path();
    EXPECT_EQ(hashes.arrays.size(), 10u) << e.path();  // morton, count, 7 statistics, the digests
    out[fs::relative(e.path(), root).string()] = hashes.combined;
  }
  return out;
}

TEST(RaggedBuildKill, KilledBuildsNeverLeavePartialLeavesOrLoseCommittedOnes) {
  testing::TempDir dir("ragged-kill");
  testing::write_file_text(dir / "a.csv", points_csv(1));
  testing::write_file_text(dir / "b.csv", points_csv(2));
  // The two complete outcomes, built without interruption in their own stores; the first one
  // traced for the points a first build passes.
  ASSERT_EQ(run_build(build_args(dir / "a.csv", dir / "ref_a", false),
                      {{"TESSERA_TEST_TRACE", (dir / "fresh.trace").string()}}),
            0);
  ASSERT_EQ(run_build(build_args(dir / "b.csv", dir / "ref_b", false)), 0);
  const auto leaves_a = committed_leaves(dir / "ref_a"), leaves_b = committed_leaves(dir / "ref_b");
  ASSERT_GE(leaves_a.size(), 4u);
  ASSERT_EQ(leaves_a.size(), leaves_b.size());
  const auto fresh = testing::read_trace(dir / "fresh.trace");
  for (const char* point : {"ragged.leaf_stamped", "ragged.leaf_swapped", "ragged.stats_written"}) {
    ASSERT_EQ(fresh.count(point), 1u) << point;
    EXPECT_EQ(fresh.at(point), leaves_a.size()) << point;
  }
  ASSERT_GT(fresh.count("io.file_before_rename"), 0u);
  // The points a rewrite passes, traced on a copy of a complete store.
  fs::copy(dir / "ref_a", dir / "traced", fs::copy_options::recursive);
  ASSERT_EQ(run_build(build_args(dir / "b.csv", dir / "traced", true),
                      {{"TESSERA_TEST_TRACE", (dir / "overwrite.trace").string()}}),
            0);
  const auto overwrite = testing::read_trace(dir / "overwrite.trace");
  ASSERT_EQ(overwrite.count("ragged.leaf_swapped"), 1u);

  const auto check = [&](const std::map<std::string, std::string>& leaves, bool all_required) {
    for (const auto& [key, hash] : leaves) {
      ASSERT_TRUE(leaves_a.count(key)) << key;
      EXPECT_TRUE(hash == leaves_a.at(key) || hash == leaves_b.at(key)) << key << " holds neither complete leaf";
    }
    if (all_required) {
      EXPECT_EQ(leaves.size(), leaves_a.size());
    }
  };
  const auto kill_env = [](const std::pair<std::string, std::uint64_t>& p) {
    return Env{{"TESSERA_TEST_KILL_AT", p.first + ":" + std::to_string(p.second)}};
  };

  // First builds killed part-way: whatever leaves exist are complete, and a leaf swapped into
  // place before the kill stays.
  int runs = 0;
  for (const auto& point : kill_plan(fresh)) {
    SCOPED_TRACE("first build killed at " + point.first + ":" + std::to_string(point.second));
    const fs::path store = dir / ("first_" + std::to_string(runs++));
    EXPECT_EQ(run_build(build_args(dir / "a.csv", store, false), kill_env(point)), 128 + SIGKILL);
    const auto leaves = committed_leaves(store);
    check(leaves, false);
    if (point.first == "ragged.leaf_swapped" || point.first == "ragged.stats_written") {
      EXPECT_GE(leaves.size(), point.second);
    }
    for (const auto& [key, hash] : leaves) EXPECT_EQ(hash, leaves_a.at(key)) << key;
  }
  // The last of them completed by an uninterrupted rewrite.
  const fs::path store = dir / ("first_" + std::to_string(runs - 1));
  ASSERT_EQ(run_build(build_args(dir / "a.csv", store, true)), 0);
  check(committed_leaves(store), true);
  // Rewrites alternating between the two inputs, killed at every planned point of a rewrite.
  int i = 0;
  for (const auto& point : kill_plan(overwrite)) {
    SCOPED_TRACE("rewrite killed at " + point.first + ":" + std::to_string(point.second));
    EXPECT_EQ(run_build(build_args(dir / (i++ % 2 ? "a.csv" : "b.csv"), store, true), kill_env(point)), 128 + SIGKILL);
    const auto leaves = committed_leaves(store);
    check(leaves, true);
    // Nothing a reader trusts is stale: a leaf swapped in before its stats.json was rewritten
    // has none (the old one is removed before the swap), so verify accepts every leaf.
    for (const auto& [key, hash] : leaves) {
      const auto verify = testing::run_cli({"ragged", "verify", (store / key).string()});
      EXPECT_EQ(verify.rc, 0) << key << ": " << verify.out << verify.err;
    }
  }
  RecordProperty("kill_runs", runs + i);
  EXPECT_GE(runs, kSanitized ? 6 : 12);
  EXPECT_GE(i, kSanitized ? 6 : 12);
  // An uninterrupted run removes every leaf temporary and working directory the killed ones left.
  // (A hidden temporary of a single interrupted object write, `.{name}.tmp-…`, may remain: the
  // io layer removes those only on an orderly failure, and every listing skips them.)
  ASSERT_EQ(run_build(build_args(dir / "b.csv", store, true)), 0);
  EXPECT_EQ(committed_leaves(store), leaves_b);
  for (const auto& e : fs::recursive_directory_iterator(store)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".zarr.tmp-"), std::string::npos) << e.path();
    EXPECT_EQ(name.find(".zarr.old-"), std::string::npos) << e.path();
    EXPECT_EQ(name.find(".tessera-build-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace tessera::ragged
