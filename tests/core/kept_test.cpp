// Buffers kept between calls (core/kept.hpp): what is given back is what the next call takes,
// with its storage; no more than the limit is kept; a lease gives back on every exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/core/kept.hpp"

namespace {

using tessera::Kept;
using tessera::KeptLease;

TEST(Kept, TheNextTakerGetsTheStorageGivenBack) {
  Kept<std::vector<int>> kept(1);
  EXPECT_TRUE(kept.take().empty());  // nothing kept yet: a new value
  std::vector<int> v(1000, 7);
  const int* storage = v.data();
  kept.give(std::move(v));
  const std::vector<int> again = kept.take();
  EXPECT_EQ(again.data(), storage);
  EXPECT_EQ(again.size(), 1000u);
  EXPECT_TRUE(kept.take().empty());  // taken: no longer kept
}

TEST(Kept, KeepsNoMoreThanItsLimit) {
  Kept<std::vector<int>> kept(2);
  for (int i = 1; i <= 3; ++i) kept.give(std::vector<int>(static_cast<std::size_t>(i)));
  // The first two given are kept (last in, first out); the third was dropped.
  EXPECT_EQ(kept.take().size(), 2u);
  EXPECT_EQ(kept.take().size(), 1u);
  EXPECT_TRUE(kept.take().empty());
}

TEST(Kept, ALeaseGivesBackOnEveryExit) {
  Kept<std::vector<int>> kept(1);
  {
    KeptLease<std::vector<int>> lease(kept);
    lease->assign(64, 1);
  }
  EXPECT_EQ(kept.take().size(), 64u);
  try {
    KeptLease<std::vector<int>> lease(kept);
    lease->assign(32, 2);
    throw std::runtime_error("a failed call");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(kept.take(), std::vector<int>(32, 2));
}

TEST(Kept, ConcurrentLeasesEachGetTheirOwnValue) {
  Kept<std::vector<int>> kept(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&kept, t] {
      for (int i = 0; i < 200; ++i) {
        KeptLease<std::vector<int>> lease(kept);
        lease->assign(16, t);
        for (const int v : *lease) ASSERT_EQ(v, t);  // nobody else writes into a leased value
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(kept.take().size(), 16u);
}

}  // namespace

namespace {

TEST(Kept, GrownPrefixOnlyGrowsTheBuffer) {
  std::vector<std::byte> buffer;
  auto first = tessera::grown_prefix(buffer, 100);
  EXPECT_EQ(first.size(), 100u);
  EXPECT_EQ(buffer.size(), 100u);
  std::fill(first.begin(), first.end(), std::byte{7});
  const auto smaller = tessera::grown_prefix(buffer, 10);
  EXPECT_EQ(smaller.size(), 10u);
  EXPECT_EQ(smaller.data(), buffer.data());
  EXPECT_EQ(buffer.size(), 100u);
  EXPECT_EQ(buffer[99], std::byte{7});  // what lies past the prefix is left as it was
  EXPECT_EQ(tessera::grown_prefix(buffer, 150).size(), 150u);
  EXPECT_EQ(buffer.size(), 150u);
  EXPECT_EQ(buffer[99], std::byte{7});
}

}  // namespace
