// The decoded-tile cache's policy and batches of a gene subset.
//
// Cache (OpenOptions::max_cached_tiles): by default a single pass keeps two decoded tiles, so
// reading the first tile again decodes it again; tiles read a second time stay decoded, so a
// second round of random batches decodes nothing; decoded_cache_bytes bounds them (a budget of
// three tiles decodes again, a budget of 0 keeps only two tiles); a tile count gives the plain
// LRU. Subsets: get_batch(cells, genes) equals select_columns(get_batch(cells), genes), which
// BatchColumns checks against the dense definition, on narrow and wide tiles, with counts above
// 65,535, both value types, repeated and unordered genes, small and large subsets, by the row
// scan and through the gene index of tiles kept decoded.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/batch_columns.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "cells/gene_index.hpp"
#include "tessera/core/error.hpp"
#include "test_matrices.hpp"

namespace tessera::cells {
namespace {

constexpr std::uint64_t kNarrowGenes = 3000;
constexpr std::uint64_t kCells = 400, kTileSize = 40;  // ten tiles

class DecodedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryCsrSource src(kNarrowGenes, random_matrix(41, static_cast<int>(kCells), 60, kNarrowGenes));
    write_dataset(src, path(), {.tile_size = kTileSize, .n_chunks = 2, .level = 1});
  }
  std::string path() const { return (tmp_ / "ds").string(); }
  // Random batches of 50 cells, each touching most tiles.
  static std::vector<std::vector<std::int64_t>> random_batches(int count) {
    std::mt19937_64 rng(3);
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(count));
    for (auto& b : out)
      for (int i = 0; i < 50; ++i) b.push_back(static_cast<std::int64_t>(rng() % kCells));
    return out;
  }
  // Tiles decoded by one round over `batches`.
  static std::uint64_t decodes_of_round(Dataset& ds, const std::vector<std::vector<std::int64_t>>& batches) {
    const auto before = ds.stats().tiles_decoded;
    SparseBatch b;
    for (const auto& cells : batches) ds.get_batch(cells, Values::Int32, b);
    return ds.stats().tiles_decoded - before;
  }
  tessera::testing::TempDir tmp_;
};

TEST_F(DecodedCacheTest, ASinglePassKeepsTwoTiles) {
  auto ds = Dataset::open(path());
  std::vector<std::int64_t> all(kCells);
  std::iota(all.begin(), all.end(), 0);
  (void)ds->get_batch(all);
  EXPECT_EQ(ds->stats().tiles_decoded, ds->n_tiles());
  (void)ds->get_batch(std::vector<std::int64_t>{kCells - 1});  // the last tile: still decoded
  EXPECT_EQ(ds->stats().tiles_decoded, ds->n_tiles());
  (void)ds->get_batch(std::vector<std::int64_t>{0});  // the first: evicted long ago
  EXPECT_EQ(ds->stats().tiles_decoded, ds->n_tiles() + 1);
}

TEST_F(DecodedCacheTest, TilesReadAgainStayDecodedWithinTheBudget) {
  const auto batches = random_batches(6);
  auto ds = Dataset::open(path());
  // Each batch touches most tiles: the second batch decodes them again, and they become hot.
  EXPECT_GT(decodes_of_round(*ds, batches), ds->n_tiles());
  EXPECT_EQ(decodes_of_round(*ds, batches), 0u);
  const SparseBatch want = ds->get_batch(batches[0]);

  // The same rounds under budgets: three tiles' worth keeps decoding, 0 keeps two tiles only.
  const std::uint64_t tile_bytes = 4 * ds->manifest().tile_nnz[0];
  for (const std::uint64_t budget : {3 * tile_bytes, std::uint64_t{0}}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    auto small = Dataset::open(path(), {.decoded_cache_bytes = budget});
    for (int round = 0; round < 3; ++round) EXPECT_GE(decodes_of_round(*small, batches), ds->n_tiles() / 2);
    expect_same(small->get_batch(batches[0]), want);
  }
  // A tile count is a plain LRU: every tile kept from the first round on.
  auto lru = Dataset::open(path(), {.max_cached_tiles = static_cast<int>(ds->n_tiles())});
  EXPECT_EQ(decodes_of_round(*lru, batches), ds->n_tiles());
  EXPECT_EQ(decodes_of_round(*lru, batches), 0u);
  EXPECT_THROW(Dataset::open(path(), {.max_cached_tiles = -1}), UsageError);
}

