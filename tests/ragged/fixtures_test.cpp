// Conformance (spec §9): every populated cell of the spec fixtures and the strata leaf decodes
// through the ragged readers to its `*.expected.json` values; content hashes reproduce; request
// counts of read_cell on a counting store.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "support.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/zarr/metadata.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged {
namespace {

using codec::json::Json;
using test::word_of;
namespace fs = std::filesystem;

struct Leaf {
  std::string name;
  fs::path dir;
};

std::vector<Leaf> digest_leaves() {
  std::vector<Leaf> out;
  for (const auto& fx : test::digest_fixtures()) out.push_back({fx, test::fixture_leaf(fx)});
  out.push_back({"strata", test::strata_leaf()});
  return out;
}

std::vector<std::uint64_t> dense_u64(const io::Store& store, const std::string& path) {
  const auto bytes = zarr::Array::open(store, path).read_all();
  std::vector<std::uint64_t> out(bytes.size() / 8);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<std::int32_t> dense_i32(const io::Store& store, const std::string& path) {
  const auto bytes = zarr::Array::open(store, path).read_all();
  std::vector<std::int32_t> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Compares a decoded t-digest cell with expected rows, by float32 bit pattern.
void expect_rows(const RaggedCell& cell, const Json& rows, const std::string& what) {
  const auto v = cell.values<float>();
  ASSERT_EQ(cell.rows, rows.size()) << what;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(v[2 * i]), std::bit_cast<std::uint32_t>(test::f32_of(rows[i][0])))
        << what << " row " << i;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(v[2 * i + 1]), std::bit_cast<std::uint32_t>(test::f32_of(rows[i][1])))
        << what << " row " << i;
  }
}

void expect_words(const std::vector<std::uint64_t>& words, const Json& expected, const std::string& what) {
  ASSERT_EQ(words.size(), expected.size()) << what;
  for (std::size_t i = 0; i < words.size(); ++i) EXPECT_EQ(words[i], word_of(expected[i])) << what << " row " << i;
}

TEST(RaggedFixtures, EveryPopulatedCellDecodesToItsExpectedValues) {
  for (const Leaf& leaf : digest_leaves()) {
    SCOPED_TRACE(leaf.name);
    io::DirectoryStore store(leaf.dir.string());
    const Json e = test::expected(leaf.name);
    const auto morton = dense_u64(store, "6/morton");
    const auto count = dense_i32(store, "6/count");
    std::size_t checked = 0;
    for (const Json& c : e["cells"]) {
      const std::uint64_t index = c["index"].get<std::uint64_t>();
      EXPECT_EQ(morton[index], word_of(c["morton"]));
      EXPECT_EQ(count[index], c["count"].get<std::int32_t>());
      for (const auto& [key, value] : c.items()) {
        if (!store.exists("6/" + key + "/zarr.json") || key == "morton" || key == "count") continue;
        const std::string what = leaf.name + ":6/" + key + " cell " + std::to_string(index);
        const auto array = zarr::Array::open(store, "6/" + key);
        if (!array.data_type().vlen) {  // composition, observed
          EXPECT_EQ(dense_u64(store, "6/" + key)[index], word_of(value)) << what;
          continue;
        }
        const RaggedArray r(array);
        const RaggedCell cell = r.read_cell(static_cast<std::int64_t>(index));
        if (r.element().is_tdigest()) expect_rows(cell, value, what);
        else expect_words(cell.values<std::uint64_t>(), value, what);
        ++checked;
      }
      // weight sums (n_signal as an exact count; flux_sum as numpy's float64 sum)
      if (c.contains("n_signal")) {
        const auto d = tdigest::decode(
            RaggedArray::open(store, "6/h_tdigest_signal").read_cell(static_cast<std::int64_t>(index)).bytes, "s");
        EXPECT_EQ(tdigest::pairwise_sum(d.weights), c["n_signal"].get<double>());
      }
      if (c.contains("flux_sum")) {
        const auto d = tdigest::decode(
            RaggedArray::open(store, "6/rx_flux").read_cell(static_cast<std::int64_t>(index)).bytes, "f");
        EXPECT_EQ(tdigest::pairwise_sum(d.weights), c["flux_sum"].get<double>());
      }
    }
    EXPECT_GE(checked, 4u);
  }
}

