// The epoch iterator: the generator's golden values of spec deltacells.md §8.6, the partition by
// rank and worker, batches across tiles, drop_last and even_batches.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "support/testing.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/epoch.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

TEST(EpochGenerator, GoldenValues) {
  EpochGenerator g0{0, 0, 0};
  EXPECT_EQ(g0.state(), 0x25046eca5c3a7054ull);
  std::vector<int> v(10);
  std::iota(v.begin(), v.end(), 0);
  g0.shuffle(std::span(v));
  EXPECT_EQ(v, (std::vector<int>{5, 1, 2, 8, 9, 7, 3, 0, 6, 4}));
  EpochGenerator g1{42, 1, 0};
  std::vector<int> w(7);
  std::iota(w.begin(), w.end(), 0);
  g1.shuffle(std::span(w));
  EXPECT_EQ(w, (std::vector<int>{2, 5, 4, 6, 1, 0, 3}));
  EpochGenerator cells{0, 0, 1, 0, 0};
  std::vector<int> a{0, 1, 2, 3, 4}, b{5, 6, 7, 8, 9};
  cells.shuffle(std::span(a));
  cells.shuffle(std::span(b));
  EXPECT_EQ(a, (std::vector<int>{1, 2, 4, 0, 3}));
  EXPECT_EQ(b, (std::vector<int>{5, 9, 6, 7, 8}));
}

class EpochTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 23 cells in tiles of 5 (5 tiles, the last of 3); cell c has one nonzero: gene c % 7, count c + 1.
    CsrBlock b;
    std::vector<std::int64_t> values;
    for (int c = 0; c < 23; ++c) {
      b.indices.push_back(c % 7);
      values.push_back(c + 1);
      b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
    }
    b.values = values;
    MemoryCsrSource src(7, b);
    write_dataset(src, (tmp_ / "ds").string(), {.tile_size = 5, .n_chunks = 2, .level = 1});
    ds_ = Dataset::open((tmp_ / "ds").string());
  }
  tessera::testing::TempDir tmp_;
  std::unique_ptr<Dataset> ds_;
};

TEST_F(EpochTest, CoversEveryCellOncePerEpochAcrossPairs) {
  for (const std::uint64_t world : {1u, 2u, 3u}) {
    for (const std::uint64_t workers : {1u, 2u}) {
      std::multiset<std::int64_t> seen;
      for (std::uint64_t r = 0; r < world; ++r) {
        for (std::uint64_t w = 0; w < workers; ++w) {
          EpochIterator it(*ds_, 4, {.seed = 9, .rank = r, .world_size = world, .worker = w, .num_workers = workers});
          std::uint64_t batches = 0;
          while (auto b = it.next()) {
            ++batches;
            EXPECT_LE(b->cells.size(), 4u);
            for (std::size_t i = 0; i < b->cells.size(); ++i) {
              seen.insert(b->cells[i]);
              EXPECT_EQ(b->batch.indices[i], b->cells[i] % 7);
              EXPECT_EQ(b->batch.values_float32[i], static_cast<float>(b->cells[i] + 1));
            }
          }
          EXPECT_EQ(batches, it.batch_count());
        }
      }
      EXPECT_EQ(seen.size(), 23u);
      EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()).size(), 23u);
    }
  }
}

TEST_F(EpochTest, TileOrderFollowsTheGenerator) {
  EpochIterator it(*ds_, 5, {.seed = 0});
  std::vector<std::uint64_t> order{0, 1, 2, 3, 4};
  EpochGenerator({0, 0, 0}).shuffle(std::span(order));
  EXPECT_EQ(it.tiles(), order);
  it.set_epoch(1);
  std::vector<std::uint64_t> order1{0, 1, 2, 3, 4};
  EpochGenerator({0, 1, 0}).shuffle(std::span(order1));
  EXPECT_EQ(it.tiles(), order1);
  EpochIterator plain(*ds_, 5, {.shuffle = false});
  EXPECT_EQ(plain.tiles(), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  std::vector<std::int64_t> cells;
  while (auto b = plain.next()) cells.insert(cells.end(), b->cells.begin(), b->cells.end());
  std::vector<std::int64_t> all(23);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(cells, all);
}

TEST_F(EpochTest, DropLastAndEvenBatches) {
  EpochIterator a(*ds_, 4, {.drop_last = true, .rank = 0, .world_size = 2});
  std::uint64_t n = 0;
  while (auto b = a.next()) {
    EXPECT_EQ(b->cells.size(), 4u);
    ++n;
  }
  EXPECT_EQ(n, a.batch_count());
  std::vector<std::uint64_t> counts;
  for (std::uint64_t r = 0; r < 3; ++r) {
    EpochIterator e(*ds_, 2, {.seed = 5, .rank = r, .world_size = 3, .even_batches = true});
    std::uint64_t k = 0;
    while (e.next()) ++k;
    counts.push_back(k);
  }
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_EQ(counts[1], counts[2]);
  EXPECT_THROW(EpochIterator(*ds_, 0), UsageError);
  EXPECT_THROW(EpochIterator(*ds_, 2, {.rank = 2, .world_size = 2}), UsageError);
}

}  // namespace
}  // namespace tessera::cells

