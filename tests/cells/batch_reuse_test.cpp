// Buffer-reusing reads: Dataset::get_batch into a reused SparseBatch and EpochIterator::next into
// a reused EpochBatch give exactly what the value-returning calls give, for random cell lists of
// growing and shrinking sizes and both value types; an epoch decodes each tile once; and
// Tile::decode gives the same result into float32 as into int32 (exceptions included). The
// narrow form of decoded tiles (uint16, OpenOptions::narrow_tiles) gives the source's values,
// and a dataset reads the same batches with it as without it. A get_batch racing a decode-ahead
// of its tile helps decode it and gets the same batch, and a damaged tile still fails cleanly.
#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/epoch.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/cells/tile_encoder.hpp"
#include "tessera/core/error.hpp"
#include "test_matrices.hpp"

namespace tessera::cells {
namespace {

class BatchReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryCsrSource src(kGenes, random_matrix(11));
    write_dataset(src, (tmp_ / "ds").string(), {.tile_size = 8, .n_chunks = 3, .level = 1});
  }
  std::unique_ptr<Dataset> open(int max_cached_tiles = 2, int max_prefetch_tiles = 3) {
    return Dataset::open((tmp_ / "ds").string(),
                         {.max_cached_tiles = max_cached_tiles, .max_prefetch_tiles = max_prefetch_tiles});
  }
  tessera::testing::TempDir tmp_;
};

TEST_F(BatchReuseTest, ReusedBatchEqualsFreshBatch) {
  auto ds = open();
  auto ref = open();
  std::mt19937_64 rng(5);
  SparseBatch out;
  // Sizes grow and shrink (0 and 1 included), values switch type on the same batch.
  const std::size_t sizes[] = {40, 3, 0, 120, 1, 61, 7, 200, 2, 90};
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      std::vector<std::int64_t> cells(sizes[i]);
      for (auto& c : cells) c = static_cast<std::int64_t>(rng() % ds->n_cells());  // repeats allowed
      const Values v = (i + round) % 3 == 0 ? Values::Int32 : Values::Float32;
      SCOPED_TRACE(::testing::Message() << "round " << round << " size " << sizes[i]);
      ds->get_batch(cells, v, out);
      const SparseBatch want = ref->get_batch(cells, v);
      expect_same(out, want);
      EXPECT_EQ(ds->batch_nnz(cells), want.nnz());
      // The caller-buffer form agrees too.
      std::vector<std::int32_t> idx(want.nnz() + 3), vi(want.nnz() + 3);
      std::vector<float> vf(want.nnz());
      EXPECT_EQ(ds->get_batch_into(cells, idx, vi), want.indptr);
      EXPECT_EQ(std::vector<std::int32_t>(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(want.nnz())),
                want.indices);
      EXPECT_EQ(ds->get_batch_into(cells, idx, vf), want.indptr);
      for (std::size_t j = 0; j < want.nnz(); ++j) {
        const float expected = v == Values::Int32 ? static_cast<float>(want.values_int32[j]) : want.values_float32[j];
        ASSERT_EQ(vf[j], expected) << j;
      }
    }
  }
  // A failed request leaves the batch usable for the next one.
  const std::vector<std::int64_t> bad{0, static_cast<std::int64_t>(ds->n_cells())};
  EXPECT_THROW(ds->get_batch(bad, Values::Int32, out), UsageError);
  const std::vector<std::int64_t> good{5, 4, 5};
  ds->get_batch(good, Values::Int32, out);
  expect_same(out, ref->get_batch(good, Values::Int32));
}

TEST_F(BatchReuseTest, EpochIntoReusedBatchEqualsFreshBatches) {
  auto ds = open();
  auto ref = open();
  for (const Values v : {Values::Int32, Values::Float32}) {
    for (const std::uint64_t batch_size : {3u, 8u, 13u}) {
      EpochIterator a(*ds, batch_size, {.seed = 3, .values = v});
      EpochIterator b(*ref, batch_size, {.seed = 3, .values = v});
      a.set_epoch(2);
      b.set_epoch(2);
      EpochBatch reused;
      std::uint64_t n = 0;
      while (a.next(reused)) {
        const auto want = b.next();
        ASSERT_TRUE(want.has_value());
        EXPECT_EQ(reused.cells, want->cells);
        expect_same(reused.batch, want->batch);
        ++n;
      }
      EXPECT_FALSE(b.next().has_value());
      EXPECT_EQ(n, a.batch_count());
      EXPECT_FALSE(a.next(reused));  // stays at the end
    }
  }
}

TEST_F(BatchReuseTest, EpochDecodesEachTileOnce) {
  // Batches of half a tile, and batches spanning two tiles: every tile is decoded exactly once,
  // even with a single decoded tile cached, because a batch decodes its tiles in visiting order.
  // With room for the previous, current and prefetch_tiles (2) next tiles, each is fetched once.
  for (const std::uint64_t batch_size : {4u, 3u}) {
    auto ds = open(1, 4);
    EpochIterator it(*ds, batch_size, {.seed = 1});
    EpochBatch b;
    std::uint64_t cells = 0;
    while (it.next(b)) cells += b.cells.size();
    EXPECT_EQ(cells, ds->n_cells());
    const DatasetStats s = ds->stats();
    EXPECT_EQ(s.tiles_decoded, ds->n_tiles()) << "batch size " << batch_size;
    EXPECT_EQ(s.tiles_fetched, ds->n_tiles());
  }
}

