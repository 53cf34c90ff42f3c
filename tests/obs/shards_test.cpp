// Obs shards written by the dataset writer: layout (§6.5), manifest keys, read-back, determinism,
// verification (§6.10, P1–P7) and corruption of every written obs object.
#include <gtest/gtest.h>

#include <filesystem>

#include "obs_dataset.hpp"
#include "support/testing.hpp"
#include "tessera/cells/obs_shards.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {
namespace {

using testing::TempDir;

void expect_same_rows(const columnar::Column& got, const columnar::Column& want, std::uint64_t first) {
  ASSERT_EQ(got.type, want.type);
  for (std::uint64_t i = 0; i < got.length; ++i) {
    ASSERT_EQ(got.is_valid(i), want.is_valid(first + i)) << i;
    if (!got.is_valid(i)) continue;
    if (got.type == columnar::ColumnType::String) {
      ASSERT_EQ(got.string(i), want.string(first + i)) << i;
    } else {
      const auto w = columnar::column_type_width(got.type);
      ASSERT_EQ(0, std::memcmp(got.data.data() + i * w, want.data.data() + (first + i) * w, w)) << i;
    }
  }
}

TEST(ObsShards, OneRowGroupPerTileAndValuesReadBack) {
  TempDir tmp;
  const Manifest m = test::write_obs_dataset(tmp / "ds", 103, 10, 4);
  ASSERT_TRUE(m.has_obs);
  EXPECT_EQ(m.n_tiles(), 11u);
  EXPECT_EQ(m.obs_tiles_per_file, 4u);
  ASSERT_EQ(m.obs_shard_bytes.size(), 3u);
  io::DirectoryStore store((tmp / "ds").string());
  const auto schema = read_obs_schema(store, true);
  EXPECT_EQ(m.obs_fingerprint, obs_fingerprint(schema.text, m.obs_shard_sha256, m.tile_cells));
  const auto table = test::random_obs_table(103, 1);
  const std::vector<InputObsTable> tables = {table};
  const auto want = encode_obs_table(table, schema.schema);
  std::uint64_t first = 0;
  for (std::uint64_t s = 0; s < 3; ++s) {
    const auto bytes = testing::read_file_bytes(tmp / "ds" / obs_shard_key(s));
    EXPECT_EQ(bytes.size(), m.obs_shard_bytes[s]);
    EXPECT_EQ(codec::sha256_hex(bytes), m.obs_shard_sha256[s]);
    const ObsShard shard = open_obs_shard(store, m, schema.schema, s);
    for (std::size_t g = 0; g < shard.file->row_groups().size(); ++g) {
      for (std::size_t c = 0; c < schema.schema.columns.size(); ++c)
        expect_same_rows(check_obs_chunk(shard.file->read_column(g, c), schema.schema.columns[c], "x"), want[c], first);
      first += m.tile_cells[shard.first_tile + g];
    }
  }
  EXPECT_EQ(first, 103u);
  EXPECT_NO_THROW(verify_obs(store, m));
  EXPECT_FALSE(std::filesystem::exists(tmp / "ds/var.parquet"));
}

TEST(ObsShards, OutputIsDeterministic) {
  TempDir tmp;
  const Manifest a = test::write_obs_dataset(tmp / "a", 57, 8, 2);
  const Manifest b = test::write_obs_dataset(tmp / "b", 57, 8, 2);
  EXPECT_EQ(a.obs_shard_sha256, b.obs_shard_sha256);
  EXPECT_EQ(a.obs_fingerprint, b.obs_fingerprint);
  EXPECT_EQ(testing::read_file_text(tmp / "a/manifest.json"), testing::read_file_text(tmp / "b/manifest.json"));
}

std::string verify_error(const std::filesystem::path& dir) {
  try {
    io::DirectoryStore store(dir.string());
    const Manifest m = Manifest::parse(testing::read_file_text(dir / "manifest.json"));
    verify_obs(store, m);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(ObsShards, VerifyNamesTheBrokenRule) {
  TempDir tmp;
  const auto ds = tmp / "ds";
  test::write_obs_dataset(ds, 40, 10, 2);
  const auto shard = ds / obs_shard_key(1);
  const auto original = testing::read_file_bytes(shard);
  auto flipped = original;
  flipped[10] ^= std::byte{1};
  testing::write_file_bytes(shard, flipped);
  EXPECT_NE(verify_error(ds).find("SHA-256"), std::string::npos) << verify_error(ds);
  testing::write_file_bytes(shard, std::span(original).first(original.size() - 1));
  EXPECT_NE(verify_error(ds).find("(P1)"), std::string::npos) << verify_error(ds);
  std::filesystem::remove(shard);
  EXPECT_NE(verify_error(ds).find("(P1)"), std::string::npos) << verify_error(ds);
  testing::write_file_bytes(shard, original);
  EXPECT_EQ(verify_error(ds), "");
  const std::string schema = testing::read_file_text(ds / "obs/schema.json");
  testing::write_file_text(ds / "obs/schema.json", schema + "\n");
  EXPECT_NE(verify_error(ds).find("(S7)"), std::string::npos) << verify_error(ds);
  testing::write_file_text(ds / "obs/schema.json", schema);
  auto manifest = testing::read_file_text(ds / "manifest.json");
  const auto fp = manifest.find("\"obs_fingerprint\": \"") + 20;
  manifest[fp] = manifest[fp] == '0' ? '1' : '0';
  testing::write_file_text(ds / "manifest.json", manifest);
  EXPECT_NE(verify_error(ds).find("(P7)"), std::string::npos) << verify_error(ds);
}

std::string verify_error(const io::Store& store, const Manifest& m) {
  try {
    verify_obs(store, m);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Every truncation and a sweep of bit flips of every shard and the schema: verify either passes
// or throws a tessera::Error; never a crash or another exception. (In memory: the same code
// paths as on disk, without thousands of file writes.)
TEST(ObsShards, TruncationsAndBitFlipsEndInTypedErrors) {
  TempDir tmp;
  const auto ds = tmp / "ds";
  const Manifest m = test::write_obs_dataset(ds, 30, 10, 2);
  io::MemoryStore store;
  for (const std::string key : {"obs/obs_0000.parquet", "obs/obs_0001.parquet", "obs/schema.json"})
    store.put(key, testing::read_file_bytes(ds / key));
  ASSERT_EQ(verify_error(store, m), "");
  for (const std::string key : {"obs/obs_0000.parquet", "obs/obs_0001.parquet", "obs/schema.json"}) {
    const auto original = testing::read_file_bytes(ds / key);
    std::size_t caught = 0;
    for (std::size_t n = 0; n < original.size(); ++n) {
      store.put(key, std::span(original).first(n));
      caught += !verify_error(store, m).empty();
    }
    for (std::size_t i = 0; i < original.size(); ++i)
      for (int bit : {0, 5}) {
        auto b = original;
        b[i] ^= std::byte(1u << bit);
        store.put(key, b);
        caught += !verify_error(store, m).empty();
      }
    // With the manifest rewritten to match the damaged shard, the footer and pages themselves are
    // decoded (P2–P6): each damage is then a typed error or a successful read.
    if (key != "obs/schema.json") {
      const std::size_t s = key == "obs/obs_0000.parquet" ? 0 : 1;
      const auto schema_text = read_obs_schema(store).text;
      for (std::size_t i = 0; i < original.size(); ++i) {
        auto b = original;
        b[i] ^= std::byte(1u << (i % 8));
        if (i % 3 == 0) b.resize(b.size() - i % 17);
        store.put(key, b);
        Manifest m2 = m;
        m2.obs_shard_bytes[s] = b.size();
        m2.obs_shard_sha256[s] = codec::sha256_hex(b);
        m2.obs_fingerprint = obs_fingerprint(schema_text, m2.obs_shard_sha256, m2.tile_cells);
        (void)verify_error(store, m2);  // any tessera::Error is fine; anything else escapes and fails
      }
    }
    store.put(key, original);
    // Every damaged shard fails P1 (size or SHA-256); a damaged schema fails parsing, S7 or P7.
    EXPECT_EQ(caught, 3 * original.size()) << key;
  }
  EXPECT_EQ(verify_error(store, m), "");
}

}  // namespace
}  // namespace tessera::cells
