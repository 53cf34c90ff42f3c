// The Store requests the zarr layer is built on: key validation, ranged and suffix GETs (clipped
// like HTTP ranges, reporting the object size), list_dir, erase_prefix, MemoryStore, and the
// CountingStore that counts every request, including reads through sources it opened.
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace tessera::io {
namespace {

using zarr::test::as_bytes;

std::string text(const std::vector<std::byte>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

TEST(StoreKeys, ValidKeys) {
  for (const char* ok : {"a", "zarr.json", "6/h_tdigest/c/0", "a.b/c..d/.e"}) EXPECT_TRUE(is_valid_key(ok)) << ok;
  for (const char* bad : {"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a\\b"})
    EXPECT_FALSE(is_valid_key(bad)) << bad;
  EXPECT_FALSE(is_valid_key(std::string_view("a\0b", 3)));
  EXPECT_EQ(join_key("", "zarr.json"), "zarr.json");
  EXPECT_EQ(join_key("6/count", "zarr.json"), "6/count/zarr.json");
}

void exercise(Store& store) {
  store.put("g/a/c/0", as_bytes("0123456789"));
  store.put("g/a/zarr.json", as_bytes("{}"));
  store.put("g/b/c/1", as_bytes("x"));
  store.put("top", as_bytes("t"));
  EXPECT_EQ(text(*store.get("g/a/c/0")), "0123456789");
  EXPECT_FALSE(store.get("missing"));
  auto r = store.get_range("g/a/c/0", 2, 3);
  EXPECT_EQ(text(r->bytes), "234");
  EXPECT_EQ(r->object_size, 10u);
  EXPECT_EQ(text(store.get_range("g/a/c/0", 8, 100)->bytes), "89");  // clipped
  EXPECT_EQ(store.get_range("g/a/c/0", 50, 5)->bytes.size(), 0u);    // past the end
  EXPECT_EQ(text(store.get_range("g/a/c/0", 1, ~0ull)->bytes), "123456789");
  EXPECT_EQ(text(store.get_suffix("g/a/c/0", 4)->bytes), "6789");
  EXPECT_EQ(text(store.get_suffix("g/a/c/0", 40)->bytes), "0123456789");  // longer than the object
  EXPECT_EQ(store.get_suffix("g/a/c/0", 40)->object_size, 10u);
  EXPECT_FALSE(store.get_suffix("nope", 4));
  EXPECT_EQ(store.size("g/a/c/0"), 10u);
  EXPECT_FALSE(store.size("g"));
  EXPECT_EQ(store.list("g/a"), (std::vector<std::string>{"g/a/c/0", "g/a/zarr.json"}));
  const DirListing root = store.list_dir("");
  EXPECT_EQ(root.objects, std::vector<std::string>{"top"});
  EXPECT_EQ(root.prefixes, std::vector<std::string>{"g"});
  const DirListing ga = store.list_dir("g/a");
  EXPECT_EQ(ga.objects, std::vector<std::string>{"zarr.json"});
  EXPECT_EQ(ga.prefixes, std::vector<std::string>{"c"});
  EXPECT_TRUE(store.list_dir("missing").objects.empty());
  store.erase_prefix("g/a");
  EXPECT_EQ(store.list(""), (std::vector<std::string>{"g/b/c/1", "top"}));
}

TEST(StoreRequests, DirectoryStore) {
  testing::TempDir dir;
  DirectoryStore store(dir.path().string());
  exercise(store);
  // Names starting with '.' (in-flight temporaries) are not listed.
  testing::write_file_text(dir / "g/b/c/.tmp-1", "partial");
  testing::write_file_text(dir / ".hidden", "h");
  EXPECT_EQ(store.list(""), (std::vector<std::string>{"g/b/c/1", "top"}));
  EXPECT_EQ(store.list_dir("g/b/c").objects, std::vector<std::string>{"1"});
  store.erase_prefix("");
  EXPECT_TRUE(std::filesystem::exists(dir.path()));
  EXPECT_TRUE(store.list("").empty());
}

TEST(StoreRequests, MemoryStore) {
  MemoryStore store;
  exercise(store);
  EXPECT_THROW(store.put("../x", as_bytes("x")), UsageError);
  EXPECT_THROW(store.get("a//b"), UsageError);
  // A source stays valid after its object is replaced.
  store.put("k", as_bytes("old"));
  const auto src = store.open("k");
  store.put("k", as_bytes("new!"));
  EXPECT_EQ(text(src->read_vector(0, 3)), "old");
  EXPECT_EQ(src->name(), "<memory>/k");
}

TEST(StoreRequests, CountingStoreCountsEveryRequest) {
  MemoryStore mem;
  mem.put("a", as_bytes("abcdef"));
  CountingStore store(mem);
  store.get("a");
  store.get("missing");
  store.get_range("a", 1, 2);
  store.get_suffix("a", 3);
  EXPECT_EQ(store.gets(), 4u);
  EXPECT_EQ(store.bytes(), 6u + 2 + 3);
  EXPECT_EQ(store.gets_of("a"), 3u);
  const auto log = store.log();
  EXPECT_EQ(log[1].found, false);
  EXPECT_EQ(log[2].kind, CountingStore::GetKind::Range);
  EXPECT_EQ(log[2].offset, 1u);
  EXPECT_EQ(log[3].kind, CountingStore::GetKind::Suffix);
  // Sources it opens count each read and expose no view.
  const auto src = store.open("a");
  EXPECT_EQ(src->view(0, 1), nullptr);
  (void)src->read_vector(0, 2);
  (void)src->read_vector(2, 2);
  EXPECT_EQ(store.gets(), 6u);
  EXPECT_EQ(store.log().back().kind, CountingStore::GetKind::SourceRead);
  store.size("a");
  store.exists("a");
  store.list("");
  store.list_dir("");
  EXPECT_EQ(store.heads(), 3u);  // open + size + exists
  EXPECT_EQ(store.lists(), 2u);
  store.put("b", as_bytes("x"));  // writes pass through, uncounted
  EXPECT_TRUE(mem.exists("b"));
  store.reset();
  EXPECT_EQ(store.gets() + store.bytes() + store.heads() + store.lists(), 0u);
}

}  // namespace
}  // namespace tessera::io
