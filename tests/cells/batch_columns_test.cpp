// select_columns against the definition, computed densely: output column k of row r is the
// stored column positions[k] of row r; indices ascend in every row; zeros are not stored. Random
// batches of both value types, with repeated, unordered and empty position lists, and rows
// that keep nothing; a position outside the batch is a UsageError naming it.
#include "tessera/cells/batch_columns.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

SparseBatch random_batch(std::mt19937_64& rng, Values values, std::uint64_t rows, std::uint64_t genes) {
  SparseBatch b;
  b.values = values;
  b.n_genes = genes;
  std::bernoulli_distribution keep(0.2);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t g = 0; g < genes; ++g) {
      if (!keep(rng)) continue;
      b.indices.push_back(static_cast<std::int32_t>(g));
      const auto v = static_cast<std::int32_t>(rng() % 1000 + 1);
      if (values == Values::Int32) b.values_int32.push_back(v);
      else b.values_float32.push_back(static_cast<float>(v) + 0.5f);
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  return b;
}

double value_at(const SparseBatch& b, std::uint64_t row, std::uint64_t col) {
  for (auto j = b.indptr[row]; j < b.indptr[row + 1]; ++j) {
    const auto k = static_cast<std::size_t>(j);
    if (static_cast<std::uint64_t>(b.indices[k]) == col)
      return b.values == Values::Int32 ? b.values_int32[k] : b.values_float32[k];
  }
  return 0;
}

TEST(BatchColumns, EqualsTheDenseDefinition) {
  std::mt19937_64 rng(11);
  for (const Values values : {Values::Int32, Values::Float32}) {
    const SparseBatch in = random_batch(rng, values, 37, 23);
    const std::vector<std::vector<std::int64_t>> cases = {
        {22, 0, 5, 5, 17, 3}, {}, {4}, {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                        12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}};
    for (const auto& positions : cases) {
      const SparseBatch out = select_columns(in, positions);
      ASSERT_EQ(out.n_genes, positions.size());
      ASSERT_EQ(out.values, values);
      ASSERT_EQ(out.n_rows(), in.n_rows());
      for (std::uint64_t r = 0; r < in.n_rows(); ++r) {
        for (auto j = out.indptr[r] + 1; j < out.indptr[r + 1]; ++j)
          EXPECT_LT(out.indices[static_cast<std::size_t>(j - 1)], out.indices[static_cast<std::size_t>(j)]);
        for (std::uint64_t k = 0; k < positions.size(); ++k)
          EXPECT_EQ(value_at(out, r, k), value_at(in, r, static_cast<std::uint64_t>(positions[k])))
              << "row " << r << " column " << k;
      }
      const auto stored = values == Values::Int32 ? out.values_int32.size() : out.values_float32.size();
      EXPECT_EQ(stored, out.indices.size());
      EXPECT_EQ(static_cast<std::uint64_t>(out.indptr.back()), out.indices.size());
    }
  }
}

// A permutation of a batch above the threaded-path threshold (2^21 nonzeros): applying it and
// then its inverse gives the batch back, every row's indices ascend, and sampled entries match
// the definition.
TEST(BatchColumns, ALargePermutationRoundTrips) {
  std::mt19937_64 rng(5);
  SparseBatch in;
  in.values = Values::Float32;
  in.n_genes = 1000;
  std::bernoulli_distribution keep(0.75);
  for (std::uint64_t r = 0; r < 3001; ++r) {
    for (std::int32_t g = 0; g < 1000; ++g)
      if (keep(rng)) {
        in.indices.push_back(g);
        in.values_float32.push_back(static_cast<float>(rng() % 100000));
      }
    in.indptr.push_back(static_cast<std::int64_t>(in.indices.size()));
  }
  ASSERT_GT(in.indices.size(), std::size_t{1} << 21);
  std::vector<std::int64_t> perm(1000), inverse(1000);
  for (std::int64_t k = 0; k < 1000; ++k) perm[static_cast<std::size_t>(k)] = k;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::size_t k = 0; k < perm.size(); ++k)
    inverse[static_cast<std::size_t>(perm[k])] = static_cast<std::int64_t>(k);
  const SparseBatch permuted = select_columns(in, perm);
  ASSERT_EQ(permuted.indptr, in.indptr);  // a permutation keeps every row's length
  for (std::uint64_t r = 0; r < permuted.n_rows(); ++r)
    for (auto j = permuted.indptr[r] + 1; j < permuted.indptr[r + 1]; ++j)
      ASSERT_LT(permuted.indices[static_cast<std::size_t>(j - 1)], permuted.indices[static_cast<std::size_t>(j)]);
  for (const std::uint64_t r : {std::uint64_t{0}, std::uint64_t{1500}, std::uint64_t{3000}})
    for (std::uint64_t k = 0; k < 1000; k += 37)
      EXPECT_EQ(value_at(permuted, r, k), value_at(in, r, static_cast<std::uint64_t>(perm[k])));
  const SparseBatch back = select_columns(permuted, inverse);
  EXPECT_EQ(back.indptr, in.indptr);
  EXPECT_EQ(back.indices, in.indices);
  EXPECT_EQ(back.values_float32, in.values_float32);
}

TEST(BatchColumns, APositionOutsideTheBatchIsAUsageError) {
  std::mt19937_64 rng(3);
  const SparseBatch in = random_batch(rng, Values::Int32, 4, 9);
  const std::vector<std::int64_t> bad = {2, 9};
  try {
    (void)select_columns(in, bad);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "gene column 9 outside [0, 9)");
  }
  const std::vector<std::int64_t> negative = {-1};
  EXPECT_THROW((void)select_columns(in, negative), UsageError);
}

}  // namespace
}  // namespace tessera::cells