TEST(TileDecode, Float32EqualsInt32WithExceptions) {
  // Small chunks, and chunks of more than 65,536 nonzeros (written with streaming stores).
  for (const auto& [n_cells, max_nnz, chunks] : {std::tuple{61, 40, 4u}, std::tuple{700, 900, 2u}}) {
    const CsrBlock m = random_matrix(23, n_cells, max_nnz);
    std::vector<std::uint32_t> genes(m.indices.begin(), m.indices.end());
    const auto& counts64 = std::get<std::vector<std::int64_t>>(m.values);
    std::vector<std::uint32_t> counts(counts64.begin(), counts64.end());
    const auto bytes = encode_tile({m.indptr, genes, counts, kGenes}, {.version = 2, .level = 1, .n_chunks = chunks});
    const Tile t = Tile::parse(bytes, "t.dct");
    if (n_cells > 100) {
      EXPECT_GT(t.max_chunk_nnz(), 65536u);
    }
    for (const unsigned threads : {1u, 2u}) {
      std::vector<std::int32_t> idx(t.nnz()), vi(t.nnz()), idx_f(t.nnz());
      std::vector<float> vf(t.nnz());
      t.decode(idx, vi, {.threads = threads});
      t.decode(idx_f, vf, {.threads = threads});
      EXPECT_EQ(idx, idx_f);
      for (std::size_t j = 0; j < t.nnz(); ++j) {
        ASSERT_EQ(static_cast<std::uint32_t>(idx[j]), genes[j]) << j;
        ASSERT_EQ(static_cast<std::uint32_t>(vi[j]), counts[j]) << j;
        ASSERT_EQ(vf[j], static_cast<float>(counts[j])) << j;
      }
    }
  }
}

// The source matrix's genes and counts as uint32.
std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>> columns(const CsrBlock& m) {
  const auto& counts64 = std::get<std::vector<std::int64_t>>(m.values);
  return {std::vector<std::uint32_t>(m.indices.begin(), m.indices.end()),
          std::vector<std::uint32_t>(counts64.begin(), counts64.end())};
}

TEST(TileDecode, NarrowFormHoldsTheSourceWithWideCountsApart) {
  constexpr std::uint64_t kNarrowGenes = Tile::kNarrowMaxGenes;
  for (const auto& [n_cells, max_nnz, chunks] : {std::tuple{61, 40, 4u}, std::tuple{700, 900, 2u}}) {
    const CsrBlock m = random_matrix(29, n_cells, max_nnz, kNarrowGenes);
    const auto [genes, counts] = columns(m);
    const Tile t = Tile::parse(
        encode_tile({m.indptr, genes, counts, kNarrowGenes}, {.version = 2, .level = 1, .n_chunks = chunks}), "n.dct");
    ASSERT_TRUE(t.narrow_decodable());
    std::vector<WideCount> want_wide;
    for (std::size_t j = 0; j < counts.size(); ++j)
      if (counts[j] > 65535) want_wide.push_back({j, counts[j]});
    ASSERT_FALSE(want_wide.empty());
    for (const unsigned threads : {1u, 2u}) {
      std::vector<std::uint16_t> g(t.nnz()), c(t.nnz());
      std::vector<WideCount> wide{{1, 2}};  // replaced, not appended to
      t.decode_narrow(g, c, wide, {.threads = threads});
      EXPECT_EQ(wide, want_wide);
      for (std::size_t j = 0; j < t.nnz(); ++j) {
        ASSERT_EQ(g[j], genes[j]) << j;
        ASSERT_EQ(c[j], std::min<std::uint32_t>(counts[j], 65535)) << j;
      }
    }
  }
  // One gene more and the indices no longer fit.
  const CsrBlock m = random_matrix(3, 5, 10, kNarrowGenes + 1);
  const auto [genes, counts] = columns(m);
  const Tile t = Tile::parse(encode_tile({m.indptr, genes, counts, kNarrowGenes + 1}, {.version = 2}), "w.dct");
  EXPECT_FALSE(t.narrow_decodable());
  std::vector<std::uint16_t> g(t.nnz()), c(t.nnz());
  std::vector<WideCount> wide;
  EXPECT_THROW(t.decode_narrow(g, c, wide), UsageError);
}

