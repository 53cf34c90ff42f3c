// Error::describe: the context parts joined before the message, never repeated.
#include <gtest/gtest.h>

#include "tessera/core/error.hpp"

namespace tessera {
namespace {

TEST(ErrorDescribe, JoinsTheKnownParts) {
  EXPECT_EQ(FormatError("bad magic", "a.tet", "superblock").describe(), "a.tet: superblock: bad magic");
  EXPECT_EQ(FormatError("bad magic", "a.tet").describe(), "a.tet: bad magic");
  EXPECT_EQ(FormatError("bad magic", "", "superblock").describe(), "superblock: bad magic");
  EXPECT_EQ(UsageError("no such dataset").describe(), "no such dataset");
}

TEST(ErrorDescribe, DoesNotRepeatAContextTheMessageAlreadyCarries) {
  EXPECT_EQ(FormatError("6/x/zarr.json: zarr.json: missing key", "6/x/zarr.json", "zarr.json").describe(),
            "6/x/zarr.json: zarr.json: missing key");
  EXPECT_EQ(FormatError("leaf.zarr: shard index CRC mismatch", "leaf.zarr", "shard index").describe(),
            "leaf.zarr: shard index CRC mismatch");
  // A message that merely mentions the path later still gets the prefix.
  EXPECT_EQ(IoError("cannot open a.tet", "a.tet").describe(), "a.tet: cannot open a.tet");
}

// fail_at is how zarr, cells, ragged and columnar word a located error: what() carries the same
// parts as describe(), so the CLI's "error: " line is enough to find the problem.
TEST(FailAt, WhatNamesPathAndStructureOnce) {
  try {
    fail_at<UnsupportedError>("6/x/zarr.json", "codecs[0]", "unknown codec");
    FAIL() << "fail_at returned";
  } catch (const UnsupportedError& e) {
    EXPECT_STREQ(e.what(), "6/x/zarr.json: codecs[0]: unknown codec");
    EXPECT_EQ(e.path(), "6/x/zarr.json");
    EXPECT_EQ(e.structure(), "codecs[0]");
    EXPECT_EQ(e.describe(), e.what());
  }
  EXPECT_EQ(located_text("", "manifest", "missing"), "manifest: missing");
  EXPECT_EQ(located_text("a.tet", "", "bad magic"), "a.tet: bad magic");
  EXPECT_EQ(located_text("", "", "bad magic"), "bad magic");
  // Rethrowing a located message with the same location keeps it as it is.
  EXPECT_EQ(located_text("a.parquet", "footer", "a.parquet: footer: bad length"), "a.parquet: footer: bad length");
}

}  // namespace
}  // namespace tessera