TEST(RaggedFixtures, SweepsYieldExactlyThePopulatedCells) {
  for (const Leaf& leaf : digest_leaves()) {
    SCOPED_TRACE(leaf.name);
    io::DirectoryStore store(leaf.dir.string());
    const Json e = test::expected(leaf.name);
    for (const std::string field : {"h_tdigest", "h_tdigest_signal", "h_tdigest_noise", "rx_flux"}) {
      if (!store.exists("6/" + field + "/zarr.json")) continue;
      const RaggedField f = RaggedField::open(store, "6/" + field);
      // locations and times through the sweeps: chunk ids, (row, col), words
      if (f.locations()) {
        const auto located = f.read_locations();
        std::size_t n = 0;
        for (const Json& c : e["cells"]) {
          const auto& expected = c[field + "_locations"];
          if (expected.empty()) continue;
          ASSERT_LT(n, located.size());
          const CellWords& w = located[n++];
          EXPECT_EQ(w.index, c["index"].get<std::uint64_t>());
          EXPECT_EQ(w.chunk_id, morton::clip(word_of(c["morton"]), 5));
          EXPECT_EQ(w.index, f.cell_index(w.chunk_id, w.row, w.col));
          expect_words(w.words, expected, field + " locations");
        }
        EXPECT_EQ(n, located.size());
      } else {
        EXPECT_THROW(f.read_locations(), UsageError);
      }
      if (f.times()) {
        const auto times = f.read_times();
        ASSERT_EQ(times.size(), e["cells"].size());
        for (std::size_t i = 0; i < times.size(); ++i)
          expect_words(times[i].words, e["cells"][i][field + "_times"], "times");
      }
      // raw values: legal only for single-observation cells
      if (f.payload().weights() == Weights::Flux) {
        EXPECT_THROW(f.read_raw_values(), UsageError);
      } else {
        SweepOptions one_cell;
        one_cell.subtree = morton::parse_decimal("1121322");  // cell 5: five weight-1 centroids in minimal
        if (leaf.name == "minimal") {
          const auto raw = f.read_raw_values(one_cell);
          ASSERT_EQ(raw.size(), 1u);
          EXPECT_EQ(raw[0].index, 5u);
          EXPECT_EQ(raw[0].row, 0u);
          EXPECT_EQ(raw[0].col, 1u);
          EXPECT_EQ(raw[0].values.size(), 5u);
          EXPECT_EQ(raw[0].values[0], static_cast<double>(22.07f));
          EXPECT_EQ(raw[0].chunk_id, morton::parse_decimal("112132"));
          EXPECT_THROW(f.read_raw_values(), UsageError);  // cell 0 has merged centroids
        }
      }
    }
  }
}

TEST(RaggedFixtures, ColumnGroupsDecode) {
  const fs::path column = test::fixture_leaf("column").parent_path() / "all.pyramid.zarr";
  io::DirectoryStore store(column.string());
  const Json groups = test::expected("column")["column"]["groups"];
  for (const auto& [group, values] : groups.items()) {
    SCOPED_TRACE(group);
    const auto morton = dense_u64(store, group + "/morton");
    const auto count = dense_i32(store, group + "/count");
    const RaggedField f = RaggedField::open(store, group + "/h_tdigest");
    EXPECT_FALSE(f.payload().array().sharded());
    for (std::size_t i = 0; i < values["morton"].size(); ++i) {
      EXPECT_EQ(morton[i], word_of(values["morton"][i]));
      EXPECT_EQ(count[i], values["count"][i].get<std::int32_t>());
      expect_rows(f.read_cell(static_cast<std::int64_t>(i)), values["h_tdigest"][i],
                  group + " cell " + std::to_string(i));
    }
  }
}

TEST(RaggedFixtures, RasterTocDenseValuesAndTimeWords) {
  io::DirectoryStore store(test::fixture_leaf("raster_toc").string());
  const Json e = test::expected("raster_toc");
  expect_words(dense_u64(store, "6/morton"), e["morton"], "morton");
  for (const char* band : {"red", "scl"}) {
    const auto a = zarr::Array::open(store, std::string("6/") + band);
    const auto bytes = a.read_all();
    const std::size_t item = a.data_type().item_size();
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t i = 0; i < 16; ++i) {
        std::uint64_t v = 0;
        std::memcpy(&v, bytes.data() + (t * 16 + i) * item, item);
        EXPECT_EQ(v, e["bands"][band][t][i].get<std::uint64_t>()) << band << " " << t << " " << i;
      }
  }
  const auto time = dense_u64(store, "6/time");
  expect_words(time, e["time_words"], "time");
  for (std::size_t t = 0; t < time.size(); ++t) {
    const toc::Interval iv = toc::decode(time[t]);
    const auto& b = e["time_bounds_ns"][t];
    EXPECT_EQ(iv.start_ns, toc::from_unix_ns(static_cast<std::int64_t>(word_of(b[0]))));
    EXPECT_EQ(iv.end_ns, toc::from_unix_ns(static_cast<std::int64_t>(word_of(b[1]))));
    EXPECT_EQ(iv.kind == toc::Kind::Timestamp, word_of(b[0]) == word_of(b[1]));
  }
}

