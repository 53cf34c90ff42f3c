// io/staging: replacing a directory with a staged version (moved in, or exchanged with the old one
// and the old one removed), the unsynced staging store, and replace_prefix on directory and
// memory stores.
#include "tessera/io/staging.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s)); }

}  // namespace

TEST(Staging, AMissingTargetReceivesTheStagedDirectory) {
  tessera::testing::TempDir dir;
  write_text(dir.path() / "new" / "a.txt", "new");
  bool called = false;
  io::replace_directory((dir.path() / "new").string(), (dir.path() / "out").string(), [&] {
    called = true;
    EXPECT_EQ(read_text(dir.path() / "out" / "a.txt"), "new");
  });
  EXPECT_TRUE(called);
  EXPECT_FALSE(fs::exists(dir.path() / "new"));
}

TEST(Staging, AnExistingTargetIsExchangedAndTheOldVersionRemoved) {
  tessera::testing::TempDir dir;
  write_text(dir.path() / "out" / "a.txt", "old");
  write_text(dir.path() / "out" / "only-old.txt", "old");
  write_text(dir.path() / "new" / "a.txt", "new");
  io::replace_directory((dir.path() / "new").string(), (dir.path() / "out").string(), [&] {
    // The new version is visible at once, whole; the old one is still intact under the staged name.
    EXPECT_EQ(read_text(dir.path() / "out" / "a.txt"), "new");
    EXPECT_FALSE(fs::exists(dir.path() / "out" / "only-old.txt"));
    EXPECT_EQ(read_text(dir.path() / "new" / "only-old.txt"), "old");
  });
  EXPECT_EQ(read_text(dir.path() / "out" / "a.txt"), "new");
  EXPECT_FALSE(fs::exists(dir.path() / "new"));
}

TEST(Staging, AMissingStagedDirectoryIsAnIoErrorNamingTheTargetAndLeavesTheOldVersion) {
  tessera::testing::TempDir dir;
  write_text(dir.path() / "out" / "a.txt", "old");
  const std::string target = (dir.path() / "out").string();
  try {
    io::replace_directory((dir.path() / "nothing").string(), target);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), target);
  }
  EXPECT_EQ(read_text(dir.path() / "out" / "a.txt"), "old");
}

TEST(Staging, ADirectoryStoreGetsAnUnsyncedStagingStoreAndReplacesAtomically) {
  tessera::testing::TempDir dir;
  io::DirectoryStore store(dir.path().string());
  store.put("leaf/x", bytes_of("old"));
  store.put("leaf/gone", bytes_of("old"));
  const auto staging = io::staging_store(store);
  ASSERT_NE(staging, nullptr);
  staging->put("tmp/x", bytes_of("new"));
  staging->put("tmp/sub/y", bytes_of("new"));
  EXPECT_EQ(read_text(dir.path() / "tmp" / "sub" / "y"), "new");
  io::sync_staged(store, "tmp");
  io::replace_prefix(store, "tmp", "leaf");
  EXPECT_EQ(store.list(""), (std::vector<std::string>{"leaf/sub/y", "leaf/x"}));
  EXPECT_EQ(read_text(dir.path() / "leaf" / "x"), "new");
}

TEST(Staging, OtherStoresAreWrittenDirectlyAndReplacedObjectByObject) {
  io::MemoryStore store;
  EXPECT_EQ(io::staging_store(store), nullptr);
  store.put("leaf/x", bytes_of("old"));
  store.put("leaf/gone", bytes_of("old"));
  store.put("tmp/x", bytes_of("new"));
  store.put("tmp/sub/y", bytes_of("new"));
  io::sync_staged(store, "tmp");  // nothing to flush
  io::replace_prefix(store, "tmp", "leaf");
  EXPECT_EQ(store.list(""), (std::vector<std::string>{"leaf/sub/y", "leaf/x"}));
  const auto x = store.get("leaf/x");
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(x->data()), x->size()), "new");
}
