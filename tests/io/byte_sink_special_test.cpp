// AtomicFileSink never replaces anything but a regular file or a new name (docs/reliability.md):
// symbolic links are followed and survive, devices and FIFOs are written in place, directories
// are refused untouched. Checked on the library sink and through two CLI writers.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
using tessera::codec::as_bytes;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::TempDir;
using tessera::testing::write_file_text;

// Reads a FIFO to its end on another thread (opening it blocks until a writer opens it too).
std::future<std::string> drain(const fs::path& fifo) {
  return std::async(std::launch::async, [fifo] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    std::string out;
    if (fd < 0) return std::string("(open failed)");
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
  });
}

bool is_fifo_now(const fs::path& p) { return fs::symlink_status(p).type() == fs::file_type::fifo; }

void write_text(io::ByteSink& sink, const std::string& text) {
  sink.write(as_bytes(text));
  sink.commit();
}

TEST(AtomicFileSinkTargets, FifoIsStreamedAndStaysAFifo) {
  TempDir dir("sink-fifo");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = drain(fifo);
  {
    io::AtomicFileSink sink(fifo.string());
    EXPECT_TRUE(sink.streaming());
    EXPECT_TRUE(sink.temp_path().empty());
    write_text(sink, "through the pipe");
  }
  EXPECT_EQ(got.get(), "through the pipe");
  EXPECT_TRUE(is_fifo_now(fifo));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // no temp left
}

TEST(AtomicFileSinkTargets, StreamedOutputCannotBePatched) {
  io::AtomicFileSink sink("/dev/null");
  sink.write(as_bytes(std::string("header")));
  EXPECT_THROW(sink.write_at(0, as_bytes(std::string("H"))), tessera::UnsupportedError);
}

TEST(AtomicFileSinkTargets, DevNullStaysACharacterDevice) {
  {
    io::AtomicFileSink sink("/dev/null");
    write_text(sink, "discarded");
  }
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(AtomicFileSinkTargets, SymlinkSurvivesAndItsTargetIsReplaced) {
  TempDir dir("sink-link");
  fs::create_directories(dir / "real");
  write_file_text(dir / "real/data.bin", "old");
  fs::create_symlink("real/data.bin", dir / "link");
  fs::create_symlink("link", dir / "link2");  // a chain
  {
    io::AtomicFileSink sink((dir / "link2").string());
    EXPECT_EQ(fs::path(sink.target()), fs::canonical(dir / "real/data.bin"));
    write_text(sink, "new");
  }
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_TRUE(fs::is_symlink(dir / "link2"));
  EXPECT_EQ(fs::read_symlink(dir / "link"), fs::path("real/data.bin"));
  EXPECT_EQ(read_file_text(dir / "real/data.bin"), "new");
}

TEST(AtomicFileSinkTargets, DanglingSymlinkCreatesItsTarget) {
  TempDir dir("sink-dangling");
  fs::create_directories(dir / "real");
  fs::create_symlink("real/new.bin", dir / "link");
  {
    io::AtomicFileSink sink((dir / "link").string());
    write_text(sink, "created");
  }
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file_text(dir / "real/new.bin"), "created");
}

TEST(AtomicFileSinkTargets, DirectoryIsRefusedUntouched) {
  TempDir dir("sink-dir");
  fs::create_directories(dir / "out");
  write_file_text(dir / "out/keep.txt", "kept");
  try {
    io::AtomicFileSink sink((dir / "out").string());
    FAIL() << "expected UsageError";
  } catch (const tessera::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find((dir / "out").string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(dir / "out"));
  EXPECT_EQ(read_file_text(dir / "out/keep.txt"), "kept");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

// ---- the same rules through the CLI -----------------------------------------------------------

std::vector<std::string> cat_to(const fs::path& out) {
  return {"tet", "cat", tessera::testing::tet_fixture("sample.tet").string(), "temperature", "--out", out.string()};
}

TEST(AtomicFileSinkTargets, CliCatToFifoSymlinkDevNullAndDirectory) {
  TempDir dir("sink-cli");
  const auto regular = run_cli(cat_to(dir / "plain.npy"));
  ASSERT_EQ(regular.rc, 0) << regular.err;
  const std::string npy = read_file_text(dir / "plain.npy");

  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  auto got = drain(dir / "pipe");
  const auto to_fifo = run_cli(cat_to(dir / "pipe"));
  EXPECT_EQ(to_fifo.rc, 0) << to_fifo.err;
  EXPECT_EQ(got.get(), npy);
  EXPECT_TRUE(is_fifo_now(dir / "pipe"));

  write_file_text(dir / "old.npy", "old");
  fs::create_symlink("old.npy", dir / "link.npy");
  const auto to_link = run_cli(cat_to(dir / "link.npy"));
  EXPECT_EQ(to_link.rc, 0) << to_link.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.npy"));
  EXPECT_EQ(read_file_text(dir / "old.npy"), npy);

  const auto to_null = run_cli(cat_to("/dev/null"));
  EXPECT_EQ(to_null.rc, 0) << to_null.err;
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  fs::create_directories(dir / "outdir");
  const auto to_dir = run_cli(cat_to(dir / "outdir"));
  EXPECT_EQ(to_dir.rc, 1);
  EXPECT_EQ(to_dir.err, "error: " + (dir / "outdir").string() +
                            ": output is a directory; tessera writes only to regular files, new names, devices and "
                            "FIFOs\n");
  EXPECT_TRUE(fs::is_directory(dir / "outdir"));
}

TEST(AtomicFileSinkTargets, CliSynthThroughSymlinkAndIntoDirectory) {
  TempDir dir("sink-synth");
  write_file_text(dir / "target.tet", "old");
  fs::create_symlink("target.tet", dir / "link.tet");
  const auto r = run_cli({"tet", "synth", (dir / "link.tet").string(), "--dataset", "a:f32:4x4:2x2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.tet"));
  EXPECT_EQ(read_file_text(dir / "target.tet").substr(0, 4), "TETR");

  fs::create_directories(dir / "d.tet");
  const auto refused = run_cli({"tet", "synth", (dir / "d.tet").string(), "--dataset", "a:f32:4x4:2x2"});
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.err.find("output is a directory"), std::string::npos) << refused.err;
  EXPECT_TRUE(fs::is_directory(dir / "d.tet"));
}

}  // namespace