TEST(RaggedFixtures, ContentHashesOfEveryLeafAndColumn) {
  std::vector<std::pair<fs::path, Json>> cases;
  for (const char* fx : {"minimal", "kitchen_sink", "flux", "column", "temporal", "raster_toc"}) {
    cases.push_back({test::fixture_leaf(fx), test::expected(fx)["content_hashes"]});
    const fs::path column = test::fixture_leaf(fx).parent_path() / "all.pyramid.zarr";
    if (fs::exists(column)) cases.push_back({column, test::read_json(column.parent_path() / "all.pyramid.stats.json")});
  }
  cases.push_back({test::strata_leaf(), test::expected("strata")["content_hashes"]});
  for (const auto& [dir, record] : cases) {
    SCOPED_TRACE(dir.string());
    io::DirectoryStore store(dir.string());
    const ContentHashes actual = hash_tree(store);
    const auto recorded = parse_content_hashes(record);
    ASSERT_TRUE(recorded);
    EXPECT_EQ(actual.arrays, recorded->arrays);
    EXPECT_EQ(actual.combined, recorded->combined);
    const auto v = verify_hashes(actual, recorded);
    EXPECT_EQ(v.outcome, HashVerification::Outcome::Ok);
  }
  // the same through a store rooted above the leaf
  io::DirectoryStore above(test::fixture_leaf("minimal").parent_path().string());
  EXPECT_EQ(hash_tree(above, "11213.zarr").combined,
            "2f4ff37de621de05962ab720cec05fd643757977f1afbd0e859ca588a143b72e");
}

TEST(RaggedFixtures, HashRecipeLiteralsAndVerificationOutcomes) {
  const Json g = test::read_json(test::zagg_dir() / "golden_vectors.json")["content_hash_recipe"];
  io::MemoryStore store;
  // [b"ab", b"c"] as a 2-cell unsharded vlen array
  store.put("zarr.json", codec::as_bytes(std::string_view(R"({"zarr_format": 3, "node_type": "group"})")));
  const auto put_array = [&](const std::string& name, std::vector<std::string> cells) {
    zarr::ArrayMeta meta;
    meta.shape = {cells.size()};
    meta.data_type = zarr::DataType::vlen_bytes();
    meta.chunk_shape = {cells.size()};
    meta.fill_value = zarr::zero_fill(meta.data_type);
    meta.codecs = {zarr::VlenBytesCodec{}, {}};
    store.put(name + "/zarr.json", codec::as_bytes(zarr::encode(meta)));
    std::vector<std::span<const std::byte>> spans;
    for (const auto& c : cells) spans.push_back(codec::as_bytes(c));
    store.put(name + "/c/0", zarr::frame_vlen(spans));
  };
  put_array("x", {"ab", "c"});
  put_array("y", {"a", "bc"});
  const ContentHashes h = hash_tree(store);
  EXPECT_EQ(h.arrays.at("x"), g["injectivity_example_derived"]["[b\"ab\", b\"c\"]"].get<std::string>());
  EXPECT_EQ(h.arrays.at("y"), g["injectivity_example_derived"]["[b\"a\", b\"bc\"]"].get<std::string>());
  // outcomes
  ContentHashes rec = h;
  EXPECT_EQ(verify_hashes(h, rec).outcome, HashVerification::Outcome::Ok);
  EXPECT_EQ(verify_hashes(h, std::nullopt).outcome, HashVerification::Outcome::Unrecorded);
  rec.arrays["x"] = "00";
  EXPECT_EQ(verify_hashes(h, rec).outcome, HashVerification::Outcome::Mismatch);
  rec = h;
  rec.arrays.erase("y");
  auto v = verify_hashes(h, rec);
  EXPECT_EQ(v.outcome, HashVerification::Outcome::Extra);
  EXPECT_EQ(v.extra, std::vector<std::string>{"y"});
  rec = h;
  rec.arrays["z"] = "00";
  EXPECT_EQ(verify_hashes(h, rec).outcome, HashVerification::Outcome::Missing);
  // flat recorded form
  const Json flat =
      Json::parse(R"({"x": ")" + h.arrays.at("x") + R"(", "y": ")" + h.arrays.at("y") + R"(", "combined": "c"})");
  EXPECT_EQ(parse_content_hashes(flat)->arrays, h.arrays);
  EXPECT_EQ(name_of(HashVerification::Outcome::Unrecorded), "unrecorded");
  EXPECT_EQ(to_json(h)["arrays"].size(), 2u);
}

