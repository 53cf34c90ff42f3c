// GeneIndex (src/cells/gene_index.hpp), the by-gene form of a decoded tile, against a direct
// reading of the same CSR: every match of the asked genes in the wanted rows, in the documented
// order (genes as given, rows ascending), with the right counts. Tiles mix genes dense enough
// for a bitmap with rare ones kept as row lists; row counts that are and are not multiples of
// 64; narrow tiles with counts above 65,535 and int32 tiles; repeated and unordered genes; each
// gather form (the portable one too, whatever the CPU has). Builds that do not fit their byte
// budget, and tiles naming a gene beyond n_genes, keep nothing.
#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

#include "cells/gene_index.hpp"

namespace tessera::cells::detail {
namespace {

// A tile's CSR: genes ascending in each row, counts >= 1.
struct TileCsr {
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int32_t> genes, counts;
};

// `rows` rows over `n_genes` genes: genes below 40 are in about half the rows (bitmaps), the
// others in about one row in 200 (lists). One count in 50 is above 65,535.
TileCsr random_tile(std::uint64_t seed, std::uint64_t rows, std::uint64_t n_genes) {
  std::mt19937_64 rng(seed);
  TileCsr t;
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t g = 0; g < n_genes; ++g) {
      if (rng() % (g < 40 ? 2 : 200) != 0) continue;
      t.genes.push_back(static_cast<std::int32_t>(g));
      t.counts.push_back(rng() % 50 == 0 ? 65536 + static_cast<std::int32_t>(rng() % 1000)
                                         : 1 + static_cast<std::int32_t>(rng() % 300));
    }
    t.indptr.push_back(static_cast<std::int64_t>(t.genes.size()));
  }
  return t;
}

using Match = std::tuple<std::uint32_t, std::uint32_t, std::int32_t>;  // row, column, count

std::vector<Match> direct(const TileCsr& t, const std::vector<std::uint64_t>& want,
                          const std::vector<std::uint32_t>& genes) {
  std::vector<Match> out;
  for (std::size_t column = 0; column < genes.size(); ++column)
    for (std::uint64_t r = 0; r + 1 < t.indptr.size(); ++r) {
      if (!((want[r / 64] >> (r % 64)) & 1)) continue;
      for (auto j = t.indptr[r]; j < t.indptr[r + 1]; ++j)
        if (static_cast<std::uint32_t>(t.genes[static_cast<std::size_t>(j)]) == genes[column])
          out.emplace_back(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(column),
                           t.counts[static_cast<std::size_t>(j)]);
    }
  return out;
}

std::vector<Match> gathered(const GeneIndex& index, const std::vector<std::uint64_t>& want,
                            const std::vector<std::uint32_t>& genes) {
  std::uint64_t wanted = 0;
  for (const auto w : want) wanted += static_cast<std::uint64_t>(__builtin_popcountll(w));
  MatchBuffer buffer;
  const std::size_t n = index.gather(want.data(), wanted, genes, buffer);
  std::vector<Match> out;
  for (std::size_t k = 0; k < n; ++k)
    out.emplace_back(buffer.data()[k].row, buffer.data()[k].column, buffer.data()[k].count);
  return out;
}

// The narrow form of a tile: uint16 genes and counts, counts above 65535 stored as 65535 and
// listed in `wide` (as Tile::decode_narrow gives them).
struct NarrowTile {
  std::vector<std::uint16_t> genes, counts;
  std::vector<WideCount> wide;
};
NarrowTile narrow(const TileCsr& t) {
  NarrowTile n;
  for (std::size_t j = 0; j < t.genes.size(); ++j) {
    n.genes.push_back(static_cast<std::uint16_t>(t.genes[j]));
    n.counts.push_back(static_cast<std::uint16_t>(std::min(t.counts[j], 65535)));
    if (t.counts[j] > 65535) n.wide.push_back({j, static_cast<std::uint32_t>(t.counts[j])});
  }
  return n;
}