namespace tessera::cells {
namespace {

// Decode-ahead changes when tiles are decoded, never what a batch holds: every batch of an epoch
// with it equals the batch without it, for batch sizes below, at and above the tile size, and
// each tile is decoded once per epoch (the decode-ahead result is found in the cache).
TEST_F(EpochTest, DecodeAheadGivesTheSameBatches) {
  for (const std::uint64_t batch : {2u, 5u, 7u, 12u}) {
    std::vector<EpochBatch> plain, ahead;
    for (const bool on : {false, true}) {
      auto ds = Dataset::open((tmp_ / "ds").string());
      EpochIterator it(*ds, batch, {.seed = 3, .values = Values::Int32, .decode_ahead = on});
      EpochBatch b;
      while (it.next(b)) (on ? ahead : plain).push_back(b);
      if (on) {
        EXPECT_EQ(ds->stats().tiles_decoded, ds->n_tiles()) << "batch " << batch;
      }
    }
    ASSERT_EQ(plain.size(), ahead.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].cells, ahead[i].cells);
      EXPECT_EQ(plain[i].batch.indptr, ahead[i].batch.indptr);
      EXPECT_EQ(plain[i].batch.indices, ahead[i].batch.indices);
      EXPECT_EQ(plain[i].batch.values_int32, ahead[i].batch.values_int32);
    }
  }
}

// Tiles are viewed in their maps or copied out with pread into reused buffers, as
// TESSERA_READ_PATH forces (the probe chooses otherwise). Every cell reads back what was written
// (cell c: gene c % 7, count c + 1) either way, also when a cache of two tiles makes later tiles
// reuse the buffers of evicted ones.
TEST_F(EpochTest, EveryReadPathGivesTheWrittenCells) {
  for (const char* path : {"mmap", "pread"}) {
    SCOPED_TRACE(path);
    const tessera::testing::ScopedEnv env("TESSERA_READ_PATH", path);
    for (const bool ahead : {false, true}) {
      auto ds = Dataset::open((tmp_ / "ds").string(), {.max_cached_tiles = 1, .max_prefetch_tiles = 2});
      EpochIterator it(*ds, 4, {.seed = 11, .values = Values::Int32, .decode_ahead = ahead});
      EpochBatch b;
      std::set<std::int64_t> seen;
      while (it.next(b)) {
        for (std::size_t r = 0; r < b.cells.size(); ++r) {
          const std::int64_t c = b.cells[r];
          seen.insert(c);
          const auto begin = static_cast<std::size_t>(b.batch.indptr[r]);
          ASSERT_EQ(b.batch.indptr[r + 1] - b.batch.indptr[r], 1) << "cell " << c;
          EXPECT_EQ(b.batch.indices[begin], static_cast<std::int32_t>(c % 7)) << "cell " << c;
          EXPECT_EQ(b.batch.values_int32[begin], static_cast<std::int32_t>(c + 1)) << "cell " << c;
        }
      }
      EXPECT_EQ(seen.size(), 23u);
    }
  }
}

TEST_F(EpochTest, DecodeAheadRules) {
  EXPECT_THROW(ds_->decode_ahead(5), UsageError);
  // A request racing get_batch of the same tile: the batch waits for it or decodes it itself.
  for (int round = 0; round < 50; ++round) {
    auto ds = Dataset::open((tmp_ / "ds").string());
    const std::uint64_t t = static_cast<std::uint64_t>(round) % ds->n_tiles();
    ds->decode_ahead(t);
    const auto [lo, hi] = ds->tile_bounds(t);
    std::vector<std::int64_t> cells;
    for (auto c = lo; c < hi; ++c) cells.push_back(static_cast<std::int64_t>(c));
    const SparseBatch b = ds->get_batch(cells, Values::Int32);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      ASSERT_EQ(b.indptr[i + 1] - b.indptr[i], 1);
      EXPECT_EQ(b.values_int32[i], cells[i] + 1);
      EXPECT_EQ(b.indices[i], cells[i] % 7);
    }
    EXPECT_EQ(ds->stats().tiles_decoded, 1u);
    ds->decode_ahead((t + 1) % ds->n_tiles());  // left running: the destructor stops it
  }
  // With room for one decoded tile only, decode-ahead would evict what the consumer reads.
  auto one = Dataset::open((tmp_ / "ds").string(), {.max_cached_tiles = 1});
  EXPECT_FALSE(one->decode_ahead(0));
}

}  // namespace
}  // namespace tessera::cells