TEST(RaggedFixtures, ReadCellRequestCounts) {
  io::DirectoryStore dir(test::fixture_leaf("minimal").string());
  io::CountingStore counting(dir);
  const RaggedField f = RaggedField::open(counting, "6/h_tdigest");
  for (std::int64_t cell = 0; cell < 16; ++cell) {
    counting.reset();
    const RaggedCell c = f.read_cell(cell);
    const bool absent_chunk = cell >= 8 && cell < 12;
    EXPECT_EQ(counting.gets(), absent_chunk ? 1u : 2u) << cell;
    EXPECT_EQ(counting.lists(), 0u);
    const auto log = counting.log();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log[0].kind, io::CountingStore::GetKind::Suffix);
    EXPECT_EQ(log[0].length, 68u);
    if (!absent_chunk) {
      // exactly the inner chunk's bytes, nothing of the others
      const std::uint64_t ranges[4][2] = {{0, 145}, {145, 58}, {0, 0}, {203, 146}};
      EXPECT_EQ(log[1].kind, io::CountingStore::GetKind::Range);
      EXPECT_EQ(log[1].offset, ranges[cell / 4][0]);
      EXPECT_EQ(log[1].length, ranges[cell / 4][1]);
      EXPECT_EQ(counting.bytes(), 68u + ranges[cell / 4][1]);
    }
    EXPECT_EQ(c.rows, cell == 0 ? 18u : cell == 2 ? 1u : cell == 5 ? 5u : cell == 15 ? 17u : 0u);
  }
  EXPECT_THROW(f.read_cell(16), UsageError);
  EXPECT_THROW(f.read_cell(-1), UsageError);
  // the companions too
  io::DirectoryStore temporal(test::fixture_leaf("temporal").string());
  io::CountingStore ct(temporal);
  const RaggedField tf = RaggedField::open(ct, "6/h_tdigest");
  ct.reset();
  EXPECT_EQ(tf.times()->read_cell(5).rows, 5u);
  EXPECT_EQ(ct.gets(), 2u);
  // unsharded column group: 1 GET
  io::DirectoryStore column((test::fixture_leaf("column").parent_path() / "all.pyramid.zarr").string());
  io::CountingStore cc(column);
  const RaggedField cf = RaggedField::open(cc, "5/h_tdigest");
  cc.reset();
  EXPECT_EQ(cf.read_cell(0).rows, 19u);
  EXPECT_EQ(cc.gets(), 1u);
}

TEST(RaggedFixtures, SweepReadsEachStoredObjectOnce) {
  io::DirectoryStore dir(test::fixture_leaf("temporal").string());
  io::CountingStore counting(dir);
  const RaggedField f = RaggedField::open(counting, "6/h_tdigest");
  for (int which = 0; which < 3; ++which) {
    counting.reset();
    if (which == 0) f.read_tensors();
    if (which == 1) f.read_locations();
    if (which == 2) f.read_times();
    for (const auto& g : counting.log())
      if (g.key.find("/c/") != std::string::npos) {
        EXPECT_EQ(counting.gets_of(g.key), 1u) << which << " " << g.key;
      }
  }
  // subtree: the index suffix plus the covering inner chunk of the payload
  counting.reset();
  SweepOptions o;
  o.subtree = morton::parse_decimal("112132");
  EXPECT_EQ(f.read_times(o).size(), 1u);
  EXPECT_EQ(counting.gets_of("6/h_tdigest_times/c/0"), 2u);
  EXPECT_EQ(counting.gets_of("6/h_tdigest/c/0"), 0u);
}

}  // namespace
}  // namespace tessera::ragged
