// Atomicity of `tessera cells convert` (spec deltacells.md §7.8): a converter killed with SIGKILL
// at a random moment leaves either no manifest or a complete dataset that `tessera cells verify`
// accepts, never a manifest pointing at missing or partial tiles; with `--overwrite` the previous
// dataset survives every kill until the new one replaces it whole. SIGTERM stops a conversion
// cleanly: exit 1, and the output directory it created is gone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "anndata_support.hpp"
#include "support/testing.hpp"

extern char** environ;

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::run_process;
using tessera::testing::TempDir;

using test::have_anndata;

// Starts the CLI with stdout and stderr discarded; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{TESSERA_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start the CLI");
  return pid;
}

// Waits for the child; returns its exit status, or 128 + signal.
int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> convert_args(const TempDir& root, const fs::path& out, bool overwrite) {
  std::vector<std::string> args{"cells", "convert", "--h5ad-glob", (root / "part_*.h5ad").string(), "--no-obs",
                                "--no-var", "--output", out.string(), "--tile-size", "150", "--chunks", "2",
                                "--level", "19", "--workers", "2", "--threads", "1"};
  if (overwrite) args.push_back("--overwrite");
  return args;
}

class ConvertKill : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_anndata()) GTEST_SKIP() << "needs /usr/bin/python3 with anndata, h5py and scipy";
    const auto w = run_process({"/usr/bin/python3", test::h5ad_fixtures_script(),
                                "write", root_.path().string(), "--cells", "3000", "--genes", "300", "--splits", "3",
                                "--layouts", "csr,csc,dense", "--seed", "21"});
    ASSERT_EQ(w.rc, 0) << w.err;
    // One uninterrupted run: the dataset every complete run must reproduce, and how long it takes.
    const auto start = std::chrono::steady_clock::now();
    const int rc = wait_for(spawn_cli(convert_args(root_, root_ / "reference", false)));
    duration_ = std::chrono::steady_clock::now() - start;
    ASSERT_EQ(rc, 0);
    reference_manifest_ = read_file_text(root_ / "reference/manifest.json");
  }

  // Kill moments, as fractions of the reference run: first a jittered sweep over the whole run
  // (and a little past it), then a bisection toward the window in which tiles are written, which
  // is a small and load-dependent share of the run (most of it can be the HDF5 scan): a kill
  // reported `early` (nothing written yet) moves the window's lower bound up, `late` (the run had
  // finished) its upper bound down.
  struct KillMoments {
    static constexpr int kSweep = 6;
    double lo = 0, hi = 1.1;
    int i = 0;
    double next(std::mt19937& rng) {
      std::uniform_real_distribution<double> jitter(0.0, 1.0);
      const int k = i++;
      if (k < kSweep) return (static_cast<double>(k) + jitter(rng)) / kSweep * 1.1;
      return lo + (hi - lo) * (0.25 + 0.5 * jitter(rng));
    }
    void early(double f) { lo = std::max(lo, f); }
    void late(double f) { hi = std::min(hi, f); }
  };
  std::chrono::microseconds delay(double fraction) const {
    return std::chrono::duration_cast<std::chrono::microseconds>(duration_ * fraction);
  }

  // A dataset directory is complete and verifies, or holds no manifest at all.
  static void expect_no_manifest_or_valid(const fs::path& out) {
    if (!fs::exists(out / "manifest.json")) return;
    const auto v = run_cli({"cells", "verify", out.string()});
    EXPECT_EQ(v.rc, 0) << out << ": " << v.out << v.err;
  }

  TempDir root_{"cells-kill"};
  std::chrono::steady_clock::duration duration_{};
  std::string reference_manifest_;
  std::mt19937 rng_{20260601};
};