TEST(DatasetNarrow, BatchesEqualTheWideFormAndTheSource) {
  // 2,400 cells of up to 2,000 nonzeros: a batch of all of them (about 2.4 million nonzeros) is
  // written with streaming stores, and some counts need value exceptions.
  constexpr std::uint64_t kNarrowGenes = 60000;
  const CsrBlock m = random_matrix(31, 2400, 2000, kNarrowGenes);
  const auto [genes, counts] = columns(m);
  tessera::testing::TempDir tmp;
  MemoryCsrSource src(kNarrowGenes, m);
  write_dataset(src, (tmp / "ds").string(), {.tile_size = 700, .n_chunks = 2, .level = 1});
  auto narrow = Dataset::open((tmp / "ds").string());
  auto wide = Dataset::open((tmp / "ds").string(), {.narrow_tiles = false});
  std::mt19937_64 rng(8);
  std::vector<std::int64_t> all(2400);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(all.size() - 1 - i);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::int64_t> cells = all;
    if (round > 0) {
      cells.resize(round == 1 ? 900 : 37);
      for (auto& c : cells) c = static_cast<std::int64_t>(rng() % 2400);
    }
    for (const Values v : {Values::Int32, Values::Float32}) {
      SCOPED_TRACE(::testing::Message() << "round " << round << (v == Values::Int32 ? " int32" : " float32"));
      const SparseBatch a = narrow->get_batch(cells, v), b = wide->get_batch(cells, v);
      expect_same(a, b);
      // Against the source rows themselves.
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto lo = static_cast<std::size_t>(m.indptr[static_cast<std::size_t>(cells[i])]);
        for (std::int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
          const std::size_t src_pos = lo + static_cast<std::size_t>(k - a.indptr[i]);
          const auto kk = static_cast<std::size_t>(k);
          ASSERT_EQ(static_cast<std::uint32_t>(a.indices[kk]), genes[src_pos]);
          if (v == Values::Int32) {
            ASSERT_EQ(static_cast<std::uint32_t>(a.values_int32[kk]), counts[src_pos]);
          } else {
            ASSERT_EQ(a.values_float32[kk], static_cast<float>(counts[src_pos]));
          }
        }
      }
    }
  }
  EXPECT_GT(narrow->get_batch(all, Values::Int32).nnz() * 8, std::uint64_t{16} << 20);
}

// Tiles of eight chunks of some ten thousand nonzeros, so that a get_batch issued right after
// decode_ahead finds chunks nobody has started and decodes them itself.
TEST(DecodeAheadHelp, BatchesEqualAndEachTileIsDecodedOnce) {
  for (const std::uint64_t n_genes : {std::uint64_t{60000}, kGenes}) {  // narrow and int32 tiles
    SCOPED_TRACE(n_genes);
    const CsrBlock m = random_matrix(41, 240, 2000, n_genes);
    tessera::testing::TempDir tmp;
    MemoryCsrSource src(n_genes, m);
    write_dataset(src, (tmp / "ds").string(), {.tile_size = 80, .n_chunks = 8, .level = 1});
    auto ref = Dataset::open((tmp / "ds").string());
    for (int round = 0; round < 24; ++round) {
      auto ds = Dataset::open((tmp / "ds").string());
      const std::uint64_t t = static_cast<std::uint64_t>(round) % ds->n_tiles();
      const auto [lo, hi] = ds->tile_bounds(t);
      std::vector<std::int64_t> cells;
      for (auto c = hi; c-- > lo;) cells.push_back(static_cast<std::int64_t>(c));
      ds->get_tile(t);  // fetched already: the decode starts at once
      ASSERT_TRUE(ds->decode_ahead(t));
      const Values v = round % 2 ? Values::Int32 : Values::Float32;
      expect_same(ds->get_batch(cells, v), ref->get_batch(cells, v));
      EXPECT_EQ(ds->stats().tiles_decoded, 1u);
    }
  }
}

TEST(DecodeAheadHelp, DamagedTileFailsInItsOwnBatch) {
  const CsrBlock m = random_matrix(43, 160, 2000, 60000);
  tessera::testing::TempDir tmp;
  MemoryCsrSource src(60000, m);
  write_dataset(src, (tmp / "ds").string(), {.tile_size = 80, .n_chunks = 8, .level = 1});
  // Zero a stretch in the middle of tile 1's frames: with the CRC off the damage reaches the
  // decoder (the chunk table and indptr, at the start of the object, stay intact).
  const auto path = tmp / "ds" / "tiles" / "tile_000001.dct";
  std::vector<std::byte> bytes = tessera::testing::read_file_bytes(path);
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2),
            bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2 + 64), std::byte{0});
  tessera::testing::write_file_bytes(path, bytes);
  for (int round = 0; round < 12; ++round) {
    auto ds = Dataset::open((tmp / "ds").string(), {.verify_crc = false});
    ds->get_tile(1);
    ASSERT_TRUE(ds->decode_ahead(1));
    const std::vector<std::int64_t> cells{85, 81};
    EXPECT_THROW(ds->get_batch(cells, Values::Int32), FormatError);
    // The dataset stays usable: tile 0 reads fine.
    const std::vector<std::int64_t> good{3, 0};
    EXPECT_EQ(ds->get_batch(good, Values::Int32).n_rows(), 2u);
  }
}

}  // namespace
}  // namespace tessera::cells
