// The test helpers themselves: process capture (separate streams, exit codes, signals, stdin,
// environment, working directory, large outputs), temporary directories and file helpers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::testing::run_process;
using tessera::testing::RunOptions;
using tessera::testing::TempDir;

TEST(RunProcess, CapturesStdoutAndStderrSeparately) {
  const auto r = run_process({"sh", "-c", "printf 'to out'; printf 'to err' >&2; printf ' more' ; exit 3"});
  EXPECT_EQ(r.rc, 3);
  EXPECT_EQ(r.out, "to out more");
  EXPECT_EQ(r.err, "to err");
  EXPECT_EQ(run_process({"true"}).rc, 0);
  EXPECT_EQ(run_process({"false"}).rc, 1);
}

TEST(RunProcess, KilledChildReportsSignalPlus128) {
  EXPECT_EQ(run_process({"sh", "-c", "kill -TERM $$"}).rc, 128 + 15);
  EXPECT_EQ(run_process({"sh", "-c", "kill -KILL $$"}).rc, 128 + 9);
}

// Megabytes on both streams: reading one stream to the end before the other would deadlock
// once the child blocks on the full pipe of the stream nobody reads.
TEST(RunProcess, LargeOutputOnBothStreamsDoesNotDeadlock) {
  const auto r =
      run_process({"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' e >&2; head -c 2000000 /dev/zero | tr '\\0' o"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err.size(), 3'000'000u);
  EXPECT_EQ(r.out.size(), 2'000'000u);
  EXPECT_EQ(r.err.find_first_not_of('e'), std::string::npos);
  EXPECT_EQ(r.out.find_first_not_of('o'), std::string::npos);
}

TEST(RunProcess, StdinIsEmptyByDefault) {
  // cat would hang forever if stdin were inherited from a terminal or left open.
  const auto r = run_process({"cat"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
}

TEST(RunProcess, StdinDataIsDeliveredWhileOutputIsDrained) {
  std::string input;
  for (int i = 0; i < 400'000; ++i) input += static_cast<char>('a' + i % 26);
  input += '\0';  // binary-safe
  input += "tail";
  const auto r = run_process({"cat"}, {.stdin_data = input});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, input);
}

TEST(RunProcess, ChildThatIgnoresStdinDoesNotKillTheCaller) {
  // The child exits without reading: writing the rest must fail quietly (EPIPE), not SIGPIPE us.
  const auto r = run_process({"sh", "-c", "exit 4"}, {.stdin_data = std::string(1 << 22, 'x')});
  EXPECT_EQ(r.rc, 4);
}

TEST(RunProcess, ChildSeesDefaultSigpipe) {
  // yes dies of SIGPIPE once head exits; with SIGPIPE ignored it would report a write error.
  const auto r = run_process({"sh", "-c", "yes | head -n 1; exit 0"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "y\n");
  EXPECT_EQ(r.err, "");
}

TEST(RunProcess, EnvironmentIsInheritedAddedAndOverridden) {
  ::setenv("TESSERA_SELFTEST_INHERITED", "kept", 1);
  ::setenv("TESSERA_SELFTEST_OVERRIDDEN", "old", 1);
  const auto r = run_process({"sh", "-c",
                              "printf '%s|%s|%s' \"$TESSERA_SELFTEST_INHERITED\" \"$TESSERA_SELFTEST_OVERRIDDEN\" "
                              "\"$TESSERA_SELFTEST_ADDED\""},
                             {.env = {{"TESSERA_SELFTEST_OVERRIDDEN", "new"}, {"TESSERA_SELFTEST_ADDED", "a=b"}}});
  ::unsetenv("TESSERA_SELFTEST_INHERITED");
  ::unsetenv("TESSERA_SELFTEST_OVERRIDDEN");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "kept|new|a=b");
  // Overridden exactly once, not appended as a second definition.
  const auto env = run_process({"env"}, {.env = {{"TESSERA_SELFTEST_ADDED", "x"}}});
  EXPECT_EQ(env.out.find("TESSERA_SELFTEST_ADDED="), env.out.rfind("TESSERA_SELFTEST_ADDED="));
}

TEST(RunProcess, WorkingDirectory) {
  TempDir dir;
  const auto r = run_process({"pwd", "-P"}, {.cwd = dir.path()});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, fs::canonical(dir.path()).string() + "\n");
  const auto here = run_process({"pwd", "-P"});
  EXPECT_EQ(here.out, fs::canonical(fs::current_path()).string() + "\n");
}

TEST(RunProcess, MissingProgramThrows) {
  EXPECT_THROW(run_process({"tessera-selftest-no-such-program"}), std::system_error);
  EXPECT_THROW(run_process({"/nonexistent/bin/tool"}), std::system_error);
  EXPECT_THROW(run_process({}), std::invalid_argument);
}

TEST(RunPython, PassesArgumentsAsSysArgv) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not available";
  const auto r = tessera::testing::run_python("import sys; print(sys.argv[1:]); sys.exit(5)", {"a b", "-c"});
  EXPECT_EQ(r.rc, 5);
  EXPECT_EQ(r.out, "['a b', '-c']\n");
  // Calling twice gives the same (cached) answer.
  EXPECT_EQ(tessera::testing::have_python_numpy(), tessera::testing::have_python_numpy());
}

TEST(RunCli, RunsTheBuiltTesseraBinary) {
  // Per the CLI contract, an unknown flag is rejected before any data is touched: exit 2.
  const auto r = tessera::testing::run_cli({"--tessera-selftest-no-such-flag"});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_FALSE(r.err.empty());
}

TEST(TempDir, CreatesUniqueDirectoriesAndRemovesThemRecursively) {
  fs::path kept;
  {
    TempDir a, b("selftest");
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(fs::is_directory(a.path()));
    EXPECT_EQ(b.path().filename().string().rfind("selftest-", 0), 0u);
    fs::create_directories(a / "x" / "y");
    tessera::testing::write_file_text(a / "x" / "y" / "f.txt", "hello");
    kept = a.path();
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(TempDir, HonoursTmpdirAndMoves) {
  TempDir outer;
  const char* old = ::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", outer.path().c_str(), 1);
  TempDir inner;
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  EXPECT_EQ(inner.path().parent_path(), outer.path());

  const fs::path p = inner.path();
  TempDir moved(std::move(inner));
  EXPECT_EQ(moved.path(), p);
  EXPECT_TRUE(inner.path().empty());  // NOLINT(bugprone-use-after-move): the moved-from state is part of the contract
  EXPECT_TRUE(fs::exists(p));
}

TEST(Files, BytesAndTextRoundTrip) {
  TempDir dir;
  std::vector<std::byte> bytes(70'000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 31 + 7);
  tessera::testing::write_file_bytes(dir / "b.bin", bytes);
  EXPECT_EQ(fs::file_size(dir / "b.bin"), bytes.size());
  EXPECT_EQ(tessera::testing::read_file_bytes(dir / "b.bin"), bytes);

  const std::string text("line\n\0binary", 12);
  tessera::testing::write_file_text(dir / "t.txt", text);
  EXPECT_EQ(tessera::testing::read_file_text(dir / "t.txt"), text);
  tessera::testing::write_file_text(dir / "t.txt", "");  // truncates
  EXPECT_EQ(tessera::testing::read_file_text(dir / "t.txt"), "");
}

TEST(Files, MissingFileErrorNamesThePath) {
  TempDir dir;
  const auto missing = dir / "missing.bin";
  try {
    tessera::testing::read_file_bytes(missing);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(tessera::testing::write_file_text(dir / "no-dir" / "f", "x"), std::runtime_error);
}

TEST(ConformanceDir, EnvironmentOverridesBuildTimeDefault) {
  EXPECT_TRUE(fs::is_directory(tessera::testing::conformance_dir())) << tessera::testing::conformance_dir();
  const char* old = ::getenv("TESSERA_CONFORMANCE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("TESSERA_CONFORMANCE_DIR", "/elsewhere/conformance", 1);
  const auto overridden = tessera::testing::conformance_dir();
  ::unsetenv("TESSERA_CONFORMANCE_DIR");
  const auto built_in = tessera::testing::conformance_dir();
  if (old) ::setenv("TESSERA_CONFORMANCE_DIR", saved.c_str(), 1);
  EXPECT_EQ(overridden, fs::path("/elsewhere/conformance"));
  EXPECT_EQ(built_in, fs::path(TESSERA_CONFORMANCE_DIR));
  // The default is the copy vendored in the repository, so a clone anywhere finds its data.
  EXPECT_EQ(fs::path(TESSERA_CONFORMANCE_DIR), tessera::testing::source_dir() / "tests" / "data" / "conformance");
  EXPECT_TRUE(fs::exists(tessera::testing::source_dir() / "CMakeLists.txt"));
}

}  // namespace
