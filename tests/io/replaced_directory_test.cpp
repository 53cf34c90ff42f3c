// Writers replace a directory-format dataset (a deltacells dataset with `convert --overwrite`, a
// hive leaf with `ragged build --overwrite`) by exchanging a finished directory with the old one.
// A reader that opened the old one must read the old version or fail clearly, never read objects
// of the new one as if they were the old one's: a mix of equal-sized tiles passes every size check.
// The swap is done here between two reads (rename, as the writers do), so each case is exact.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <span>
#include <string>

#include "support/testing.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace tessera::io {
namespace {

namespace fs = std::filesystem;

// Moves `live` aside and `replacement` into its place, as an exchange does.
void replace_directory(const fs::path& live, const fs::path& replacement) {
  fs::rename(live, live.string() + ".old");
  fs::rename(replacement, live);
}

void expect_replaced_error(const std::function<void()>& read, const fs::path& root, const std::string& what) {
  try {
    read();
    ADD_FAILURE() << what << ": read from a directory that replaced the one the store was opened on";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()),
              root.string() + ": replaced while it was being read (open it again to read the new version)")
        << what;
  }
}

TEST(ReplacedDirectory, EveryReadOfAPinnedStoreNoticesTheSwap) {
  testing::TempDir dir("replaced-store");
  const fs::path live = dir.path() / "live", next = dir.path() / "next";
  for (const fs::path& p : {live, next}) {
    fs::create_directories(p / "sub");
    testing::write_file_text(p / "a", "old");
    testing::write_file_text(p / "sub" / "b", "old");
  }
  testing::write_file_text(next / "a", "new");
  DirectoryStore store(live.string());
  const auto opened_before = store.open("a");
  ASSERT_NE(opened_before, nullptr);
  replace_directory(live, next);

  expect_replaced_error([&] { store.open("a"); }, live, "open");
  expect_replaced_error([&] { store.get("a"); }, live, "get");
  expect_replaced_error([&] { store.get_range("a", 0, 1); }, live, "get_range");
  expect_replaced_error([&] { store.get_suffix("a", 1); }, live, "get_suffix");
  expect_replaced_error([&] { store.size("a"); }, live, "size");
  expect_replaced_error([&] { store.exists("a"); }, live, "exists");
  expect_replaced_error([&] { store.list(""); }, live, "list");
  expect_replaced_error([&] { store.list_dir("sub"); }, live, "list_dir");
  expect_replaced_error([&] { store.open("missing"); }, live, "open of a missing key");
  // What was opened before the swap still reads the old bytes.
  std::string old(3, '\0');
  opened_before->read_at(0, std::as_writable_bytes(std::span(old)));
  EXPECT_EQ(old, "old");
  // A store opened after the swap reads the new version.
  EXPECT_EQ(testing::read_file_text(live / "a"), "new");
  const auto fresh = DirectoryStore(live.string()).get("a");
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->size(), 3u);
}

TEST(ReplacedDirectory, DatasetReaderNeverMixesTilesOfTwoVersions) {
  // The campaign's case: `cells get` reading while `cells convert --overwrite` swaps the dataset.
  testing::TempDir dir("replaced-dataset");
  const fs::path live = dir.path() / "ds", next = dir.path() / "ds.new";
  const fs::path source = testing::conformance_dir() / "deltacells" / "dataset_small";
  fs::copy(source, live, fs::copy_options::recursive);
  fs::copy(source, next, fs::copy_options::recursive);
  cells::OpenOptions options;
  options.max_prefetch_tiles = 1;
  auto ds = cells::Dataset::open(live.string(), options);
  const std::vector<std::int64_t> first_tile{0, 1, 2, 3}, second_tile{4, 5, 6, 7};
  const auto before = ds->get_batch(first_tile);
  EXPECT_EQ(before.n_rows(), 4u);
  replace_directory(live, next);
  expect_replaced_error([&] { ds->get_batch(second_tile); }, live, "a tile fetched after the swap");
}

TEST(ReplacedDirectory, StoreOnADirectoryThatDidNotExistIsNotPinned) {
  testing::TempDir dir("replaced-absent");
  const fs::path root = dir.path() / "later";
  DirectoryStore store(root.string());
  fs::create_directories(root);
  testing::write_file_text(root / "a", "x");
  EXPECT_TRUE(store.exists("a"));
}

}  // namespace
}  // namespace tessera::io
