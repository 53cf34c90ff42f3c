// One `ragged build` per store at a time. Two concurrent `--overwrite` builds of one store used to
// both fail, each deleting the other's staging leaf; now the second is refused at once, naming the
// first one's pid, and touches nothing. The first build is stood in for by this process holding the
// store's lock (deterministic: no race to win). A staging leaf of a writer that is still alive is
// never removed, while one whose writer is gone is cleaned up by the next build. A build that fails
// before its first leaf commits leaves nothing a corrected retry is checked against.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"
#include "tessera/ragged/build.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using tessera::testing::run_cli;
using tessera::testing::RunResult;

// Two points in one order-6 shard, so the build writes one leaf.
fs::path write_points(const fs::path& dir) {
  const fs::path csv = dir / "points.csv";
  tessera::testing::write_file_text(csv, "lat,lon,value\n-70.1,9.9,1.5\n-70.1001,9.9001,2.5\n");
  return csv;
}

RunResult build(const fs::path& csv, const fs::path& store) {
  return run_cli({"ragged", "build", "--input", csv.string(), "--out", store.string(), "--value-col", "value",
                  "--cell-order", "10", "--shard-order", "6", "--overwrite"});
}

TEST(RaggedBuildLock, SecondBuildOfAStoreIsRefusedNamingTheHolder) {
  tessera::testing::TempDir dir("ragged-build-lock");
  const fs::path csv = write_points(dir.path());
  const fs::path store = dir.path() / "hive";
  fs::create_directories(store);
  const fs::path lock_path = store / build::kBuildLockName;
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string pid = std::to_string(::getpid());
  ASSERT_EQ(::pwrite(fd, pid.data(), pid.size(), 0), static_cast<ssize_t>(pid.size()));

  const RunResult refused = build(csv, store);
  EXPECT_EQ(refused.rc, 1) << refused.err;
  EXPECT_EQ(refused.err,
            "error: " + lock_path.string() + ": in use by pid " + pid + " (one ragged build per store at a time)\n");
  EXPECT_FALSE(fs::exists(store / "morton_hive.json")) << "a refused build must touch nothing";

  ::close(fd);  // the holder ends: the lock goes with it
  const RunResult built = build(csv, store);
  EXPECT_EQ(built.rc, 0) << built.err;
  EXPECT_TRUE(fs::exists(store / "morton_hive.json"));
}

TEST(RaggedBuildLock, OnlyStagingLeavesOfGoneWritersAreRemoved) {
  tessera::testing::TempDir dir("ragged-build-staging");
  const fs::path csv = write_points(dir.path());
  const fs::path store = dir.path() / "hive";
  ASSERT_EQ(build(csv, store).rc, 0);
  fs::path leaf;
  for (const auto& e : fs::recursive_directory_iterator(store))
    if (e.is_directory() && e.path().extension() == ".zarr") leaf = e.path();
  ASSERT_FALSE(leaf.empty());
  // A writer that is alive (this process) and one that is gone (pid far above pid_max).
  const fs::path live = leaf.string() + ".tmp-" + std::to_string(::getpid());
  const fs::path gone = leaf.string() + ".tmp-2147483646";
  for (const fs::path& p : {live, gone}) {
    fs::create_directories(p);
    tessera::testing::write_file_text(p / "zarr.json", "{}");
  }
  const RunResult r = build(csv, store);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(live / "zarr.json")) << "a live writer's staging leaf was removed";
  EXPECT_FALSE(fs::exists(gone)) << "a gone writer's staging leaf was left behind";
}

}  // namespace

// A typo in --value-col (or a bad row under --strict) fails the build before any leaf is written;
// the manifest it would have frozen must not be there, so a retry with other orders succeeds.
TEST(RaggedBuildLock, AFailedFirstBuildLeavesNothingARetryTripsOn) {
  tessera::testing::TempDir dir("ragged-build-retry");
  const fs::path csv = write_points(dir.path());
  const fs::path store = dir.path() / "hive";
  const RunResult typo = run_cli({"ragged", "build", "--input", csv.string(), "--out", store.string(), "--value-col",
                                  "valeu", "--cell-order", "10", "--shard-order", "6"});
  EXPECT_EQ(typo.rc, 1) << typo.err;
  EXPECT_NE(typo.err.find("valeu"), std::string::npos) << typo.err;
  EXPECT_FALSE(fs::exists(store / "morton_hive.json")) << "a build that wrote no leaf froze the store's orders";

  tessera::testing::write_file_text(dir.path() / "bad.csv", "lat,lon,value\n-70.1,9.9,1.5\n95.0,9.9,2.5\n");
  const RunResult strict =
      run_cli({"ragged", "build", "--input", (dir.path() / "bad.csv").string(), "--out", store.string(), "--value-col",
               "value", "--cell-order", "12", "--shard-order", "5", "--strict"});
  EXPECT_EQ(strict.rc, 1) << strict.err;
  EXPECT_FALSE(fs::exists(store / "morton_hive.json"));

  const RunResult retry = run_cli({"ragged", "build", "--input", csv.string(), "--out", store.string(), "--value-col",
                                   "value", "--cell-order", "11", "--shard-order", "4"});
  EXPECT_EQ(retry.rc, 0) << retry.err;
  const std::string manifest = tessera::testing::read_file_text(store / "morton_hive.json");
  EXPECT_NE(manifest.find("\"cell_order\": 11"), std::string::npos) << manifest;

  // Once a leaf is committed the orders are frozen: a build with others is refused, naming the key.
  const RunResult other = run_cli({"ragged", "build", "--input", csv.string(), "--out", store.string(), "--value-col",
                                   "value", "--cell-order", "10", "--shard-order", "4", "--overwrite"});
  EXPECT_NE(other.rc, 0) << other.err;
  EXPECT_NE(other.err.find("'cell_order'"), std::string::npos) << other.err;
}

}  // namespace tessera::ragged
