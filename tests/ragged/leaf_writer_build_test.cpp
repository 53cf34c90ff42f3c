// The leaf writer against zagg's fixture leaves (spec §9.4, §9.5): given the fixture's decoded
// cells, tessera writes dense shard objects byte-identical to zagg's, array `zarr.json` files
// byte-identical, the group `zarr.json` identical with zagg-identical metadata, the root
// `zarr.json` identical but for `written_at`, the same coverage bitmap and the same content
// hashes; plus the commit/overwrite rules and the unsharded geometry.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "support.hpp"
#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_writer.hpp"
#include "tessera/ragged/leaf_writer.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;
using tdigest::StoredDigest;

struct FixtureCase {
  std::string fixture;
  FieldSpec field;
  std::optional<std::string> per_cell_time;
};

std::vector<FixtureCase> cases() {
  FieldSpec minimal;
  minimal.delta = 16;
  FieldSpec flux;
  flux.name = "rx_flux";
  flux.delta = 16;
  flux.flux = true;
  flux.gain = Json{{"name", "spec-fixture-gain"}, {"version", "1"}};
  FieldSpec temporal = minimal;
  temporal.located = true;
  temporal.timed = true;
  return {{"minimal", minimal, std::nullopt}, {"flux", flux, std::nullopt}, {"temporal", temporal, "observed"}};
}

LeafSpec fixture_spec(const FixtureCase& c) {
  LeafSpec spec;
  spec.geometry = {6, 5, 4, false};
  spec.fields = {c.field};
  spec.per_cell_time = c.per_cell_time;
  spec.zagg_identical_metadata = true;
  return spec;
}

