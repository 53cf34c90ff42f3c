// Temporaries of interrupted writes (docs/reliability.md): an interrupted `tessera` writer leaves
// no temporary after SIGINT, SIGTERM or SIGHUP, and after a SIGKILL the next writer of the same
// output removes the one the dead process left. The writer is stopped at a named test point
// (TESSERA_TEST_PAUSE_AT=io.file_before_rename:1: the temporary is complete, the rename not yet
// done), so the signal always lands while the temporary exists.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/temporaries.hpp"

namespace tessera::io {
namespace {

namespace fs = std::filesystem;
using tessera::testing::TempDir;

// A pid no process has: above the largest pid_max Linux allows (2^22).
constexpr long kDeadPid = 2147483646;

std::vector<std::string> temporaries_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) out.push_back(e.path().filename().string());
  return out;
}

TEST(StaleTemporaries, OnlyThoseOfGoneProcessesAreRemoved) {
  TempDir dir("stale-temporaries");
  const std::string prefix = ".out.tet.tmp-";
  const std::string dead = prefix + std::to_string(kDeadPid) + "-abc123";
  const std::string live = prefix + std::to_string(::getppid()) + "-abc123";
  const std::string mine = prefix + std::to_string(::getpid()) + "-abc123";
  const std::string no_pid = prefix + "Xy12ab";  // the earlier mkstemp-only name: not judged
  const std::string other = ".other.tet.tmp-" + std::to_string(kDeadPid) + "-abc123";
  for (const auto& name : {dead, live, mine, no_pid, other}) testing::write_file_text(dir / name, "partial");
  fs::create_directories(dir / ("out.tmp" + std::to_string(kDeadPid)) / "tiles");  // a dead build directory
  EXPECT_EQ(remove_stale_temporaries(dir.path(), prefix), 1u);
  EXPECT_FALSE(fs::exists(dir / dead));
  for (const auto& name : {live, mine, no_pid, other}) EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_EQ(remove_stale_temporaries(dir.path(), "out.tmp"), 1u);
  EXPECT_FALSE(fs::exists(dir / ("out.tmp" + std::to_string(kDeadPid))));
}

TEST(StaleTemporaries, AnAtomicSinkSweepsBeforeItWrites) {
  TempDir dir("stale-sink");
  const fs::path dead = dir / (".out.bin.tmp-" + std::to_string(kDeadPid) + "-abc123");
  testing::write_file_text(dead, "left by a killed writer");
  write_file_atomic((dir / "other.bin").string(), std::as_bytes(std::span("x", 1)));  // Keep: another name anyway
  EXPECT_TRUE(fs::exists(dead));
  {
    AtomicFileSink sink((dir / "out.bin").string());
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_NE(sink.temp_path().find(".out.bin.tmp-" + std::to_string(::getpid()) + "-"), std::string::npos)
        << sink.temp_path();
  }
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

TEST(TemporaryRegistry, RegisteredNamesAreRemovedUntilReleased) {
  TempDir dir("temporary-registry");
  const fs::path a = dir / "a.tmp-1", b = dir / "b.tmp-1";
  testing::write_file_text(a, "a");
  testing::write_file_text(b, "b");
  TemporaryRegistration ra(a.string());
  {
    TemporaryRegistration rb(b.string());
    rb.release();
  }
  remove_registered_temporaries();
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
}

// The command lines of the writers under test, writing `out`.
struct Writer {
  const char* name;
  std::vector<std::string> (*args)(const fs::path& out, const fs::path& dir);
};

std::vector<std::string> synth_args(const fs::path& out, const fs::path&) {
  return {tessera::testing::cli_path(), "tet", "synth", out.string(), "--dataset", "t:f32:64x64:16x16:zstd:1"};
}

std::vector<std::string> convert_args(const fs::path& out, const fs::path& dir) {
  return {tessera::testing::cli_path(), "tet", "convert", (dir / "in.zarr").string(), out.string()};
}

std::vector<std::string> cat_args(const fs::path& out, const fs::path&) {
  return {tessera::testing::cli_path(),
          "tet",
          "cat",
          testing::tet_fixture("sample.tet").string(),
          "temperature",
          "--out",
          out.string()};
}

// Parameterised test names and failure messages show the writer's name.
void PrintTo(const Writer& w, std::ostream* os) { *os << w.name; }

const Writer kWriters[] = {{"tet synth", synth_args}, {"tet convert", convert_args}, {"tet cat", cat_args}};

// Starts `args` paused with its temporary complete and not yet renamed; returns its pid.
pid_t start_paused(const std::vector<std::string>& args, const fs::path& hooks) {
  fs::remove_all(hooks);
  fs::create_directories(hooks);
  const pid_t pid = testing::start_process(args, {.env = {{"TESSERA_TEST_PAUSE_AT", "io.file_before_rename:1"},
                                                          {"TESSERA_TEST_PAUSE_DIR", hooks.string()}}});
  testing::wait_until([&] { return fs::exists(hooks / "io.file_before_rename.reached"); }, "the writer's pause");
  return pid;
}

class InterruptedWriter : public ::testing::TestWithParam<Writer> {
 protected:
  void SetUp() override {
    // The convert input: a Zarr store exported from the conformance sample.
    const auto r =
        testing::run_cli({"tet", "export", testing::tet_fixture("sample.tet").string(), (dir_ / "in.zarr").string()});
    ASSERT_EQ(r.rc, 0) << r.err;
    fs::create_directories(out_dir_);
  }
  TempDir dir_{"interrupted-writer"};
  fs::path out_dir_ = dir_ / "out";
  fs::path hooks_ = dir_ / "hooks";
};

TEST_P(InterruptedWriter, TerminationSignalsLeaveNoTemporary) {
  const Writer& w = GetParam();
  const fs::path out = out_dir_ / "result.bin";
  testing::write_file_text(out, "the previous output");
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(std::string(w.name) + " stopped by " + ::strsignal(sig));
    const pid_t pid = start_paused(w.args(out, dir_.path()), hooks_);
    ASSERT_EQ(temporaries_in(out_dir_).size(), 1u);
    ASSERT_EQ(::kill(pid, sig), 0);
    EXPECT_EQ(testing::wait_process(pid), 128 + sig);
    EXPECT_TRUE(temporaries_in(out_dir_).empty());
    EXPECT_EQ(testing::read_file_text(out), "the previous output");
  }
}

TEST_P(InterruptedWriter, TheNextWriterRemovesWhatAKillLeft) {
  const Writer& w = GetParam();
  const fs::path out = out_dir_ / "result.bin";
  const pid_t pid = start_paused(w.args(out, dir_.path()), hooks_);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(testing::wait_process(pid), 128 + SIGKILL);
  ASSERT_EQ(temporaries_in(out_dir_).size(), 1u) << "a SIGKILL cannot be cleaned up after";
  EXPECT_FALSE(fs::exists(out));
  const auto again = testing::run_process(w.args(out, dir_.path()));
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(temporaries_in(out_dir_).empty());
}

INSTANTIATE_TEST_SUITE_P(Writers, InterruptedWriter, ::testing::ValuesIn(kWriters),
                         [](const ::testing::TestParamInfo<Writer>& info) {
                           std::string name = info.param.name;
                           for (char& c : name)
                             if (c == ' ') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace tessera::io
