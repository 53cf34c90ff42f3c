// Robustness of `tessera ragged build` (spec §6.1 step 2): the builder is killed (SIGKILL) at
// random moments, during a first build and during --overwrite rewrites. After every kill each
// leaf at a final path must be stamped and complete — its content equal to either the previous
// committed leaf or the new one, never a mix or a part — and no previously committed leaf may be
// missing. A later uninterrupted run cleans up what the killed ones left behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive.hpp"

extern char** environ;

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;

// Points over a few order-8 shards; `seed` changes the values only.
std::string points_csv(std::uint64_t seed) {
  std::mt19937_64 positions(1), values(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::ostringstream out;
  out.precision(17);
  out << "lat,lon,value\n";
  for (int i = 0; i < 150000; ++i) out << -70.3 + 0.6 * u(positions) << "," << 9.7 + 0.6 * u(positions) << "," << 100 * u(values) << "\n";
  return out.str();
}

std::vector<std::string> build_args(const fs::path& csv, const fs::path& store, bool overwrite) {
  std::vector<std::string> a = {TESSERA_CLI_PATH, "ragged", "build", "--input", csv.string(), "--out", store.string(), "--value-col", "value",
                                "--cell-order", "14", "--shard-order", "8", "--chunk-order", "11", "--stats", "--delta", "64"};
  if (overwrite) a.push_back("--overwrite");
  return a;
}

// Starts the CLI with stdout/stderr discarded.
pid_t spawn(const std::vector<std::string>& args) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn failed");
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
  // The two complete outcomes, built without interruption in their own stores.
  ASSERT_EQ(wait_for(spawn(build_args(dir / "a.csv", dir / "ref_a", false))), 0);
  ASSERT_EQ(wait_for(spawn(build_args(dir / "b.csv", dir / "ref_b", false))), 0);
  const auto leaves_a = committed_leaves(dir / "ref_a"), leaves_b = committed_leaves(dir / "ref_b");
  ASSERT_GE(leaves_a.size(), 4u);
  ASSERT_EQ(leaves_a.size(), leaves_b.size());

  // How long a full run takes, to spread the kills over it.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(wait_for(spawn(build_args(dir / "a.csv", dir / "timing", false))), 0);
  const auto full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937_64 rng(42);
  const auto kill_at_random = [&](const std::vector<std::string>& args) {
    const pid_t pid = spawn(args);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(full))));
    kill(pid, SIGKILL);
    wait_for(pid);
  };
  const auto check = [&](const std::map<std::string, std::string>& leaves, bool all_required) {
    for (const auto& [key, hash] : leaves) {
      ASSERT_TRUE(leaves_a.count(key)) << key;
      EXPECT_TRUE(hash == leaves_a.at(key) || hash == leaves_b.at(key)) << key << " holds neither complete leaf";
    }
    if (all_required) {
      EXPECT_EQ(leaves.size(), leaves_a.size());
    }
  };

  // A first build killed part-way: whatever leaves exist are complete.
  kill_at_random(build_args(dir / "a.csv", dir / "store", false));
  check(committed_leaves(dir / "store"), false);
  ASSERT_EQ(wait_for(spawn(build_args(dir / "a.csv", dir / "store", true))), 0);
  check(committed_leaves(dir / "store"), true);
  // Rewrites alternating between the two inputs, killed at random moments.
  for (int i = 0; i < 6; ++i) {
    kill_at_random(build_args(dir / (i % 2 ? "a.csv" : "b.csv"), dir / "store", true));
    check(committed_leaves(dir / "store"), true);
  }
  // An uninterrupted run removes every leaf temporary and working directory the killed ones left.
  // (A hidden temporary of a single interrupted object write, `.{name}.tmp-…`, may remain: the
  // io layer removes those only on an orderly failure, and every listing skips them.)
  ASSERT_EQ(wait_for(spawn(build_args(dir / "b.csv", dir / "store", true))), 0);
  EXPECT_EQ(committed_leaves(dir / "store"), leaves_b);
  for (const auto& e : fs::recursive_directory_iterator(dir / "store")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".zarr.tmp-"), std::string::npos) << e.path();
    EXPECT_EQ(name.find(".zarr.old-"), std::string::npos) << e.path();
    EXPECT_EQ(name.find(".tessera-build-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace tessera::ragged