template <typename T>
std::vector<T> dense(const io::Store& store, const std::string& path) {
  const auto bytes = zarr::Array::open(store, path).read_all();
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

StoredDigest cell_digest(const io::Store& store, const FieldSpec& f, std::uint64_t cell) {
  StoredDigest d;
  const auto rows = RaggedArray::open(store, "6/" + f.name).read_cell(static_cast<std::int64_t>(cell)).values<float>();
  for (std::size_t i = 0; i < rows.size(); i += 2) {
    d.means.push_back(rows[i]);
    d.weights.push_back(rows[i + 1]);
  }
  if (f.located)
    d.locations = RaggedArray::open(store, "6/" + f.locations_name())
                      .read_cell(static_cast<std::int64_t>(cell))
                      .values<std::uint64_t>();
  if (f.timed)
    d.times = RaggedArray::open(store, "6/" + f.times_name())
                  .read_cell(static_cast<std::int64_t>(cell))
                  .values<std::uint64_t>();
  return d;
}

// Writes a fixture's decoded content with the leaf writer into `hive`.
LeafReport rewrite_fixture(const FixtureCase& c, io::Store& hive, bool overwrite = false, bool unsharded = false) {
  io::DirectoryStore leaf(test::fixture_leaf(c.fixture).string());
  LeafSpec spec = fixture_spec(c);
  spec.geometry.unsharded = unsharded;
  const auto count = dense<std::int32_t>(leaf, "6/count");
  std::vector<std::uint64_t> observed;
  if (c.per_cell_time) observed = dense<std::uint64_t>(leaf, "6/" + *c.per_cell_time);
  LeafWriter writer(hive, spec, morton::parse_decimal("11213"), overwrite);
  for (std::uint64_t k = 0; k < 4; ++k) {
    ChunkData d = make_chunk(spec, k);
    for (std::uint64_t i = 0; i < 4; ++i) {
      const std::uint64_t cell = 4 * k + i;
      d.count[i] = count[cell];
      d.digests[0][i] = cell_digest(leaf, c.field, cell);
      if (c.per_cell_time) d.cell_times[i] = observed[cell];
    }
    writer.add(writer.encode(d));
  }
  return writer.commit("tessera test");
}

std::string text(const fs::path& p) { return tessera::testing::read_file_text(p); }

// The root zarr.json with `written_at` blanked.
std::string without_written_at(std::string s) {
  const auto at = s.find("\"written_at\": \"");
  if (at != std::string::npos) s.replace(at + 15, 25, "");
  return s;
}

TEST(LeafWriterBuild, FixtureLeavesRewriteByteIdentically) {
  for (const FixtureCase& c : cases()) {
    SCOPED_TRACE(c.fixture);
    tessera::testing::TempDir dir("leaf-writer");
    io::DirectoryStore hive(dir.path().string());
    const LeafReport report = rewrite_fixture(c, hive);
    ASSERT_TRUE(report.written);
    EXPECT_EQ(report.leaf_key, "1/1/2/1/3/11213.zarr");
    EXPECT_EQ(report.cells_with_data, 4u);
    EXPECT_EQ(report.observations, 346u);
    const fs::path ours = dir / report.leaf_key, theirs = test::fixture_leaf(c.fixture);
    // Every object of the fixture leaf exists here; metadata and dense objects are identical.
    std::size_t compared = 0;
    for (const auto& entry : fs::recursive_directory_iterator(theirs)) {
      if (!entry.is_regular_file()) continue;
      const fs::path rel = fs::relative(entry.path(), theirs);
      SCOPED_TRACE(rel.string());
      ASSERT_TRUE(fs::exists(ours / rel));
      const std::string name = rel.filename().string();
      const bool vlen_object =
          rel.string().find("/c/") != std::string::npos && (rel.string().find(c.field.name) != std::string::npos);
      if (rel == "zarr.json") {
        EXPECT_EQ(without_written_at(text(ours / rel)), without_written_at(text(entry.path())));
      } else if (name == "coverage.moc") {
        EXPECT_EQ(hive::decode_sidecar(tessera::testing::read_file_bytes(ours / rel), 2, "coverage.moc"),
                  (std::vector<std::uint64_t>{0, 2, 5, 15}));
      } else if (!vlen_object) {
        EXPECT_EQ(tessera::testing::read_file_bytes(ours / rel), tessera::testing::read_file_bytes(entry.path()));
      }
      ++compared;
    }
    EXPECT_GE(compared, 8u);
    EXPECT_EQ(fs::file_size(ours / "6/count/c/0"), 116u);
    // Content hashes (vlen objects compare by decoded content) equal the recorded ones.
    const auto recorded = parse_content_hashes(test::expected(c.fixture));
    ASSERT_TRUE(recorded);
    EXPECT_EQ(report.hashes.arrays, recorded->arrays);
    EXPECT_EQ(report.hashes.combined, recorded->combined);
    // The stats sidecar records them and verifies.
    const Json stats = test::read_json(dir / "1/1/2/1/3/stats.json");
    EXPECT_EQ(stats["shard_key"].get<std::uint64_t>(), 1233986297899515908u);
    EXPECT_EQ(verify_hashes(hash_tree(io::DirectoryStore(ours.string())), parse_content_hashes(stats)).outcome,
              HashVerification::Outcome::Ok);
    // No temporary prefix is left behind.
    for (const auto& entry : fs::directory_iterator(dir / "1/1/2/1/3"))
      EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

TEST(LeafWriterBuild, GroupCarriesTheLatitudeUnlessZaggIdentical) {
  tessera::testing::TempDir dir("leaf-writer");
  io::DirectoryStore hive(dir.path().string());
  FixtureCase c = cases().front();
  LeafSpec spec = fixture_spec(c);
  spec.zagg_identical_metadata = false;
  LeafWriter writer(hive, spec, morton::parse_decimal("11213"), false);
  ChunkData d = make_chunk(spec, 3);
  d.count[1] = 2;
  d.digests[0][1] = tdigest::build(std::vector<double>{1, 2}, 16);
  writer.add(writer.encode(d));
  writer.commit("t");
  const Json group = test::read_json(dir / "1/1/2/1/3/11213.zarr/6/zarr.json");
  EXPECT_EQ(group["attributes"]["dggs"]["latitude"], "authalic-wgs84");
  EXPECT_EQ(group["attributes"]["dggs"].items().begin().key(), "name");
  EXPECT_EQ(std::prev(group["attributes"]["dggs"].end()).key(), "latitude");
}

TEST(LeafWriterBuild, CommittedLeafNeedsOverwriteAndRewritesSwapInPlace) {
  tessera::testing::TempDir dir("leaf-writer");
  io::DirectoryStore hive(dir.path().string());
  const FixtureCase c = cases().front();
  ASSERT_TRUE(rewrite_fixture(c, hive).written);
  EXPECT_THROW(rewrite_fixture(c, hive), UsageError);
  // A stale temporary of an interrupted writer is removed by the next one.
  fs::create_directories(dir / "1/1/2/1/3/11213.zarr.tmp-999999/6");
  const LeafReport again = rewrite_fixture(c, hive, true);
  EXPECT_TRUE(again.written);
  EXPECT_FALSE(fs::exists(dir / "1/1/2/1/3/11213.zarr.tmp-999999"));
  io::DirectoryStore leaf((dir / again.leaf_key).string());
  EXPECT_TRUE(hive::is_committed(hive::read_commit_stamp(leaf)));
  // An uncommitted leaf (no stamp) is replaced without --overwrite.
  hive.put(again.leaf_key + "/zarr.json",
           codec::as_bytes(std::string(R"({"attributes": {}, "zarr_format": 3, "node_type": "group"})")));
  EXPECT_TRUE(rewrite_fixture(c, hive).written);
}

TEST(LeafWriterBuild, NothingToWriteWritesNothing) {
  tessera::testing::TempDir dir("leaf-writer");
  io::DirectoryStore hive(dir.path().string());
  const LeafSpec spec = fixture_spec(cases().front());
  LeafWriter writer(hive, spec, morton::parse_decimal("11213"), false);
  writer.add(writer.encode(make_chunk(spec, 0)));
  EXPECT_FALSE(writer.commit("t").written);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(LeafWriterBuild, UnshardedGeometryDecodesToTheSameValuesAndHashes) {
  for (const FixtureCase& c : cases()) {
    SCOPED_TRACE(c.fixture);
    tessera::testing::TempDir dir("leaf-writer");
    io::DirectoryStore hive(dir.path().string());
    const LeafReport report = rewrite_fixture(c, hive, false, true);
    const auto recorded = parse_content_hashes(test::expected(c.fixture));
    EXPECT_EQ(report.hashes.arrays, recorded->arrays);
    io::DirectoryStore leaf((dir / report.leaf_key).string());
    const zarr::Array count = zarr::Array::open(leaf, "6/count");
    EXPECT_FALSE(count.sharded());
    EXPECT_EQ(count.list_stored_objects().size(), 3u);  // chunk 2 is empty
    EXPECT_FALSE(fs::exists(dir / report.leaf_key / "6/count/c/2"));
  }
}

TEST(LeafWriterBuild, MortonBoxesAndRootCoverage) {
  const std::uint64_t shard = morton::parse_decimal("11213");
  EXPECT_EQ(hive::morton_box(shard, 2, std::vector<std::uint64_t>{0, 2, 5, 15}),
            (std::vector<std::optional<std::string>>{"112131", "1121322", "1121344", std::nullopt}));
  std::vector<std::uint64_t> all(16);
  for (std::uint64_t i = 0; i < 16; ++i) all[i] = i;
  EXPECT_EQ(hive::morton_box(shard, 2, all),
            (std::vector<std::optional<std::string>>{"11213", std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(hive::morton_box(shard, 2, {}),
            (std::vector<std::optional<std::string>>{"11213", std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(hive::morton_box(morton::parse_decimal("43314"), 2, std::vector<std::uint64_t>{0, 2, 5, 13, 15}),
            (std::vector<std::optional<std::string>>{"433141", "4331422", "433144", std::nullopt}));

  // The root MOC: union with the existing object, tier-1 join, verbatim digest only when covering.
  io::MemoryStore store;
  const std::string temporal_moc =
      tessera::testing::read_file_text(test::zagg_dir() / "tests/data/spec/temporal/coverage.moc");
  store.put("coverage.moc", codec::as_bytes(temporal_moc));
  const std::uint64_t other = morton::parse_decimal("11214");
  const std::uint64_t t = 10689250968998768172ULL;
  hive::update_root_moc(store, 4, std::vector<std::uint64_t>{other}, {{other, t}}, {"h_tdigest"},
                        "2026-01-01T00:00:00+00:00");
  const auto moc = hive::read_root_moc(store);
  ASSERT_TRUE(moc);
  EXPECT_EQ(moc->shards, (std::vector<std::uint64_t>{shard, other}));
  EXPECT_EQ(moc->document["ranges"], Json::parse(R"([["11213", "11214"]])"));
  EXPECT_EQ(moc->shard_times.at(other), t);
  EXPECT_EQ(moc->shard_times.at(shard), t);
  EXPECT_FALSE(moc->temporal_digest);  // the old digest did not list 11214
  // Without a temporal contribution an existing section is kept verbatim.
  hive::update_root_moc(store, 4, std::vector<std::uint64_t>{shard}, {}, {}, "2026-01-01T00:00:00+00:00");
  EXPECT_EQ(hive::read_root_moc(store)->document["temporal"], moc->document["temporal"]);
}

}  // namespace
}  // namespace tessera::ragged
