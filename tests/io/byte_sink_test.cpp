// AtomicFileSink never damages its destination before commit (including when a writer throws
// half way), replaces it on commit, and patches already-written bytes with write_at.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
using tessera::codec::as_bytes;
using tessera::testing::read_file_text;
using tessera::testing::TempDir;
using tessera::testing::write_file_text;

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(AtomicFileSink, UncommittedSinkLeavesDestinationAndRemovesTempFile) {
  TempDir dir;
  const auto dest = dir / "data.tet";
  write_file_text(dest, "original contents");
  std::string temp;
  {
    io::AtomicFileSink sink(dest.string());
    temp = sink.temp_path();
    // The temporary lives beside the destination, so the final rename never crosses filesystems.
    EXPECT_EQ(fs::path(temp).parent_path(), dest.parent_path());
    sink.write(as_bytes("replacement that is never committed"));
    EXPECT_EQ(sink.position(), 35u);
    EXPECT_TRUE(fs::exists(temp));
    EXPECT_EQ(read_file_text(dest), "original contents");
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(read_file_text(dest), "original contents");
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"data.tet"});
}

TEST(AtomicFileSink, ExceptionMidWriteLeavesNoTrace) {
  TempDir dir;
  const auto dest = dir / "data.tet";
  write_file_text(dest, "v1");
  const auto writer = [&] {
    io::AtomicFileSink sink(dest.string());
    sink.write(as_bytes("partial header"));
    throw std::runtime_error("encoder failed");
  };
  EXPECT_THROW(writer(), std::runtime_error);
  EXPECT_EQ(read_file_text(dest), "v1");
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"data.tet"});
}

TEST(AtomicFileSink, NewDestinationAppearsOnlyOnCommit) {
  TempDir dir;
  const auto dest = dir / "new.tet";
  {
    io::AtomicFileSink sink(dest.string());
    sink.write(as_bytes("abc"));
    EXPECT_FALSE(fs::exists(dest));
    sink.commit();
    EXPECT_TRUE(fs::exists(dest));
  }
  EXPECT_EQ(read_file_text(dest), "abc");
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"new.tet"});
  // Readable by others like any file a tool writes, not the 0600 of a temporary.
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFileSink, CommitReplacesExistingDestination) {
  TempDir dir;
  const auto dest = dir / "data.tet";
  write_file_text(dest, "a much longer original that must not leave a tail behind");
  io::AtomicFileSink sink(dest.string());
  sink.write(as_bytes("new"));
  sink.commit();
  EXPECT_EQ(read_file_text(dest), "new");
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"data.tet"});
  EXPECT_THROW(sink.write(as_bytes("x")), tessera::UsageError);
  EXPECT_THROW(sink.write_at(0, as_bytes("x")), tessera::UsageError);
  sink.commit();  // a second commit is a no-op
  EXPECT_EQ(read_file_text(dest), "new");
}

TEST(AtomicFileSink, WriteAtPatchesBytesAlreadyWritten) {
  TempDir dir;
  const auto dest = dir / "patched.bin";
  io::AtomicFileSink sink(dest.string());
  sink.write(as_bytes("HEADER??"));
  sink.write(as_bytes("payload"));
  sink.write_at(6, as_bytes("OK"));
  sink.write_at(0, as_bytes("h"));
  sink.write_at(14, as_bytes("D"));  // the very last byte
  EXPECT_EQ(sink.position(), 15u);   // patches do not move the end
  EXPECT_THROW(sink.write_at(14, as_bytes("DX")), tessera::UsageError);
  EXPECT_THROW(sink.write_at(16, as_bytes("")), tessera::UsageError);
  sink.write(as_bytes("!"));
  sink.commit();
  EXPECT_EQ(read_file_text(dest), "hEADEROKpayloaD!");
}

TEST(AtomicFileSink, DestinationInMissingDirectoryThrowsIoError) {
  TempDir dir;
  const auto dest = dir / "missing" / "out.tet";
  try {
    io::AtomicFileSink sink(dest.string());
    FAIL() << "constructing a sink in a missing directory did not throw";
  } catch (const tessera::IoError& e) {
    EXPECT_EQ(e.path(), dest.string());
    EXPECT_NE(std::string(e.what()).find((dir / "missing").string()), std::string::npos) << e.what();
  }
}

TEST(AtomicFileSink, RelativeDestinationUsesCurrentDirectory) {
  TempDir dir;
  const auto old_cwd = fs::current_path();
  fs::current_path(dir.path());
  {
    io::AtomicFileSink sink("rel.bin");
    EXPECT_EQ(fs::path(sink.temp_path()).parent_path(), fs::path("."));
    sink.write(as_bytes("r"));
    sink.commit();
  }
  fs::current_path(old_cwd);
  EXPECT_EQ(read_file_text(dir / "rel.bin"), "r");
}

TEST(WriteFileAtomic, WritesWholeFile) {
  TempDir dir;
  const auto dest = dir / "whole.bin";
  std::vector<std::byte> bytes(100'000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7);
  io::write_file_atomic(dest.string(), bytes);
  EXPECT_EQ(tessera::testing::read_file_bytes(dest), bytes);
  io::write_file_atomic(dest.string(), {});
  EXPECT_EQ(fs::file_size(dest), 0u);
}

TEST(MemorySink, CollectsAndPatches) {
  io::MemorySink sink;
  sink.write(as_bytes("abcdef"));
  sink.write_at(2, as_bytes("XY"));
  EXPECT_EQ(sink.position(), 6u);
  EXPECT_THROW(sink.write_at(5, as_bytes("12")), tessera::UsageError);
  EXPECT_FALSE(sink.committed());
  sink.commit();
  EXPECT_TRUE(sink.committed());
  const auto& b = sink.bytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), "abXYef");
}

}  // namespace
