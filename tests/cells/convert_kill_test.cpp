// Atomicity of `tessera cells convert` (spec deltacells.md §7.8): a converter killed with SIGKILL
// leaves either no manifest or a complete dataset that `tessera cells verify` accepts, never a
// manifest pointing at missing or partial tiles; with `--overwrite` the previous dataset survives
// every kill until the new one replaces it whole. SIGTERM stops a conversion cleanly: exit 1, and
// the output directory it created is gone.
//
// The kills land at named test points of the writer (core/test_hooks.hpp), not after a measured
// delay: an uninterrupted run traced with TESSERA_TEST_TRACE lists every point and how often it
// is passed (after each tile is written, before each file's rename, once the tiles are done,
// once the manifest is written, after the new dataset is swapped in), and each kill run raises
// SIGKILL at one of them with TESSERA_TEST_KILL_AT=<point>:<n>, the n spread over every pass.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "anndata_support.hpp"
#include "support/features.hpp"
#include "support/testing.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::run_process;
using tessera::testing::start_process;
using tessera::testing::TempDir;
using tessera::testing::wait_process;

using test::have_anndata;

using Env = std::vector<std::pair<std::string, std::string>>;

std::vector<std::string> convert_args(const TempDir& root, const fs::path& out, bool overwrite) {
  std::vector<std::string> args{tessera::testing::cli_path(),
                                "cells",
                                "convert",
                                "--h5ad-glob",
                                (root / "part_*.h5ad").string(),
                                "--no-obs",
                                "--no-var",
                                "--output",
                                out.string(),
                                "--tile-size",
                                "150",
                                "--chunks",
                                "2",
                                "--level",
                                "19",
                                "--workers",
                                "2",
                                "--threads",
                                "1"};
  if (overwrite) args.push_back("--overwrite");
  return args;
}

// Runs the converter to the end (or to its kill) with extra environment; returns its status.
int run_convert(const std::vector<std::string>& args, const Env& env = {}) {
  return wait_process(start_process(args, {.env = env}));
}

// The passes to kill at: for each point, its first, second, quarter, half, three-quarter,
// second-to-last and last pass, so the kills cover the whole write.
std::vector<std::pair<std::string, std::uint64_t>> kill_plan(const std::map<std::string, std::uint64_t>& passes) {
  std::vector<std::pair<std::string, std::uint64_t>> plan;
  for (const auto& [point, count] : passes) {
    std::set<std::uint64_t> ns = {1, 2, count / 4, count / 2, 3 * count / 4, count - 1, count};
    for (const auto n : ns)
      if (n >= 1 && n <= count) plan.emplace_back(point, n);
  }
  return plan;
}

std::string kill_at(const std::pair<std::string, std::uint64_t>& p) { return p.first + ":" + std::to_string(p.second); }

class ConvertKill : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_FEATURE(Hdf5);
    if (!have_anndata()) GTEST_SKIP() << "needs /usr/bin/python3 with anndata, h5py and scipy";
    const auto w =
        run_process({"/usr/bin/python3", test::h5ad_fixtures_script(), "write", root_.path().string(), "--cells",
                     "3000", "--genes", "300", "--splits", "3", "--layouts", "csr,csc,dense", "--seed", "21"});
    ASSERT_EQ(w.rc, 0) << w.err;
    // One uninterrupted, traced run: the dataset every complete run must reproduce, and the
    // points a fresh run passes.
    ASSERT_EQ(run_convert(convert_args(root_, root_ / "reference", false),
                          {{"TESSERA_TEST_TRACE", (root_ / "fresh.trace").string()}}),
              0);
    reference_manifest_ = read_file_text(root_ / "reference/manifest.json");
    fresh_passes_ = testing::read_trace(root_ / "fresh.trace");
    // 3,000 cells in tiles of 150.
    ASSERT_EQ(fresh_passes_["cells.tile_written"], 20u);
    ASSERT_EQ(fresh_passes_["cells.tiles_done"], 1u);
    ASSERT_EQ(fresh_passes_["cells.manifest_written"], 1u);
    ASSERT_GE(fresh_passes_["io.file_before_rename"], 21u);  // each tile, then the manifest
  }

  // A dataset directory is complete and verifies, or holds no manifest at all.
  static void expect_no_manifest_or_valid(const fs::path& out) {
    if (!fs::exists(out / "manifest.json")) return;
    const auto v = run_cli({"cells", "verify", out.string()});
    EXPECT_EQ(v.rc, 0) << out << ": " << v.out << v.err;
  }

  TempDir root_{"cells-kill"};
  std::string reference_manifest_;
  std::map<std::string, std::uint64_t> fresh_passes_;
};

