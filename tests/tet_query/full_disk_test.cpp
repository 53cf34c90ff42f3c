// Query outputs written through a shared memory map (a `spill` export, a transform written to a
// spill file) on a disk too small for them. A store to a mapped page the filesystem cannot back
// raises SIGBUS, which killed the CLI and any Python interpreter running the query; the space is
// now reserved before mapping, so the query fails with an IoError and exit 1. The small disk is a
// 2 MiB tmpfs mounted in a private mount namespace (`unshare -m`), so nothing outlives the test.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::RunResult;

// Runs the CLI with `args` after mounting a 2 MiB tmpfs on `small_disk`, all in a new mount namespace.
RunResult run_on_small_disk(const fs::path& small_disk, const std::vector<std::string>& args) {
  std::string command = "mount -t tmpfs -o size=2m tessera-test \"$0\" && exec \"$@\"";
  std::vector<std::string> argv{
      "unshare", "-m", "sh", "-c", command, small_disk.string(), tessera::testing::cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_process(argv);
}

std::string small_disk_unavailable() {
  if (::geteuid() != 0) return "needs root to mount a small tmpfs";
  testing::TempDir probe("full-disk-probe");
  const RunResult r =
      testing::run_process({"unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m t \"$0\"", probe.path().string()});
  return r.rc == 0 ? std::string() : "cannot mount a tmpfs in a private mount namespace: " + r.err;
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = small_disk_unavailable(); !why.empty()) GTEST_SKIP() << why;
    // 4 MiB of f32 in a file on the ordinary disk; outputs go to the small one.
    const RunResult synth =
        testing::run_cli({"tet", "synth", tet_.string(), "--dataset", "a:f32:1024x1024:256x256:raw", "--seed", "1"});
    ASSERT_EQ(synth.rc, 0) << synth.err;
    fs::create_directories(small_);
  }
  void expect_no_space(const RunResult& r) {
    EXPECT_EQ(r.rc, 1) << "exit " << r.rc << " (128 + 7 is SIGBUS)\n" << r.out << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  }
  testing::TempDir dir_{"full-disk"};
  fs::path tet_ = dir_.path() / "a.tet";
  fs::path small_ = dir_.path() / "small";
};

TEST_F(FullDisk, SpillExportFailsCleanly) {
  const std::string doc = R"({"dataset":"a","spill":")" + (small_ / "out.bin").string() + R"("})";
  expect_no_space(run_on_small_disk(
      small_, {"tet", "query", doc, "-t", tet_.string(), "-x", "-q", "--spill-allow", small_.string()}));
}

TEST_F(FullDisk, TransformSpillFailsCleanly) {
  const std::string doc = R"({"dataset":"a","transform":{"method":"center"},"write":{"target":"spill","path":")" +
                          (small_ / "c.bin").string() + R"("}})";
  expect_no_space(run_on_small_disk(
      small_, {"tet", "query", doc, "-t", tet_.string(), "-x", "-q", "--spill-allow", small_.string()}));
}

}  // namespace
}  // namespace tessera
