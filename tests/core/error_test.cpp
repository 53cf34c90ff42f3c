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

}  // namespace
}  // namespace tessera