TEST_F(ConvertKill, FreshOutputHasNoManifestOrAValidDataset) {
  constexpr int kMaxRuns = 16;
  int complete = 0, partial = 0;
  KillMoments moments;
  for (int i = 0; i < kMaxRuns && (i < KillMoments::kSweep || partial < 2); ++i) {
    const fs::path out = root_ / ("fresh_" + std::to_string(i));
    const double f = moments.next(rng_);
    const pid_t pid = spawn_cli(convert_args(root_, out, false));
    std::this_thread::sleep_for(delay(f));
    ::kill(pid, SIGKILL);
    const int rc = wait_for(pid);
    EXPECT_TRUE(rc == 0 || rc == 128 + SIGKILL) << rc;
    expect_no_manifest_or_valid(out);
    if (fs::exists(out / "manifest.json")) {
      ++complete;
      EXPECT_EQ(read_file_text(out / "manifest.json"), reference_manifest_);
      moments.late(f);
    } else if (fs::exists(out / "tiles/tile_000000.dct")) {
      ++partial;  // killed while tiles were being written
    } else {
      moments.early(f);
    }
  }
  RecordProperty("complete_runs", complete);
  RecordProperty("partial_runs", partial);
  EXPECT_GT(partial, 0) << "no kill landed while tiles were being written";
}

TEST_F(ConvertKill, OverwriteNeverLosesThePreviousDataset) {
  // The previous dataset: other cells (a different tile size gives a different manifest).
  const fs::path out = root_ / "dataset";
  auto args = convert_args(root_, out, false);
  *(std::find(args.begin(), args.end(), "--tile-size") + 1) = "1000";
  ASSERT_EQ(wait_for(spawn_cli(args)), 0);
  const std::string old_manifest = read_file_text(out / "manifest.json");
  ASSERT_NE(old_manifest, reference_manifest_);
  // Runs go on after the new dataset has replaced the old one: a kill must not lose that one either.
  constexpr int kMaxRuns = 16;
  int interrupted_builds = 0;
  KillMoments moments;
  for (int i = 0; i < kMaxRuns && (i < KillMoments::kSweep || interrupted_builds < 2); ++i) {
    const double f = moments.next(rng_);
    const auto manifest_time = fs::last_write_time(out / "manifest.json");
    const pid_t pid = spawn_cli(convert_args(root_, out, true));
    std::this_thread::sleep_for(delay(f));
    ::kill(pid, SIGKILL);
    const int rc = wait_for(pid);
    ASSERT_TRUE(fs::exists(out / "manifest.json")) << "run " << i << " lost the dataset";
    const std::string now = read_file_text(out / "manifest.json");
    EXPECT_TRUE(now == old_manifest || now == reference_manifest_) << "run " << i;
    const auto v = run_cli({"cells", "verify", out.string()});
    ASSERT_EQ(v.rc, 0) << "run " << i << ": " << v.err;
    const fs::path staging = root_ / ("dataset.tmp" + std::to_string(pid));
    if (fs::exists(staging / "tiles")) ++interrupted_builds;
    else if (rc == 0 || fs::last_write_time(out / "manifest.json") != manifest_time) moments.late(f);  // swapped in
    else moments.early(f);
  }
  RecordProperty("interrupted_builds", interrupted_builds);
  EXPECT_GT(interrupted_builds, 0) << "no kill landed while the new dataset was being built";
  // Whatever the kills left behind beside the dataset is only ever `<out>.tmp<pid>`.
  for (const auto& entry : fs::directory_iterator(root_.path())) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("dataset")) {
      EXPECT_TRUE(name == "dataset" || name.starts_with("dataset.tmp")) << name;
    }
  }
}

TEST_F(ConvertKill, SigtermRemovesThePartialOutput) {
  const fs::path out = root_ / "term";
  const pid_t pid = spawn_cli(convert_args(root_, out, false));
  // Wait until the writer has started (the output directory exists), then stop it.
  for (int i = 0; i < 2000 && !fs::exists(out / "tiles"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(pid, SIGTERM);
  const int rc = wait_for(pid);
  if (rc == 0) {  // it finished first: then the dataset is whole
    expect_no_manifest_or_valid(out);
    return;
  }
  EXPECT_EQ(rc, 1);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace tessera::cells