bool build_int32(GeneIndex& index, const TileCsr& t, std::uint64_t n_genes, std::uint64_t max_bytes) {
  return index.build<std::int32_t, std::int32_t>(t.indptr, t.genes, t.counts, {}, n_genes, max_bytes);
}
bool build_narrow(GeneIndex& index, const TileCsr& t, const NarrowTile& n, std::uint64_t n_genes) {
  return index.build<std::uint16_t, std::uint16_t>(t.indptr, n.genes, n.counts, n.wide, n_genes, ~0ull);
}

class GeneIndexTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { GeneIndex::use_portable_kernel_for_testing(GetParam()); }
  void TearDown() override { GeneIndex::use_portable_kernel_for_testing(false); }
};

TEST_P(GeneIndexTest, GathersWhatTheRowsHoldInBothForms) {
  constexpr std::uint64_t kGenes = 300;
  std::mt19937_64 rng(5);
  for (const std::uint64_t rows : {1u, 64u, 130u, 1000u}) {
    const TileCsr t = random_tile(rows, rows, kGenes);
    const NarrowTile n = narrow(t);
    GeneIndex wide_form, narrow_form;
    ASSERT_TRUE(build_int32(wide_form, t, kGenes, ~0ull));
    ASSERT_TRUE(build_narrow(narrow_form, t, n, kGenes));
    EXPECT_EQ(wide_form.rows(), rows);
    EXPECT_GT(wide_form.bytes(), 0u);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<std::uint64_t> want((rows + 63) / 64, 0);
      const std::uint64_t every = 1 + rng() % 20;  // from every row to one in twenty
      for (std::uint64_t r = 0; r < rows; ++r)
        if (rng() % every == 0) want[r / 64] |= std::uint64_t{1} << (r % 64);
      std::vector<std::uint32_t> genes;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 30); ++k)
        genes.push_back(static_cast<std::uint32_t>(rng() % 2 == 0 ? rng() % 40 : rng() % kGenes));
      genes.push_back(genes.front());  // a repeat
      SCOPED_TRACE(::testing::Message() << rows << " rows, trial " << trial);
      const auto truth = direct(t, want, genes);
      EXPECT_EQ(gathered(wide_form, want, genes), truth);
      EXPECT_EQ(gathered(narrow_form, want, genes), truth);
    }
  }
}

TEST_P(GeneIndexTest, NoWantedRowsOrNoGenesGatherNothing) {
  const TileCsr t = random_tile(7, 100, 50);
  GeneIndex index;
  ASSERT_TRUE(build_int32(index, t, 50, ~0ull));
  const std::vector<std::uint64_t> none(2, 0), all(2, ~0ull);
  EXPECT_TRUE(gathered(index, none, {0, 1, 2, 49}).empty());
  EXPECT_TRUE(gathered(index, all, {}).empty());
}

INSTANTIATE_TEST_SUITE_P(Kernels, GeneIndexTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Portable" : "Native"; });

TEST(GeneIndex, ABuildOverItsBudgetOrWithAGeneBeyondTheTileKeepsNothing) {
  const TileCsr t = random_tile(3, 200, 100);
  GeneIndex index;
  EXPECT_FALSE(build_int32(index, t, 100, 1000));
  EXPECT_FALSE(index.built());
  EXPECT_EQ(index.bytes(), 0u);
  ASSERT_TRUE(build_int32(index, t, 100, ~0ull));
  const std::uint64_t fits = index.bytes();
  EXPECT_TRUE(build_int32(index, t, 100, fits));
  EXPECT_FALSE(build_int32(index, t, 100, fits - 1));
  // A tile naming gene 99 checked against 50 genes (the decoder refuses such a tile first).
  EXPECT_FALSE(build_int32(index, t, 50, ~0ull));
  EXPECT_FALSE(index.built());
  index.clear();
  EXPECT_EQ(index.bytes(), 0u);
}

}  // namespace
}  // namespace tessera::cells::detail
