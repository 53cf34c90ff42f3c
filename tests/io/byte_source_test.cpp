// Every ByteSource kind honours the same contract: exact ranged reads, IoError past the end
// (never a short read), zero-length objects, and errors that name the object.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace {

namespace io = tessera::io;
using tessera::IoError;
using tessera::testing::TempDir;

enum class Kind { Mmap, Pread, MapAndRead, Memory, Owned, Counting };

// Names the parameter in test names and failure messages.
void PrintTo(Kind k, std::ostream* os) {
  switch (k) {
    case Kind::Mmap: *os << "Mmap"; return;
    case Kind::Pread: *os << "Pread"; return;
    case Kind::MapAndRead: *os << "MapAndRead"; return;
    case Kind::Memory: *os << "Memory"; return;
    case Kind::Owned: *os << "Owned"; return;
    case Kind::Counting: *os << "Counting"; return;
  }
}

std::vector<std::byte> pattern_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// Builds a source of `kind` over `bytes`; keeps whatever the source borrows alive.
class SourceFixture {
 public:
  SourceFixture(Kind kind, std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {
    const std::string path = (dir_ / "object.bin").string();
    switch (kind) {
      case Kind::Mmap:
      case Kind::Pread:
      case Kind::MapAndRead:
        tessera::testing::write_file_bytes(path, bytes_);
        source_ = io::open_file(path, kind == Kind::Mmap    ? io::OpenMode::Mmap
                                      : kind == Kind::Pread ? io::OpenMode::Pread
                                                            : io::OpenMode::MapAndRead);
        break;
      case Kind::Memory: source_ = io::memory_source(bytes_, "mem-object"); break;
      case Kind::Owned: source_ = io::owned_memory_source(bytes_, "owned-object"); break;
      case Kind::Counting:
        inner_ = io::memory_source(bytes_, "counted-object");
        source_ = std::make_unique<io::CountingSource>(*inner_);
        break;
    }
  }
  const io::ByteSource& source() const { return *source_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  TempDir dir_;
  std::vector<std::byte> bytes_;
  std::unique_ptr<io::ByteSource> inner_;
  std::unique_ptr<io::ByteSource> source_;
};

class ByteSourceTest : public ::testing::TestWithParam<Kind> {};

TEST_P(ByteSourceTest, ReadsArbitraryRangesExactly) {
  const SourceFixture f(GetParam(), pattern_bytes(100'003, 7));
  const auto& src = f.source();
  ASSERT_EQ(src.size(), f.bytes().size());
  EXPECT_EQ(src.read_vector(0, src.size()), f.bytes());
  std::mt19937_64 rng(11);
  for (int i = 0; i < 500; ++i) {
    const std::uint64_t off = rng() % (src.size() + 1);
    const std::uint64_t len = rng() % (src.size() - off + 1) % 5000;
    const auto got = src.read_vector(off, len);
    ASSERT_TRUE(std::equal(got.begin(), got.end(), f.bytes().begin() + static_cast<std::ptrdiff_t>(off)))
        << "range " << off << "+" << len;
    ASSERT_EQ(got.size(), len);
  }
  // The last byte, and an empty read exactly at the end, are in range.
  EXPECT_EQ(src.read_vector(src.size() - 1, 1)[0], f.bytes().back());
  EXPECT_TRUE(src.read_vector(src.size(), 0).empty());
}

TEST_P(ByteSourceTest, ReadPastTheEndThrowsAndNamesTheObject) {
  const SourceFixture f(GetParam(), pattern_bytes(4096, 3));
  const auto& src = f.source();
  std::vector<std::byte> buf(16);
  for (const auto& [off, len] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {4096 - 15, 16},
           {4096, 1},
           {4097, 0},
           {1u << 20, 4},
           // Offsets whose end overflows 64 bits must not wrap into range.
           {std::numeric_limits<std::uint64_t>::max() - 7, 16},
           {std::numeric_limits<std::uint64_t>::max(), 1}}) {
    try {
      src.read_at(off, std::span<std::byte>(buf.data(), static_cast<std::size_t>(len)));
      ADD_FAILURE() << "read " << off << "+" << len << " did not throw";
    } catch (const IoError& e) {
      EXPECT_EQ(e.path(), src.name());
      EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
    }
  }
}

TEST_P(ByteSourceTest, ZeroLengthObject) {
  const SourceFixture f(GetParam(), {});
  const auto& src = f.source();
  EXPECT_EQ(src.size(), 0u);
  EXPECT_TRUE(src.read_vector(0, 0).empty());
  std::byte b{};
  EXPECT_THROW(src.read_at(0, std::span<std::byte>(&b, 1)), IoError);
}

TEST_P(ByteSourceTest, ViewIsEitherAbsentOrTheRightBytes) {
  const SourceFixture f(GetParam(), pattern_bytes(1000, 5));
  const auto& src = f.source();
  const std::byte* p = src.view(100, 50);
  const Kind kind = GetParam();
  if (kind == Kind::Pread || kind == Kind::Counting) {
    // Pread has nothing resident; Counting disables views so every access is counted.
    EXPECT_EQ(p, nullptr);
    return;
  }
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(std::equal(p, p + 50, f.bytes().begin() + 100));
  EXPECT_THROW(src.view(990, 11), IoError);
}

TEST_P(ByteSourceTest, ConcurrentReadsAreIndependent) {
  const SourceFixture f(GetParam(), pattern_bytes(1 << 16, 9));
  const auto& src = f.source();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 2000; ++i) {
        const std::uint64_t off = rng() % (src.size() - 64);
        const auto got = src.read_vector(off, 64);
        if (!std::equal(got.begin(), got.end(), f.bytes().begin() + static_cast<std::ptrdiff_t>(off))) ++bad[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

INSTANTIATE_TEST_SUITE_P(AllKinds, ByteSourceTest,
                         ::testing::Values(Kind::Mmap, Kind::Pread, Kind::MapAndRead, Kind::Memory, Kind::Owned,
                                           Kind::Counting),
                         ::testing::PrintToStringParamName());

class FileOpenTest : public ::testing::TestWithParam<io::OpenMode> {};

TEST_P(FileOpenTest, MissingFileThrowsIoErrorNamingThePath) {
  TempDir dir;
  const std::string path = (dir / "no-such-file.tet").string();
  try {
    (void)io::open_file(path, GetParam());
    FAIL() << "opening a missing file did not throw";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(e.describe().find(path), std::string::npos) << e.describe();
  }
}

TEST_P(FileOpenTest, DirectoryIsNotARegularFile) {
  TempDir dir;
  try {
    (void)io::open_file(dir.path().string(), GetParam());
    FAIL() << "opening a directory did not throw";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), dir.path().string());
  }
}

TEST_P(FileOpenTest, NameIsThePathAsGiven) {
  TempDir dir;
  const auto path = dir / "x.bin";
  tessera::testing::write_file_text(path, "abc");
  EXPECT_EQ(io::open_file(path.string(), GetParam())->name(), path.string());
}

INSTANTIATE_TEST_SUITE_P(EveryMode, FileOpenTest,
                         ::testing::Values(io::OpenMode::Mmap, io::OpenMode::Pread, io::OpenMode::MapAndRead),
                         ::testing::PrintToStringParamName());

TEST(MemorySource, BorrowedBytesAreNotCopied) {
  std::vector<std::byte> bytes = pattern_bytes(64, 1);
  const auto src = io::memory_source(bytes);
  EXPECT_EQ(src->name(), "<memory>");
  EXPECT_EQ(src->view(0, 64), bytes.data());
  bytes[10] = std::byte{0xAB};  // the caller's buffer is what the source reads
  EXPECT_EQ(src->read_vector(10, 1)[0], std::byte{0xAB});
}

TEST(MemorySource, OwnedBytesOutliveTheCallersCopy) {
  std::unique_ptr<io::ByteSource> src;
  {
    std::vector<std::byte> bytes = pattern_bytes(64, 2);
    src = io::owned_memory_source(bytes, "owned");
  }
  EXPECT_EQ(src->read_vector(0, 64), pattern_bytes(64, 2));
  EXPECT_EQ(src->name(), "owned");
}

TEST(CountingSource, CountsEveryReadAndByte) {
  const auto bytes = pattern_bytes(1000, 4);
  const auto inner = io::memory_source(bytes, "inner");
  io::CountingSource counting(*inner);
  EXPECT_EQ(counting.name(), "inner");
  EXPECT_EQ(counting.size(), 1000u);
  EXPECT_EQ(counting.reads(), 0u);
  EXPECT_EQ(counting.bytes(), 0u);

  EXPECT_EQ(counting.read_vector(0, 10), std::vector<std::byte>(bytes.begin(), bytes.begin() + 10));
  (void)counting.read_vector(500, 200);
  (void)counting.read_vector(1000, 0);
  EXPECT_EQ(counting.reads(), 3u);
  EXPECT_EQ(counting.bytes(), 210u);
  EXPECT_EQ(counting.view(0, 1), nullptr);

  counting.reset();
  EXPECT_EQ(counting.reads(), 0u);
  EXPECT_EQ(counting.bytes(), 0u);
  (void)counting.read_vector(1, 1);
  EXPECT_EQ(counting.reads(), 1u);
  EXPECT_EQ(counting.bytes(), 1u);
}

TEST(CountingSource, CountsConcurrentReadsExactly) {
  const auto bytes = pattern_bytes(4096, 8);
  const auto inner = io::memory_source(bytes);
  io::CountingSource counting(*inner);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) (void)counting.read_vector(static_cast<std::uint64_t>(i), 3);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(counting.reads(), 4000u);
  EXPECT_EQ(counting.bytes(), 12000u);
}

}  // namespace