// A batch reads the indptr of tiles already decoded from the cache instead of fetching them;
// one of those evicted by the batch's own decodes before its turn is decoded again then.
TEST_F(DecodedCacheTest, DecodedTilesEvictedDuringTheBatchAreDecodedAgain) {
  const std::vector<std::int64_t> cells{3, 85, 130, 47, 5, 46};  // tiles 0, 2, 3, 1, 0, 1
  const SparseBatch want = Dataset::open(path())->get_batch(cells);
  auto ds = Dataset::open(path(), {.max_cached_tiles = 2});
  (void)ds->get_batch(std::vector<std::int64_t>{41});
  (void)ds->get_batch(std::vector<std::int64_t>{1});  // tiles 1 and 0 decoded, 0 the most recent
  const DatasetStats before = ds->stats();
  expect_same(ds->get_batch(cells), want);
  const DatasetStats after = ds->stats();
  EXPECT_EQ(after.tiles_fetched, before.tiles_fetched + 2);  // tiles 2 and 3 only
  EXPECT_EQ(after.tiles_decoded, before.tiles_decoded + 3);  // 2 and 3, then 1 again
}

// Batches over several tiles decode the next tile ahead while gathering the current one, and
// wait for it with the dataset's lock released: batches from four threads at once, whole and
// of a gene subset, still equal the same batches read one at a time.
TEST_F(DecodedCacheTest, ConcurrentBatchesEqualSerialOnes) {
  const auto batches = random_batches(8);
  const std::vector<std::int64_t> genes{7, 3, 200, 41};
  std::vector<SparseBatch> want, want_genes(batches.size());
  {
    auto ds = Dataset::open(path(), {.decoded_cache_bytes = 0});
    for (std::size_t i = 0; i < batches.size(); ++i) {
      want.push_back(ds->get_batch(batches[i]));
      ds->get_batch(batches[i], genes, Values::Float32, want_genes[i]);
    }
  }
  for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{1} << 30}) {
    auto ds = Dataset::open(path(), {.decoded_cache_bytes = budget});
    std::vector<std::thread> threads;
    std::vector<int> mismatches(4, 0);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        SparseBatch b;
        for (int round = 0; round < 5; ++round)
          for (std::size_t i = static_cast<std::size_t>(t); i < batches.size(); i += 2) {
            ds->get_batch(batches[i], Values::Float32, b);
            mismatches[static_cast<std::size_t>(t)] +=
                b.indices != want[i].indices || b.values_float32 != want[i].values_float32;
            ds->get_batch(batches[i], genes, Values::Float32, b);
            mismatches[static_cast<std::size_t>(t)] +=
                b.indices != want_genes[i].indices || b.values_float32 != want_genes[i].values_float32;
          }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches, std::vector<int>(4, 0)) << "budget " << budget;
  }
}

// get_batch(cells, genes) against the selection of whole rows, on `ds`, for `cells`.
void expect_subsets_equal_selection(Dataset& ds, const std::vector<std::int64_t>& cells,
                                    const std::vector<std::vector<std::int64_t>>& subsets) {
  for (const Values v : {Values::Int32, Values::Float32}) {
    const SparseBatch rows = ds.get_batch(cells, v);
    SparseBatch got;
    for (const auto& genes : subsets) {
      SCOPED_TRACE(::testing::Message() << genes.size() << " genes" << (v == Values::Int32 ? " int32" : " float32"));
      ds.get_batch(cells, genes, v, got);
      expect_same(got, select_columns(rows, genes));
    }
  }
}

