// Overflow detection of the checked helpers that guard every file-supplied size.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace {

using tessera::LimitError;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(CheckedArithmetic, AddDetectsOverflowExactlyAtTheBoundary) {
  EXPECT_EQ(tessera::add_u64(0, 0), 0u);
  EXPECT_EQ(tessera::add_u64(kMax - 1, 1), kMax);
  EXPECT_EQ(tessera::add_u64(kMax, 0), kMax);
  EXPECT_FALSE(tessera::add_u64(kMax, 1).has_value());
  EXPECT_FALSE(tessera::add_u64(kMax / 2 + 1, kMax / 2 + 1).has_value());
  EXPECT_EQ(tessera::add_u64(kMax / 2, kMax / 2 + 1), kMax);
}

TEST(CheckedArithmetic, MulDetectsOverflowExactlyAtTheBoundary) {
  EXPECT_EQ(tessera::mul_u64(0, kMax), 0u);
  EXPECT_EQ(tessera::mul_u64(1, kMax), kMax);
  EXPECT_EQ(tessera::mul_u64(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1),
            kMax - ((std::uint64_t{1} << 32) - 1));
  EXPECT_FALSE(tessera::mul_u64(std::uint64_t{1} << 32, std::uint64_t{1} << 32).has_value());
  EXPECT_FALSE(tessera::mul_u64(2, kMax / 2 + 1).has_value());
  EXPECT_EQ(tessera::mul_u64(2, kMax / 2), kMax - 1);
  // 2^64 - 1 = 3 * 5 * 17 * 257 * 641 * 65537 * 6700417: a product landing exactly on the maximum.
  EXPECT_EQ(tessera::mul_u64(641 * 6700417ull, 3ull * 5 * 17 * 257 * 65537), kMax);
  EXPECT_FALSE(tessera::mul_u64(641 * 6700417ull + 1, 3ull * 5 * 17 * 257 * 65537).has_value());
}

TEST(CheckedArithmetic, ThrowingFormsNameTheQuantity) {
  EXPECT_EQ(tessera::checked_add(40, 2), 42u);
  EXPECT_EQ(tessera::checked_mul(6, 7), 42u);
  try {
    tessera::checked_add(kMax, 1, "chunk_index_offset");
    FAIL() << "checked_add did not throw";
  } catch (const LimitError& e) {
    EXPECT_EQ(std::string(e.what()), "arithmetic overflow computing chunk_index_offset");
  }
  try {
    tessera::checked_mul(kMax, 2, "tile_nnz * 2");
    FAIL() << "checked_mul did not throw";
  } catch (const LimitError& e) {
    EXPECT_EQ(std::string(e.what()), "arithmetic overflow computing tile_nnz * 2");
  }
  // The default name still produces a LimitError (a tessera::Error the CLI reports).
  EXPECT_THROW(tessera::checked_mul(kMax, kMax), LimitError);
  EXPECT_THROW(tessera::checked_add(1, kMax), tessera::Error);
}

TEST(CheckedArithmetic, CheckedSizePassesEveryValueOnSixtyFourBitHosts) {
  static_assert(sizeof(std::size_t) == 8, "tests assume a 64-bit host");
  EXPECT_EQ(tessera::checked_size(0), 0u);
  EXPECT_EQ(tessera::checked_size(kMax), SIZE_MAX);
}

}  // namespace
