// Every array of the zagg conformance stores read through the zarr layer: per-array content
// hashes (dense and vlen) against the recorded ones, the dense values the *.expected.json files
// list, the worked example's inner chunk, and the request counts of each kind of read.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::zarr {
namespace {

using codec::json::Json;
namespace fs = std::filesystem;

const fs::path kSpec = fs::path("tests/data/spec");
const std::vector<std::string> kLeafFixtures = {"minimal", "kitchen_sink", "flux", "column", "temporal", "raster_toc"};

fs::path leaf_root(const std::string& fixture) { return test::zagg_dir() / kSpec / fixture / "1/1/2/1/3/11213.zarr"; }
fs::path column_root(const std::string& fixture) {
  return test::zagg_dir() / kSpec / fixture / "1/1/2/1/3/all.pyramid.zarr";
}
fs::path strata_root() { return test::zagg_dir() / "moczarr/tests/data/strata_hive/4/3/3/1/4/43314.zarr"; }

Json read_json(const fs::path& p) { return codec::json::parse_strict(testing::read_file_text(p), p.string()); }

// Recorded content hashes: store root → (array path → sha256 hex).
std::map<fs::path, std::map<std::string, std::string>> recorded_hashes() {
  std::map<fs::path, std::map<std::string, std::string>> out;
  const auto add = [&](const fs::path& root, const Json& hashes) {
    for (const auto& [k, v] : hashes["arrays"].items()) out[root][k] = v.get<std::string>();
  };
  for (const auto& f : kLeafFixtures)
    add(leaf_root(f), read_json(test::zagg_dir() / kSpec / (f + ".expected.json"))["content_hashes"]);
  add(strata_root(), read_json(test::zagg_dir() / "moczarr/tests/data/strata_hive.expected.json")["content_hashes"]);
  for (const auto& f : {"minimal", "kitchen_sink", "flux", "column", "temporal"}) {
    const fs::path stats = test::zagg_dir() / kSpec / f / "1/1/2/1/3/all.pyramid.stats.json";
    add(column_root(f), read_json(stats)["content_hashes"]);
  }
  return out;
}

TEST(ZarrFixtures, EveryArrayMatchesItsRecordedContentHash) {
  const auto recorded = recorded_hashes();
  std::size_t checked = 0, dense = 0;
  const auto arrays = test::all_fixture_arrays();
  ASSERT_EQ(arrays.size(), 65u);
  for (const auto& fa : arrays) {
    SCOPED_TRACE(fa.name());
    io::DirectoryStore store(fa.root.string());
    const Array array = Array::open(store, fa.path);
    const auto root = recorded.find(fa.root);
    ASSERT_NE(root, recorded.end());
    const auto expected = root->second.find(fa.path);
    ASSERT_NE(expected, root->second.end()) << "no recorded hash";
    EXPECT_EQ(test::content_hash(array), expected->second);
    ++checked;
    dense += array.data_type().vlen ? 0 : 1;
  }
  EXPECT_EQ(checked, 65u);
  EXPECT_EQ(dense, 39u);
}

TEST(ZarrFixtures, GoldenVectorHashLiterals) {
  // golden_vectors.json → content_hash_recipe: zagg's frozen per-array and combined literals.
  const Json golden = read_json(test::zagg_dir() / "golden_vectors.json")["content_hash_recipe"];
  const auto root_of = [](const std::string& fixture) {
    return fixture == "column (all.pyramid.zarr artifact)" ? column_root("column")
                                                           : leaf_root(fixture.substr(0, fixture.find(' ')));
  };
  for (const auto& [name, digest] : golden["frozen_arrays"].items()) {
    const auto colon = name.find(':');
    io::DirectoryStore store(leaf_root(name.substr(0, colon)).string());
    EXPECT_EQ(test::content_hash(Array::open(store, name.substr(colon + 1))), digest.get<std::string>()) << name;
  }
  // Combined: sha256 of the sorted per-array digests joined by "\n", over every array of the root.
  for (const auto& [fixture, digest] : golden["frozen_combined"].items()) {
    const fs::path root = root_of(fixture);
    io::DirectoryStore store(root.string());
    std::vector<std::string> digests;
    for (const auto& fa : test::all_fixture_arrays())
      if (fa.root == root) digests.push_back(test::content_hash(Array::open(store, fa.path)));
    std::sort(digests.begin(), digests.end());
    std::string joined;
    for (std::size_t i = 0; i < digests.size(); ++i) joined += (i ? "\n" : "") + digests[i];
    EXPECT_EQ(codec::sha256_hex(test::as_bytes(joined)), digest.get<std::string>()) << fixture;
  }
}

std::vector<std::string> values_of(const fs::path& root, const std::string& path) {
  io::DirectoryStore store(root.string());
  return test::decimal_values(Array::open(store, path));
}

std::string json_decimal(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

TEST(ZarrFixtures, DenseValuesMatchTheExpectedFiles) {
  std::size_t compared = 0;
  const auto check_cells = [&](const fs::path& root, const Json& expected) {
    const std::string group = expected["group"].get<std::string>();
    std::map<std::string, std::vector<std::string>> arrays;
    for (const auto& cell : expected["cells"]) {
      const std::size_t i = cell["index"].get<std::size_t>();
      for (const char* field : {"morton", "count", "composition", "observed"}) {
        if (!cell.contains(field)) continue;
        auto& values = arrays[field];
        if (values.empty()) values = values_of(root, group + "/" + field);
        ASSERT_LT(i, values.size());
        EXPECT_EQ(values[i], json_decimal(cell[field])) << root << " " << field << " cell " << i;
        ++compared;
      }
    }
  };
  for (const auto& f : kLeafFixtures)
    if (f != "raster_toc") check_cells(leaf_root(f), read_json(test::zagg_dir() / kSpec / (f + ".expected.json")));
  check_cells(strata_root(), read_json(test::zagg_dir() / "moczarr/tests/data/strata_hive.expected.json"));

  // Every cell word of the fixture shard; chunk 2 (cells 8-11) is absent and reads the fill 0.
  const Json words =
      read_json(test::zagg_dir() / "golden_vectors.json")["morton_words"]["fixture_cell_words_minimal_index_to_word"];
  const auto morton = values_of(leaf_root("minimal"), "6/morton");
  ASSERT_EQ(morton.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i)
    EXPECT_EQ(morton[i], i >= 8 && i < 12 ? "0" : words[std::to_string(i)].get<std::string>());
  const auto count = values_of(leaf_root("minimal"), "6/count");
  EXPECT_EQ(count, (std::vector<std::string>{"40", "0", "1", "0", "0", "5", "0", "0", "0", "0", "0", "0", "0", "0", "0",
                                             "300"}));

  // The unsharded 2-D raster leaf.
  const Json raster = read_json(test::zagg_dir() / kSpec / "raster_toc.expected.json");
  std::vector<std::string> expected_morton;
  for (const auto& w : raster["morton"]) expected_morton.push_back(w.get<std::string>());
  EXPECT_EQ(values_of(leaf_root("raster_toc"), "6/morton"), expected_morton);
  for (const char* band : {"red", "scl"}) {
    std::vector<std::string> flat;
    for (const auto& row : raster["bands"][band])
      for (const auto& v : row) flat.push_back(v.dump());
    EXPECT_EQ(values_of(leaf_root("raster_toc"), std::string("6/") + band), flat) << band;
    compared += flat.size();
  }
  std::vector<std::string> times;
  for (const auto& w : raster["time_words"]) times.push_back(w.get<std::string>());
  EXPECT_EQ(values_of(leaf_root("raster_toc"), "6/time"), times);

  // The leaf column's groups.
  const Json column = read_json(test::zagg_dir() / kSpec / "column.expected.json")["column"]["groups"];
  for (const auto& [group, fields] : column.items()) {
    for (const char* field : {"morton", "count"}) {
      std::vector<std::string> expected;
      for (const auto& v : fields[field]) expected.push_back(json_decimal(v));
      EXPECT_EQ(values_of(column_root("column"), group + "/" + field), expected) << group << "/" << field;
      compared += expected.size();
    }
  }
  EXPECT_GT(compared, 150u);
}

TEST(ZarrFixtures, WorkedExampleInnerChunkOfTheTdigestShard) {
  io::DirectoryStore store(leaf_root("minimal").string());
  const Array array = Array::open(store, "6/h_tdigest");
  EXPECT_TRUE(array.sharded());
  EXPECT_EQ(array.read_chunk_shape(), (Coords{4}));
  EXPECT_EQ(array.chunks_per_object_count(), 4u);
  const VlenChunk chunk = array.read_vlen_chunk({1});
  ASSERT_EQ(chunk.size(), 4u);
  EXPECT_TRUE(chunk[0].empty());
  EXPECT_EQ(test::hex(chunk[1]),
            "5c8fb0410000803fcba1c4410000803f6210d5410000803fac1cff410000803f2d3209420000803f");  // cell 5: 5 rows
  EXPECT_TRUE(chunk[2].empty() && chunk[3].empty());
  EXPECT_EQ(array.read_vlen_chunk({0})[0].size(), 18u * 8);  // cell 0: 18 rows
  EXPECT_TRUE(array.read_vlen_chunk({2}).all_empty());
  EXPECT_EQ(array.read_vlen_chunk({3})[3].size(), 17u * 8);  // cell 15: 17 rows
}

TEST(ZarrFixtures, ShardedChunkReadsTakeTwoRangedGets) {
  io::DirectoryStore dir(leaf_root("minimal").string());
  io::CountingStore store(dir);
  for (const char* path : {"6/count", "6/morton", "6/h_tdigest"}) {
    SCOPED_TRACE(path);
    const Array array = Array::open(store, path);
    for (std::uint64_t c = 0; c < 4; ++c) {
      store.reset();
      if (array.data_type().vlen) array.read_vlen_chunk({c});
      else array.read_chunk(Coords{c});
      const auto log = store.log();
      if (c == 2) {
        // Absent inner chunk: the index read alone.
        ASSERT_EQ(log.size(), 1u);
        EXPECT_EQ(log[0].kind, io::CountingStore::GetKind::Suffix);
        EXPECT_EQ(log[0].length, 68u);
      } else {
        ASSERT_EQ(log.size(), 2u);
        EXPECT_EQ(log[0].kind, io::CountingStore::GetKind::Suffix);
        EXPECT_EQ(log[0].length, 68u);  // 16·K + 4
        EXPECT_EQ(log[1].kind, io::CountingStore::GetKind::Range);
      }
      EXPECT_EQ(store.heads(), 0u);
      EXPECT_EQ(store.lists(), 0u);
    }
  }
  // count/c/0 chunk 3: exactly the 16 bytes [32, 48).
  const Array count = Array::open(store, "6/count");
  store.reset();
  const auto values = count.read_chunk(Coords{3});
  EXPECT_EQ(load_le<std::int32_t>(values.data() + 12), 300);
  EXPECT_EQ(store.log()[1].offset, 32u);
  EXPECT_EQ(store.log()[1].length, 16u);
  EXPECT_EQ(store.bytes(), 68u + 16u);
}

// A run of inner chunks of one shard is one ranged GET covering the present ones (chunk 2 is
// absent), byte for byte what reading each alone returns.
TEST(ZarrFixtures, InnerChunksOfAShardAreOneRangedGet) {
  io::DirectoryStore dir(leaf_root("minimal").string());
  io::CountingStore store(dir);
  for (const char* path : {"6/count", "6/morton", "6/h_tdigest"}) {
    SCOPED_TRACE(path);
    const Array array = Array::open(store, path);
    const auto index = array.read_shard_index(Coords{0});
    ASSERT_TRUE(index);
    store.reset();
    const auto together = array.read_stored_chunks(*index, 0, 4);
    ASSERT_EQ(store.gets(), 1u);
    EXPECT_EQ(store.log()[0].kind, io::CountingStore::GetKind::Range);
    ASSERT_EQ(together.size(), 4u);
    EXPECT_FALSE(together[2]);
    for (std::uint64_t c = 0; c < 4; ++c) EXPECT_EQ(together[c], array.read_stored_chunk(*index, c)) << c;
    store.reset();
    EXPECT_EQ(array.read_stored_chunks(*index, 1, 2)[0], array.read_stored_chunk(*index, 1));
    EXPECT_EQ(store.gets(), 2u) << "one present chunk: its own GET (and the comparison's)";
    EXPECT_TRUE(array.read_stored_chunks(*index, 2, 2).empty());
  }
}

TEST(ZarrFixtures, MissingShardObjectReadsFillAfterOneGet) {
  io::MemoryStore mem;
  mem.put("6/count/zarr.json", testing::read_file_bytes(leaf_root("minimal") / "6/count/zarr.json"));
  io::CountingStore store(mem);
  const Array array = Array::open(store, "6/count");
  store.reset();
  const auto values = array.read_chunk(Coords{1});
  EXPECT_EQ(values, std::vector<std::byte>(16));
  EXPECT_EQ(store.gets(), 1u);
  EXPECT_FALSE(store.log()[0].found);
  EXPECT_EQ(array.read_all(), std::vector<std::byte>(64));
}

TEST(ZarrFixtures, UnshardedChunkReadsTakeOneGet) {
  for (const auto& [root, path, chunk] :
       std::vector<std::tuple<fs::path, std::string, Coords>>{{column_root("column"), "5/count", {0}},
                                                              {column_root("column"), "5/h_tdigest", {0}},
                                                              {leaf_root("raster_toc"), "6/red", {1, 2}},
                                                              {leaf_root("raster_toc"), "6/morton", {3}}}) {
    SCOPED_TRACE(path);
    io::DirectoryStore dir(root.string());
    io::CountingStore store(dir);
    const Array array = Array::open(store, path);
    EXPECT_FALSE(array.sharded());
    store.reset();
    if (array.data_type().vlen) {
      EXPECT_EQ(array.read_vlen_chunk(chunk).size(), array.read_chunk_elements());
    } else {
      array.read_chunk(chunk);
    }
    ASSERT_EQ(store.gets(), 1u);
    EXPECT_EQ(store.log()[0].kind, io::CountingStore::GetKind::Whole);
  }
}

TEST(ZarrFixtures, WholeArraySweepReadsEachStoredObjectOnce) {
  for (const auto& fa : test::all_fixture_arrays()) {
    io::DirectoryStore dir(fa.root.string());
    io::CountingStore store(dir);
    const Array array = Array::open(store, fa.path);
    if (array.data_type().vlen) continue;
    SCOPED_TRACE(fa.name());
    store.reset();
    array.read_all();
    std::uint64_t objects = 1;
    for (const auto n : array.object_grid()) objects *= n;
    EXPECT_EQ(store.gets(), objects);
    for (const auto& get : store.log()) {
      EXPECT_EQ(get.kind, io::CountingStore::GetKind::Whole);
      EXPECT_EQ(store.gets_of(get.key), 1u) << get.key;
    }
    // The objects listed are the objects present.
    std::set<std::string> found;
    for (const auto& get : store.log())
      if (get.found) found.insert(get.key);
    std::set<std::string> listed;
    for (const auto& o : array.list_stored_objects()) listed.insert(array.object_key(o));
    EXPECT_EQ(found, listed);
  }
}

TEST(ZarrFixtures, StoredObjectsAndSpans) {
  io::DirectoryStore leaf(leaf_root("raster_toc").string());
  const Array red = Array::open(leaf, "6/red");
  EXPECT_EQ(red.object_grid(), (Coords{3, 4}));
  EXPECT_EQ(red.list_stored_objects().size(), 12u);
  EXPECT_EQ(red.object_key({2, 3}), "6/red/c/2/3");
  EXPECT_EQ(red.stored_span({2, 3}), (Box{{2, 3}, {12, 16}}));
  io::DirectoryStore min(leaf_root("minimal").string());
  const Array tdigest = Array::open(min, "6/h_tdigest");
  EXPECT_EQ(tdigest.list_stored_objects(), (std::vector<Coords>{{0}}));
  EXPECT_EQ(tdigest.stored_span({0}), (Box{{0, 16}}));
  EXPECT_EQ(tdigest.chunk_span({2}), (Box{{8, 12}}));
  const StoredObject obj = tdigest.read_object({0});
  ASSERT_TRUE(obj.exists() && obj.index());
  EXPECT_EQ(obj.chunk_count(), 4u);
  EXPECT_FALSE(obj.stored_chunk(2));
  EXPECT_EQ(obj.stored_chunk(1)->size(), 58u);
  EXPECT_EQ(test::hex(obj.read_vlen_chunk(1)[1]), test::hex(tdigest.read_vlen_chunk({1})[1]));
}

// A local object read whole is mapped with its descriptor kept, so a scan may copy each chunk out
// with pread instead of viewing it: the same bytes either way, absent chunks absent either way,
// and the copy reuses the caller's buffer. Objects of a remote-like store are held in memory and
// always viewed.
TEST(ZarrFixtures, StoredChunksReadTheSameByViewAndByPread) {
  for (const auto& fa : test::all_fixture_arrays()) {
    io::DirectoryStore dir(fa.root.string());
    const Array array = Array::open(dir, fa.path);
    SCOPED_TRACE(fa.name());
    for (const Coords& o : array.list_stored_objects()) {
      const StoredObject obj = array.read_object(o);
      ASSERT_TRUE(obj.exists());
      std::vector<std::byte> scratch;
      for (std::uint64_t inner = 0; inner < obj.chunk_count(); ++inner) {
        const auto viewed = obj.stored_chunk(inner);
        const auto copied = obj.stored_chunk(inner, io::ReadPath::Pread, scratch);
        ASSERT_EQ(viewed.has_value(), copied.has_value()) << inner;
        if (!viewed) continue;
        EXPECT_EQ(copied->data(), scratch.data());
        EXPECT_TRUE(std::equal(viewed->begin(), viewed->end(), copied->begin(), copied->end())) << inner;
        EXPECT_EQ(obj.stored_chunk(inner, io::ReadPath::Mmap, scratch)->data(), viewed->data());
      }
    }
  }
  io::DirectoryStore min(leaf_root("minimal").string());
  io::CountingStore counted(min);
  const StoredObject held = Array::open(counted, "6/h_tdigest").read_object({0});
  EXPECT_EQ(held.scan_read_path(), io::ReadPath::Mmap);  // in memory: nothing to choose
  EXPECT_EQ(counted.log().back().kind, io::CountingStore::GetKind::Whole);
  EXPECT_TRUE(min.open_whole("6/h_tdigest/c/0")->reads_both_ways());
  EXPECT_FALSE(min.open("6/h_tdigest/c/0")->reads_both_ways());
}

TEST(ZarrFixtures, ListingRefusesForeignKeysUnderTheChunkPrefix) {
  io::MemoryStore mem;
  const fs::path src = leaf_root("minimal") / "6/count";
  mem.put("6/count/zarr.json", testing::read_file_bytes(src / "zarr.json"));
  mem.put("6/count/c/0", testing::read_file_bytes(src / "c/0"));
  const Array array = Array::open(mem, "6/count");
  EXPECT_EQ(array.list_stored_objects(), (std::vector<Coords>{{0}}));
  mem.put("6/count/notes.txt", test::as_bytes("ignored: outside c/"));
  EXPECT_EQ(array.list_stored_objects().size(), 1u);
  for (const char* bad : {"6/count/c/01", "6/count/c/1", "6/count/c/x", "6/count/c/0/0", "6/count/c/-0"}) {
    SCOPED_TRACE(bad);
    mem.put(bad, test::as_bytes("x"));
    try {
      array.list_stored_objects();
      ADD_FAILURE();
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(bad) + ": chunk key: "), std::string::npos) << e.what();
    }
    mem.erase(bad);
  }
}

}  // namespace
}  // namespace tessera::zarr

namespace tessera::zarr {
namespace {

TEST(ZarrFixtures, OpenRefusesMissingMetadataGroupsAndBadPaths) {
  io::DirectoryStore store(leaf_root("minimal").string());
  try {
    Array::open(store, "6/nothing");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "6/nothing/zarr.json: zarr.json: missing: no array metadata at this key");
  }
  try {
    Array::open(store, "6");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "6/zarr.json: node_type: expected an array, found a group");
  }
  EXPECT_THROW(Array::open(store, "../6/count"), UsageError);
  const Array count = Array::open(store, "6/count");
  EXPECT_THROW(count.read_chunk(Coords{4}), UsageError);
  EXPECT_THROW(count.read_chunk(Coords{0, 0}), UsageError);
  EXPECT_THROW(count.read_box({{3, 17}}), UsageError);
  EXPECT_THROW(count.read_vlen_chunk({0}), UsageError);
  EXPECT_EQ(count.read_box({{5, 5}}).size(), 0u);
  std::vector<std::byte> short_buffer(count.box_bytes({{0, 5}}) - 1);
  EXPECT_THROW(count.read_box_into({{0, 5}}, short_buffer), UsageError);
}

}  // namespace
}  // namespace tessera::zarr
