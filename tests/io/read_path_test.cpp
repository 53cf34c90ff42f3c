// The read-path choice of streaming scans (io/read_path.hpp): TESSERA_READ_PATH forces a path and
// refuses anything else by name; Auto keeps the map for small scans, copies from sources that
// cannot be mapped, and measures once per process on a large one.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/read_path.hpp"

namespace tessera {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

constexpr std::uint64_t kLargeScan = io::kProbeMinScanBytes;

std::vector<std::byte> random_bytes(std::size_t n) {
  std::mt19937_64 rng(5);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST(ReadPath, TheEnvironmentForcesAPathAndNamesItselfWhenWrong) {
  {
    const ScopedEnv env("TESSERA_READ_PATH", "pread");
    EXPECT_EQ(io::configured_read_path(), io::ReadPath::Pread);
  }
  {
    const ScopedEnv env("TESSERA_READ_PATH", "mmap");
    EXPECT_EQ(io::configured_read_path(), io::ReadPath::Mmap);
  }
  {
    const ScopedEnv env("TESSERA_READ_PATH", "");
    EXPECT_EQ(io::configured_read_path(), io::ReadPath::Auto);
  }
  const ScopedEnv env("TESSERA_READ_PATH", "fast");
  try {
    (void)io::configured_read_path();
    FAIL() << "an unknown path was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("TESSERA_READ_PATH"), std::string::npos) << what;
    EXPECT_NE(what.find("'fast'"), std::string::npos) << what;
    EXPECT_NE(what.find("auto, mmap or pread"), std::string::npos) << what;
  }
}

TEST(ReadPath, AForcedPathIsTakenWithoutMeasuring) {
  const auto bytes = random_bytes(4 << 20);
  const auto src = io::memory_source(bytes);
  for (const char* name : {"mmap", "pread"}) {
    const ScopedEnv env("TESSERA_READ_PATH", name);
    const auto probe = io::choose_read_path(*src, 0, bytes.size(), kLargeScan);
    EXPECT_EQ(io::read_path_name(probe.chosen), name);
    EXPECT_FALSE(probe.measured);
  }
}

TEST(ReadPath, AutoCopiesFromSourcesThatCannotMapAndKeepsTheMapForSmallScans) {
  const ScopedEnv env("TESSERA_READ_PATH", "auto");
  TempDir dir;
  const auto bytes = random_bytes(4 << 20);
  testing::write_file_bytes(dir / "f.bin", bytes);
  const auto pread = io::open_file((dir / "f.bin").string(), io::OpenMode::Pread);
  auto probe = io::choose_read_path(*pread, 0, bytes.size(), kLargeScan);
  EXPECT_EQ(probe.chosen, io::ReadPath::Pread);
  EXPECT_FALSE(probe.measured);
  const auto mapped = io::open_file((dir / "f.bin").string(), io::OpenMode::MapAndRead);
  probe = io::choose_read_path(*mapped, 0, bytes.size(), kLargeScan - 1);
  EXPECT_EQ(probe.chosen, io::ReadPath::Mmap);
  EXPECT_FALSE(probe.measured);
  probe = io::choose_read_path(*mapped, 0, 1 << 20, kLargeScan);  // one piece: nothing to compare
  EXPECT_FALSE(probe.measured);
}

// Bytes in memory, or mapped without a descriptor to copy with, have nothing to choose: auto keeps
// their view and never lets them steer the process's measurement.
TEST(ReadPath, AutoViewsWhatCannotAlsoBeCopied) {
  const ScopedEnv env("TESSERA_READ_PATH", "auto");
  TempDir dir;
  const auto bytes = random_bytes(4 << 20);
  testing::write_file_bytes(dir / "f.bin", bytes);
  const auto memory = io::memory_source(bytes);
  const auto mapped_only = io::open_file((dir / "f.bin").string(), io::OpenMode::Mmap);
  for (const io::ByteSource* src : {memory.get(), mapped_only.get()}) {
    EXPECT_FALSE(src->reads_both_ways());
    const auto probe = io::choose_read_path(*src, 0, bytes.size(), kLargeScan);
    EXPECT_EQ(probe.chosen, io::ReadPath::Mmap);
    EXPECT_FALSE(probe.measured);
  }
  EXPECT_TRUE(io::open_file((dir / "f.bin").string(), io::OpenMode::MapAndRead)->reads_both_ways());
}

// An object parsed in place is the mapped source itself on the map path, and a copy in a kept
// buffer on the pread path: the same bytes, the buffer given back when the copy goes and reused
// (same storage) by the next object, also after the pool's owner is gone.
TEST(ReadPath, WholeObjectsAreCopiedIntoKeptBuffersOnThePreadPath) {
  TempDir dir;
  const auto bytes = random_bytes(3 << 20);
  testing::write_file_bytes(dir / "f.bin", bytes);
  std::shared_ptr<const io::ByteSource> mapped = io::open_file((dir / "f.bin").string(), io::OpenMode::MapAndRead);
  auto buffers = std::make_shared<io::KeptBuffers>(2);
  {
    const ScopedEnv env("TESSERA_READ_PATH", "mmap");
    EXPECT_EQ(io::read_whole_by_path(mapped, kLargeScan, buffers), mapped);
  }
  const ScopedEnv env("TESSERA_READ_PATH", "pread");
  const std::byte* storage = nullptr;
  {
    const auto copy = io::read_whole_by_path(mapped, kLargeScan, buffers);
    ASSERT_NE(copy, mapped);
    ASSERT_EQ(copy->size(), bytes.size());
    storage = copy->view(0, bytes.size());
    EXPECT_NE(storage, mapped->view(0, bytes.size()));
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), storage));
    EXPECT_EQ(copy->read_vector(100, 50), std::vector<std::byte>(bytes.begin() + 100, bytes.begin() + 150));
    EXPECT_THROW((void)copy->view(bytes.size() - 10, 11), IoError);
  }
  testing::write_file_bytes(dir / "g.bin", random_bytes(1000));
  std::shared_ptr<const io::ByteSource> next =
      io::read_whole_by_path(io::open_file((dir / "g.bin").string(), io::OpenMode::MapAndRead), kLargeScan, buffers);
  EXPECT_EQ(next->view(0, 1000), storage);  // the buffer the first copy gave back
  EXPECT_EQ(next->size(), 1000u);
  buffers.reset();  // the copy keeps the pool alive
  EXPECT_EQ(next->read_vector(0, 1000).size(), 1000u);
  next.reset();
  // What cannot also be copied is returned as it is.
  const auto memory = std::shared_ptr<const io::ByteSource>(io::memory_source(bytes));
  EXPECT_EQ(io::read_whole_by_path(memory, kLargeScan, std::make_shared<io::KeptBuffers>(1)), memory);
}

