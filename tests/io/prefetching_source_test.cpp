// The batched read of io/prefetching_source.hpp: how ranges become requests, and that a
// prefetched read returns the same bytes as the wrapped source with no request of its own.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/prefetching_source.hpp"

namespace {

namespace io = tessera::io;
using io::ByteRange;

std::vector<std::byte> random_bytes(std::size_t n) {
  std::mt19937 rng(7);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// A shared_ptr to a source the test owns (the wrapper shares ownership of what it wraps).
std::shared_ptr<const io::ByteSource> borrowed(const io::ByteSource& s) {
  return {&s, [](const io::ByteSource*) {}};
}

// Fails every read that touches [bad, bad + 1): a request that goes wrong mid-prefetch.
class FailingAt final : public io::ByteSource {
 public:
  FailingAt(const io::ByteSource& inner, std::uint64_t bad) : inner_(inner), bad_(bad) {}
  std::uint64_t size() const override { return inner_.size(); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    if (offset <= bad_ && bad_ < offset + dst.size()) throw tessera::IoError("connection reset", name());
    inner_.read_at(offset, dst);
  }
  const std::string& name() const override { return inner_.name(); }

 private:
  const io::ByteSource& inner_;
  std::uint64_t bad_;
};

TEST(CoalesceRanges, MergesAcrossSmallGapsOnlyAndSortsAndDropsEmptyRanges) {
  const io::PrefetchOptions o{.max_gap = 100, .max_request = 0};
  const std::vector<ByteRange> in = {{500, 10}, {0, 10}, {109, 5}, {30, 0}, {5, 10}, {1000, 1}, {611, 4}};
  // 0..15 and 109..114 are 94 bytes apart (< 100): one request; 500..510 is 386 past that;
  // 611 is 101 past 510 (not < 100); 1000 stands alone.
  const std::vector<ByteRange> want = {{0, 114}, {500, 10}, {611, 4}, {1000, 1}};
  EXPECT_EQ(io::coalesce_ranges(in, o), want);
}

TEST(CoalesceRanges, WithoutAGapLimitOnlyOverlappingAndTouchingRangesMerge) {
  const io::PrefetchOptions o{.max_gap = 0, .max_request = 0};
  const std::vector<ByteRange> in = {{10, 10}, {20, 5}, {15, 2}, {26, 1}};
  const std::vector<ByteRange> want = {{10, 15}, {26, 1}};
  EXPECT_EQ(io::coalesce_ranges(in, o), want);
}

TEST(CoalesceRanges, SplitsLongRequestsIntoEqualPartsCoveringTheSameBytes) {
  const io::PrefetchOptions o{.max_gap = 0, .max_request = 40};
  const std::vector<ByteRange> in = {{0, 100}, {200, 40}};
  // 100 bytes in parts of at most 40: three parts of 34, 34 and 32.
  const std::vector<ByteRange> want = {{0, 34}, {34, 34}, {68, 32}, {200, 40}};
  EXPECT_EQ(io::coalesce_ranges(in, o), want);
}

TEST(PrefetchingSource, ServesPrefetchedRangesFromMemoryWithOneRequest) {
  const auto bytes = random_bytes(1 << 20);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);  // not memory-resident: view() is disabled
  const io::PrefetchingSource src(borrowed(counting));
  ASSERT_TRUE(src.fetches());

  // 60 chunks of a Parquet-like layout: small ranges with other columns' bytes in between.
  std::vector<ByteRange> ranges;
  for (std::uint64_t i = 0; i < 60; ++i) ranges.push_back({4 + i * 9000, 3000 + i});
  EXPECT_EQ(src.prefetch(ranges), 1u);
  EXPECT_EQ(counting.reads(), 1u);
  EXPECT_EQ(src.prefetch(ranges), 0u) << "ranges already held are not fetched again";

  for (const ByteRange& r : ranges) {
    std::vector<std::byte> got(r.length);
    src.read_at(r.offset, got);
    ASSERT_EQ(0, std::memcmp(got.data(), bytes.data() + r.offset, r.length)) << "range at " << r.offset;
  }
  EXPECT_EQ(counting.reads(), 1u) << "every read inside the prefetched block is served from memory";

  std::vector<std::byte> outside(16);
  src.read_at(bytes.size() - 16, outside);
  EXPECT_EQ(0, std::memcmp(outside.data(), bytes.data() + bytes.size() - 16, 16));
  EXPECT_EQ(counting.reads(), 2u) << "a read outside every block goes to the wrapped source";

  src.drop();
  EXPECT_EQ(src.held_bytes(), 0u);
  std::vector<std::byte> again(ranges[0].length);
  src.read_at(ranges[0].offset, again);
  EXPECT_EQ(counting.reads(), 3u);
}

TEST(PrefetchingSource, ParallelPartsReassembleTheObjectExactly) {
  const auto bytes = random_bytes(300'001);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);
  const io::PrefetchingSource src(borrowed(counting), {.max_gap = 0, .max_request = 10'000, .max_in_flight = 7});
  const ByteRange whole[] = {{0, bytes.size() + 50}};  // clipped to the object
  EXPECT_EQ(src.prefetch(whole), 31u);
  EXPECT_EQ(counting.reads(), 31u);
  EXPECT_EQ(src.held_bytes(), bytes.size());
  // A read spanning two parts is not inside one block: it goes to the wrapped source, intact.
  std::vector<std::byte> got(bytes.size());
  for (std::uint64_t at = 0; at < bytes.size(); at += 9'677) {
    const std::uint64_t n = std::min<std::uint64_t>(9'677, bytes.size() - at);
    src.read_at(at, std::span(got).subspan(at, n));
  }
  EXPECT_EQ(got, bytes);
}

TEST(PrefetchingSource, TheBudgetBoundsWhatIsHeld) {
  const auto bytes = random_bytes(100'000);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);
  const io::PrefetchingSource src(borrowed(counting), {.max_gap = 0, .max_request = 0, .max_bytes = 25'000});
  const ByteRange ranges[] = {{0, 10'000}, {20'000, 10'000}, {40'000, 10'000}};
  EXPECT_EQ(src.prefetch(ranges), 2u);
  EXPECT_EQ(src.held_bytes(), 20'000u);
  EXPECT_EQ(src.prefetch(ranges), 0u) << "the budget is spent";
}

TEST(PrefetchingSource, ForgetDropsOnlyTheBlocksThatOverlapTheRangesAndFreesTheirBudget) {
  const auto bytes = random_bytes(100'000);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);
  const io::PrefetchingSource src(borrowed(counting), {.max_gap = 0, .max_request = 0, .max_bytes = 30'000});
  const ByteRange first[] = {{0, 10'000}, {20'000, 10'000}, {40'000, 10'000}};
  EXPECT_EQ(src.prefetch(first), 3u);
  const ByteRange done[] = {{5'000, 1}, {25'000, 20'000}};  // the first block; the second and third
  src.forget(std::span(done).first(1));
  EXPECT_EQ(src.held_bytes(), 20'000u);
  src.forget(std::span(done).subspan(1));
  EXPECT_EQ(src.held_bytes(), 0u);
  const ByteRange later[] = {{60'000, 10'000}, {80'000, 10'000}};
  EXPECT_EQ(src.prefetch(later), 2u) << "forgotten blocks no longer count against the budget";
  const ByteRange elsewhere[] = {{0, 60'000}};
  src.forget(elsewhere);
  EXPECT_EQ(src.held_bytes(), 20'000u) << "blocks outside the ranges are kept";
  std::vector<std::byte> got(10'000);
  const auto reads = counting.reads();
  src.read_at(80'000, got);
  EXPECT_EQ(counting.reads(), reads);
  EXPECT_EQ(0, std::memcmp(got.data(), bytes.data() + 80'000, got.size()));
  src.read_at(20'000, got);  // forgotten: read again from the wrapped source, intact
  EXPECT_EQ(counting.reads(), reads + 1);
  EXPECT_EQ(0, std::memcmp(got.data(), bytes.data() + 20'000, got.size()));
}

TEST(PrefetchingSource, MemoryOfForgottenBlocksCarriesTheNextBlocksBytesOnly) {
  // The next blocks are received into the memory of forgotten ones, which is not cleared: every
  // byte a read returns must still be the new block's.
  const auto bytes = random_bytes(100'000);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);
  const io::PrefetchingSource src(borrowed(counting), {.max_gap = 0, .max_request = 0});
  for (std::uint64_t at = 0; at + 12'000 <= bytes.size(); at += 11'000) {
    const std::uint64_t length = at % 2 == 0 ? 12'000 : 7'000;  // larger and smaller than the spare
    const ByteRange r[] = {{at, length}};
    ASSERT_EQ(src.prefetch(r), 1u);
    std::vector<std::byte> got(length);
    const auto reads = counting.reads();
    src.read_at(at, got);
    EXPECT_EQ(counting.reads(), reads) << at;
    EXPECT_EQ(0, std::memcmp(got.data(), bytes.data() + at, length)) << at;
    src.forget(r);
    EXPECT_EQ(src.held_bytes(), 0u);
  }
  src.release_spares();
  const ByteRange again[] = {{1, 99'000}};
  ASSERT_EQ(src.prefetch(again), 1u);
  std::vector<std::byte> got(99'000);
  src.read_at(1, got);
  EXPECT_EQ(0, std::memcmp(got.data(), bytes.data() + 1, got.size()));
}

TEST(PrefetchingSource, AMemoryResidentSourceIsNotCopied) {
  const auto bytes = random_bytes(4096);
  const io::PrefetchingSource src(io::owned_memory_source(bytes, "object"));
  EXPECT_FALSE(src.fetches());
  const ByteRange r[] = {{0, 4096}};
  EXPECT_EQ(src.prefetch(r), 0u);
  EXPECT_EQ(src.held_bytes(), 0u);
  ASSERT_NE(src.view(0, 4096), nullptr);
  EXPECT_EQ(0, std::memcmp(src.view(100, 10), bytes.data() + 100, 10));
}

TEST(PrefetchingSource, AFailedRequestIsReportedAndTheOthersAreKept) {
  const auto bytes = random_bytes(100'000);
  const auto memory = io::memory_source(bytes, "object");
  const io::CountingSource counting(*memory);
  const FailingAt failing(counting, 55'000);
  const io::PrefetchingSource src(borrowed(failing), {.max_gap = 0, .max_request = 0, .max_in_flight = 1});
  const ByteRange ranges[] = {{0, 10'000}, {50'000, 10'000}, {90'000, 10'000}};
  EXPECT_THROW(src.prefetch(ranges), tessera::IoError);
  // One thread takes the requests in order: the first succeeds, the second fails, the third is
  // not started once a request has failed.
  EXPECT_EQ(src.held_bytes(), 10'000u);
  std::vector<std::byte> got(10'000);
  src.read_at(0, got);
  EXPECT_EQ(0, std::memcmp(got.data(), bytes.data(), got.size()));
  EXPECT_THROW(src.read_at(50'000, got), tessera::IoError) << "the failed range is read again, and fails again";
}

}  // namespace
