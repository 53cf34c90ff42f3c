// DirectoryStore: put/open/exists/list/erase over a local directory, and refusal of keys that
// would escape the root.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
using tessera::codec::as_bytes;
using tessera::testing::TempDir;

std::string text_of(const io::ByteSource& src) {
  const auto v = src.read_vector(0, src.size());
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

class DirectoryStoreTest : public ::testing::TestWithParam<io::OpenMode> {
 protected:
  TempDir dir_;
  io::DirectoryStore store_{dir_.path().string(), GetParam()};
};

TEST_P(DirectoryStoreTest, PutCreatesNestedObjectsThatOpenReads) {
  store_.put("zarr.json", as_bytes("{}"));
  store_.put("temperature/c/0/1", as_bytes("chunk bytes"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "temperature" / "c" / "0" / "1"));
  EXPECT_EQ(store_.path_of("temperature/c/0/1"), (dir_ / "temperature/c/0/1").string());

  const auto src = store_.open("temperature/c/0/1");
  ASSERT_NE(src, nullptr);
  EXPECT_EQ(text_of(*src), "chunk bytes");
  EXPECT_EQ(src->name(), store_.path_of("temperature/c/0/1"));
  EXPECT_TRUE(store_.exists("zarr.json"));
  EXPECT_EQ(store_.name(), dir_.path().string());
}

TEST_P(DirectoryStoreTest, PutReplacesAnExistingObject) {
  store_.put("a", as_bytes("first version, longer"));
  store_.put("a", as_bytes("second"));
  EXPECT_EQ(text_of(*store_.open("a")), "second");
  store_.put("empty", {});
  EXPECT_EQ(store_.open("empty")->size(), 0u);
}

TEST_P(DirectoryStoreTest, MissingKeysAndDirectoriesAreAbsent) {
  store_.put("group/array/c/0", as_bytes("x"));
  EXPECT_EQ(store_.open("nope"), nullptr);
  EXPECT_FALSE(store_.exists("nope"));
  // A directory is a prefix, not an object.
  EXPECT_EQ(store_.open("group/array"), nullptr);
  EXPECT_FALSE(store_.exists("group"));
}

TEST_P(DirectoryStoreTest, ListIsSortedAndRecursive) {
  for (const char* key : {"b/zarr.json", "a/c/1", "a/c/0", "zarr.json", "a/zarr.json", "b/c/0/0"})
    store_.put(key, as_bytes(key));
  EXPECT_EQ(store_.list(""),
            (std::vector<std::string>{"a/c/0", "a/c/1", "a/zarr.json", "b/c/0/0", "b/zarr.json", "zarr.json"}));
  EXPECT_EQ(store_.list("a"), (std::vector<std::string>{"a/c/0", "a/c/1", "a/zarr.json"}));
  EXPECT_EQ(store_.list("a/c"), (std::vector<std::string>{"a/c/0", "a/c/1"}));
  EXPECT_EQ(store_.list("b/zarr.json"), (std::vector<std::string>{"b/zarr.json"}));
  EXPECT_TRUE(store_.list("missing").empty());
}

TEST_P(DirectoryStoreTest, EraseRemovesOnlyThatObject) {
  store_.put("a/1", as_bytes("1"));
  store_.put("a/2", as_bytes("2"));
  store_.erase("a/1");
  EXPECT_FALSE(store_.exists("a/1"));
  EXPECT_TRUE(store_.exists("a/2"));
  EXPECT_EQ(store_.list(""), std::vector<std::string>{"a/2"});
  EXPECT_NO_THROW(store_.erase("never-existed"));
}

TEST_P(DirectoryStoreTest, KeysEscapingTheRootAreRefused) {
  // A file beside the root that an escaping key would reach.
  const fs::path outside = dir_.path().parent_path() / (dir_.path().filename().string() + "-outside");
  const std::string escape = "../" + outside.filename().string();
  for (const std::string& key : {escape, std::string("a/../../x"), std::string(".."), std::string("a/.."),
                                 std::string("/etc/passwd"), outside.string()}) {
    SCOPED_TRACE(key);
    EXPECT_THROW(store_.put(key, as_bytes("x")), tessera::UsageError);
    EXPECT_THROW(store_.open(key), tessera::UsageError);
    EXPECT_THROW(store_.exists(key), tessera::UsageError);
    EXPECT_THROW(store_.erase(key), tessera::UsageError);
    EXPECT_THROW(store_.list(key), tessera::UsageError);
    EXPECT_THROW(store_.path_of(key), tessera::UsageError);
  }
  EXPECT_FALSE(fs::exists(outside));
  try {
    store_.open("../secret");
    FAIL();
  } catch (const tessera::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("../secret"), std::string::npos) << e.what();
    EXPECT_EQ(e.path(), store_.name());
  }
}

INSTANTIATE_TEST_SUITE_P(BothModes, DirectoryStoreTest, ::testing::Values(io::OpenMode::Mmap, io::OpenMode::Pread),
                         ::testing::PrintToStringParamName());

}  // namespace