TEST(ReadPath, AutoMeasuresOnceOnALargeScanAndKeepsTheAnswer) {
  const ScopedEnv env("TESSERA_READ_PATH", "auto");
  TempDir dir;
  const auto bytes = random_bytes(24 << 20);
  testing::write_file_bytes(dir / "f.bin", bytes);
  const auto mapped = io::open_file((dir / "f.bin").string(), io::OpenMode::MapAndRead);
  const auto first = io::choose_read_path(*mapped, 1 << 20, 20 << 20, kLargeScan);
  ASSERT_TRUE(first.measured);
  EXPECT_EQ(first.bytes, std::uint64_t{8} << 20);  // 16 pieces of 1 MiB, half each way
  EXPECT_GT(first.pread_ns, 0u);
  EXPECT_GT(first.mmap_ns, 0u);
  EXPECT_EQ(first.chosen, first.pread_ns < first.mmap_ns ? io::ReadPath::Pread : io::ReadPath::Mmap);
  const auto again = io::choose_read_path(*mapped, 0, 4 << 20, kLargeScan);
  EXPECT_EQ(again.chosen, first.chosen);
  EXPECT_EQ(again.pread_ns, first.pread_ns);  // the same measurement, not a new one
}

TEST(ReadPath, WillNeedIsAHarmlessHintOnEverySource) {
  TempDir dir;
  const auto bytes = random_bytes(1 << 20);
  testing::write_file_bytes(dir / "f.bin", bytes);
  for (const auto mode : {io::OpenMode::Mmap, io::OpenMode::Pread, io::OpenMode::MapAndRead}) {
    const auto src = io::open_file((dir / "f.bin").string(), mode);
    src->will_need(0, bytes.size());
    src->will_need(bytes.size() / 2, bytes.size());  // past the end: still only a hint
    EXPECT_EQ(src->read_vector(4096, 8192), std::vector<std::byte>(bytes.begin() + 4096, bytes.begin() + 12288));
  }
  io::memory_source(bytes)->will_need(0, 16);
}

}  // namespace
}  // namespace tessera
