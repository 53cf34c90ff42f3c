// Random CSR matrices and batch comparison shared by the cells dataset tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "tessera/cells/csr_source.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/tile.hpp"

namespace tessera::cells {

constexpr std::uint64_t kGenes = 70000;  // above 65,536: large gaps need gap exceptions (v2)

// `cells` cells with 0..max_nnz nonzeros each, some genes far apart and some counts above 65,535,
// so both kinds of exception frame occur (few enough for the writer's limit of nnz / 200).
// With n_genes at most 65,536 no gap needs an exception and the tiles decode in narrow form.
inline CsrBlock random_matrix(std::uint64_t seed, int cells = 61, int max_nnz = 40, std::uint64_t n_genes = kGenes) {
  std::mt19937_64 rng(seed);
  CsrBlock b;
  std::vector<std::int64_t> values;
  for (int c = 0; c < cells; ++c) {
    const auto n = static_cast<int>(rng() % static_cast<std::uint64_t>(max_nnz + 1));
    std::int64_t gene = static_cast<std::int64_t>(rng() % 3);
    // One count in big_count and one gap in big_gap needs an exception.
    const std::uint64_t big_count = max_nnz > 100 ? 500 : 17, big_gap = max_nnz > 100 ? 2000 : 29;
    const bool big_gaps = n_genes > Tile::kNarrowMaxGenes;
    for (int j = 0; j < n && gene < static_cast<std::int64_t>(n_genes); ++j) {
      b.indices.push_back(gene);
      values.push_back(rng() % big_count == 0 ? 65536 + static_cast<std::int64_t>(rng() % 100000)
                                              : 1 + static_cast<std::int64_t>(rng() % 300));
      gene += big_gaps && rng() % big_gap == 0 ? 66000 + static_cast<std::int64_t>(rng() % 2000)
                                               : 1 + static_cast<std::int64_t>(rng() % 9);
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  b.values = values;
  return b;
}

inline void expect_same(const SparseBatch& got, const SparseBatch& want) {
  EXPECT_EQ(got.indptr, want.indptr);
  EXPECT_EQ(got.indices, want.indices);
  EXPECT_EQ(got.values, want.values);
  EXPECT_EQ(got.n_genes, want.n_genes);
  EXPECT_EQ(got.nnz(), want.nnz());
  if (want.values == Values::Int32) {
    EXPECT_EQ(got.values_int32, want.values_int32);
    EXPECT_TRUE(got.values_float32.empty());
  } else {
    EXPECT_EQ(got.values_float32, want.values_float32);
    EXPECT_TRUE(got.values_int32.empty());
  }
}

}  // namespace tessera::cells