TEST_F(ConvertKill, FreshOutputHasNoManifestOrAValidDataset) {
  int partial = 0, runs = 0;
  for (const auto& point : kill_plan(fresh_passes_)) {
    SCOPED_TRACE("killed at " + kill_at(point));
    const fs::path out = root_ / ("fresh_" + std::to_string(runs++));
    EXPECT_EQ(run_convert(convert_args(root_, out, false), {{"TESSERA_TEST_KILL_AT", kill_at(point)}}), 128 + SIGKILL);
    expect_no_manifest_or_valid(out);
    // Only once the manifest is written is there a dataset, and then it is the whole one.
    const bool complete = point.first == "cells.manifest_written";
    EXPECT_EQ(fs::exists(out / "manifest.json"), complete);
    if (complete) {
      EXPECT_EQ(read_file_text(out / "manifest.json"), reference_manifest_);
    }
    if (point.first == "cells.tile_written") {
      ASSERT_TRUE(fs::exists(out / "tiles"));
      const auto tiles = std::distance(fs::directory_iterator(out / "tiles"), fs::directory_iterator{});
      EXPECT_GE(static_cast<std::uint64_t>(tiles), point.second);
    }
    partial += !fs::exists(out / "manifest.json") && fs::exists(out / "tiles/tile_000000.dct");
  }
  RecordProperty("kill_runs", runs);
  EXPECT_GE(runs, 15);
  EXPECT_GT(partial, 0) << "no kill landed while tiles were being written";
}

TEST_F(ConvertKill, OverwriteNeverLosesThePreviousDataset) {
  // The previous dataset: other cells (a different tile size gives a different manifest).
  const fs::path out = root_ / "dataset";
  auto args = convert_args(root_, out, false);
  *(std::find(args.begin(), args.end(), "--tile-size") + 1) = "1000";
  ASSERT_EQ(run_convert(args), 0);
  const std::string old_manifest = read_file_text(out / "manifest.json");
  ASSERT_NE(old_manifest, reference_manifest_);
  // The points an overwrite passes, traced on a copy of the previous dataset.
  const fs::path traced = root_ / "traced";
  fs::copy(out, traced, fs::copy_options::recursive);
  ASSERT_EQ(
      run_convert(convert_args(root_, traced, true), {{"TESSERA_TEST_TRACE", (root_ / "overwrite.trace").string()}}),
      0);
  const auto passes = testing::read_trace(root_ / "overwrite.trace");
  ASSERT_EQ(passes.count("cells.dataset_swapped"), 1u);
  ASSERT_EQ(passes.at("cells.dataset_swapped"), 1u);
  auto plan = kill_plan(passes);
  // The swap last: every kill before it must leave the previous dataset in place.
  std::stable_partition(plan.begin(), plan.end(), [](const auto& p) { return p.first != "cells.dataset_swapped"; });
  int interrupted_builds = 0, runs = 0;
  for (const auto& point : plan) {
    SCOPED_TRACE("killed at " + kill_at(point));
    ++runs;
    const bool swapped = point.first == "cells.dataset_swapped";
    const pid_t pid =
        start_process(convert_args(root_, out, true), {.env = {{"TESSERA_TEST_KILL_AT", kill_at(point)}}});
    EXPECT_EQ(wait_process(pid), 128 + SIGKILL);
    ASSERT_TRUE(fs::exists(out / "manifest.json")) << "the kill lost the dataset";
    EXPECT_EQ(read_file_text(out / "manifest.json"), swapped ? reference_manifest_ : old_manifest);
    const auto v = run_cli({"cells", "verify", out.string()});
    ASSERT_EQ(v.rc, 0) << v.err;
    interrupted_builds += !swapped && fs::exists(root_ / ("dataset.tmp" + std::to_string(pid)) / "tiles");
  }
  RecordProperty("kill_runs", runs);
  EXPECT_GE(runs, 16);
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
  const fs::path hooks = root_ / "term-hooks";
  fs::create_directories(hooks);
  // Pause after the first tile, stop the converter there, and let it go on.
  const pid_t pid = start_process(
      convert_args(root_, out, false),
      {.env = {{"TESSERA_TEST_PAUSE_AT", "cells.tile_written:1"}, {"TESSERA_TEST_PAUSE_DIR", hooks.string()}}});
  const bool paused = testing::wait_until([&] { return fs::exists(hooks / "cells.tile_written.reached"); },
                                          "the converter to write its first tile");
  ::kill(pid, paused ? SIGTERM : SIGKILL);
  testing::write_file_text(hooks / "cells.tile_written.release", "");
  EXPECT_EQ(wait_process(pid), 1);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace tessera::cells
