// `ragged cell STORE FIELD INDEX` reports the index it was given when it is out of range, for
// every u64 (no wrap to a negative or a Python-style index from the end) and beyond.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

fs::path minimal_leaf() { return testing::conformance_dir() / "zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr"; }

TEST(RaggedCellIndex, OutOfRangeNamesTheExactIndex) {
  for (const std::string index : {"4096", "9223372036854775807", "9223372036854775808", "18446744073709551615"}) {
    const auto r = testing::run_cli({"ragged", "cell", minimal_leaf().string(), "6/h_tdigest", index});
    EXPECT_EQ(r.rc, 1) << index << r.err;
    EXPECT_NE(r.err.find("cell index " + index + " out of range: valid indices are 0.."), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const auto beyond =
      testing::run_cli({"ragged", "cell", minimal_leaf().string(), "6/h_tdigest", "18446744073709551616"});
  EXPECT_EQ(beyond.rc, 1);
  EXPECT_NE(beyond.err.find("cell index 18446744073709551616 out of range"), std::string::npos) << beyond.err;
  const auto negative = testing::run_cli({"ragged", "cell", minimal_leaf().string(), "6/h_tdigest", "-1"});
  EXPECT_NE(negative.rc, 0);
  EXPECT_EQ(negative.out, "");
}

}  // namespace
}  // namespace tessera