// Gene lists over [0, n_genes): the ones in use (the first `in_use` columns hold nonzeros), a
// single one, repeats and an unordered list, and more than a quarter of the genes (the path
// through whole rows).
std::vector<std::vector<std::int64_t>> gene_subsets(std::uint64_t n_genes, std::uint64_t in_use, std::mt19937_64& rng) {
  std::vector<std::vector<std::int64_t>> out = {{}, {1}};
  for (const std::size_t size : {10u, 60u}) {
    std::vector<std::int64_t> g;
    for (std::size_t i = 0; i < size; ++i) g.push_back(static_cast<std::int64_t>(rng() % in_use));
    out.push_back(g);  // unordered, with chance repeats
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    out.push_back(g);  // ascending
  }
  out.push_back({5, 5, 0, 5, static_cast<std::int64_t>(n_genes - 1)});
  std::vector<std::int64_t> many(n_genes / 3);
  for (auto& g : many) g = static_cast<std::int64_t>(rng() % n_genes);
  out.push_back(many);
  return out;
}

TEST_F(DecodedCacheTest, GeneSubsetsOfNarrowTilesEqualTheSelectionOfWholeRows) {
  auto ds = Dataset::open(path());
  std::mt19937_64 rng(9);
  const auto subsets = gene_subsets(kNarrowGenes, 400, rng);
  for (const auto& cells : random_batches(3)) expect_subsets_equal_selection(*ds, cells, subsets);
  std::vector<std::int64_t> reversed(kCells);
  for (std::size_t i = 0; i < reversed.size(); ++i) reversed[i] = static_cast<std::int64_t>(kCells - 1 - i);
  expect_subsets_equal_selection(*ds, reversed, subsets);
  expect_subsets_equal_selection(*ds, {}, subsets);

  SparseBatch b;
  const std::vector<std::int64_t> cells{1, 2}, outside{static_cast<std::int64_t>(kCells)};
  const std::vector<std::int64_t> beyond{3, kNarrowGenes}, negative{-1}, one{1};
  EXPECT_THROW(ds->get_batch(cells, beyond, Values::Int32, b), UsageError);
  EXPECT_THROW(ds->get_batch(cells, negative, Values::Int32, b), UsageError);
  EXPECT_THROW(ds->get_batch(outside, one, Values::Int32, b), UsageError);
}

// Tiles kept decoded answer gene subsets through their gene index, built once per tile and
// counted in decoded_cache_bytes; a budget without room for the indexes scans rows instead. Both
// give the selection of whole rows.
TEST_F(DecodedCacheTest, GeneSubsetsOfKeptTilesGoThroughTheirGeneIndex) {
  std::mt19937_64 rng(12);
  const auto subsets = gene_subsets(kNarrowGenes, 400, rng);
  std::vector<std::int64_t> all(kCells);
  std::iota(all.begin(), all.end(), 0);
  const auto batches = random_batches(4);

  auto ds = Dataset::open(path());
  // Before any tile is reused, a subset scans rows: nothing is indexed.
  SparseBatch first;
  ds->get_batch(all, subsets[2], Values::Int32, first);
  EXPECT_EQ(ds->stats().gene_indexes_built, 0u);
  expect_same(first, select_columns(Dataset::open(path())->get_batch(all, Values::Int32), subsets[2]));
  (void)ds->get_batch(all);  // every tile decoded a second time: all kept
  for (const auto& cells : batches) expect_subsets_equal_selection(*ds, cells, subsets);
  EXPECT_EQ(ds->stats().gene_indexes_built, ds->n_tiles());
  const auto decoded = ds->stats().tiles_decoded;
  for (const auto& cells : batches) expect_subsets_equal_selection(*ds, cells, subsets);
  EXPECT_EQ(ds->stats().gene_indexes_built, ds->n_tiles()) << "indexes are built once";
  EXPECT_EQ(ds->stats().tiles_decoded, decoded);

  // The same with the portable gather (the form for CPUs without POPCNT or AVX2).
  detail::GeneIndex::use_portable_kernel_for_testing(true);
  for (const auto& cells : batches) expect_subsets_equal_selection(*ds, cells, subsets);
  detail::GeneIndex::use_portable_kernel_for_testing(false);

  // A budget that holds the decoded tiles but not their indexes: subsets scan the rows.
  SparseBatch whole = ds->get_batch(all, Values::Int32);
  const std::uint64_t tiles_bytes = whole.nnz() * 2 * sizeof(std::uint16_t);
  auto tight = Dataset::open(path(), {.decoded_cache_bytes = tiles_bytes});
  (void)tight->get_batch(all);
  (void)tight->get_batch(all);
  const auto tight_decoded = tight->stats().tiles_decoded;
  for (const auto& cells : batches) expect_subsets_equal_selection(*tight, cells, subsets);
  EXPECT_EQ(tight->stats().gene_indexes_built, 0u);
  EXPECT_EQ(tight->stats().tiles_decoded, tight_decoded) << "no kept tile was evicted for an index";
}

// A gene list asked for twice in a row is projected: each kept tile's rows restricted to those
// genes, which the batches after read directly. Every list of gene_subsets, asked for in a run of
// batches, equals the selection of whole rows from the first batch on; each tile is projected
// once per run (full-row batches in between do not break a run), and a new list replaces the
// projections of the one before.
TEST_F(DecodedCacheTest, RepeatedGeneListsAreReadFromTheirProjection) {
  std::mt19937_64 rng(13);
  const auto subsets = gene_subsets(kNarrowGenes, 400, rng);
  std::vector<std::int64_t> all(kCells);
  std::iota(all.begin(), all.end(), 0);
  const auto batches = random_batches(4);
  auto ds = Dataset::open(path());
  (void)ds->get_batch(all);
  (void)ds->get_batch(all);  // every tile kept decoded
  for (std::size_t s = 0; s < subsets.size(); ++s) {
    const auto& genes = subsets[s];
    if (genes.size() * 4 > kNarrowGenes) continue;  // read through whole rows
    SCOPED_TRACE(::testing::Message() << "list " << s << ", " << genes.size() << " genes");
    const std::uint64_t before = ds->stats().gene_projections_built;
    SparseBatch got;
    for (int round = 0; round < 2; ++round) {
      ds->get_batch(all, genes, Values::Int32, got);
      expect_same(got, select_columns(ds->get_batch(all, Values::Int32), genes));
    }
    EXPECT_EQ(ds->stats().gene_projections_built, before + ds->n_tiles()) << "projected on the second request";
    for (const Values v : {Values::Int32, Values::Float32})
      for (const auto& cells : batches) {
        ds->get_batch(cells, genes, v, got);
        expect_same(got, select_columns(ds->get_batch(cells, v), genes));
      }
    EXPECT_EQ(ds->stats().gene_projections_built, before + ds->n_tiles()) << "once per tile";
  }
  // With no tile kept decoded there is nothing to project.
  auto unkept = Dataset::open(path(), {.decoded_cache_bytes = 0});
  for (int round = 0; round < 3; ++round) expect_subsets_equal_selection(*unkept, batches[0], {subsets[3]});
  EXPECT_EQ(unkept->stats().gene_projections_built, 0u);
}

TEST(DecodedCacheWide, GeneSubsetsOfWideTilesEqualTheSelectionOfWholeRows) {
  // More than 65,536 genes: tiles decode to int32 (no narrow form), genes spread to 70,000.
  tessera::testing::TempDir tmp;
  MemoryCsrSource src(kGenes, random_matrix(43, 300, 80));
  write_dataset(src, (tmp / "ds").string(), {.tile_size = 50, .n_chunks = 2, .level = 1});
  auto ds = Dataset::open((tmp / "ds").string());
  std::mt19937_64 rng(10);
  auto subsets = gene_subsets(kGenes, kGenes, rng);
  // Genes that do hold nonzeros: every tenth stored column of the first rows.
  const SparseBatch first = ds->get_batch(std::vector<std::int64_t>{0, 1, 2, 3}, Values::Int32);
  std::vector<std::int64_t> present;
  for (std::size_t j = 0; j < first.indices.size(); j += 10) present.push_back(first.indices[j]);
  subsets.push_back(present);
  std::vector<std::int64_t> cells(300);
  for (auto& c : cells) c = static_cast<std::int64_t>(rng() % 300);
  expect_subsets_equal_selection(*ds, cells, subsets);
  EXPECT_GT(ds->stats().gene_indexes_built, 0u) << "the int32 form is indexed too";
  expect_subsets_equal_selection(*ds, cells, subsets);
  expect_subsets_equal_selection(*ds, cells, {present});  // one list in a row: projected
  EXPECT_GT(ds->stats().gene_projections_built, 0u) << "the int32 form is projected too";
}

}  // namespace
}  // namespace tessera::cells
