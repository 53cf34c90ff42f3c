// The strict gates of a ragged array and its bindings (spec §2.2–§2.4, §2.9): each rule broken
// on a copy of a fixture leaf, with the error type and the message part that names it.
#include <gtest/gtest.h>

#include "support.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"

namespace tessera::ragged {
namespace {

using codec::json::Json;

class RaggedGates : public ::testing::Test {
 protected:
  void SetUp() override { test::load_tree(test::fixture_leaf("temporal"), store_); }

  Json meta(const std::string& array) {
    const auto bytes = store_.get(array + "/zarr.json");
    return codec::json::parse_strict(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  }
  void put(const std::string& array, const Json& m) {
    store_.put(array + "/zarr.json", codec::as_bytes(codec::json::dump(m, codec::json::DumpOptions::python_pretty())));
  }
  // Applies `edit` to the payload metadata and expects `open` to throw E with `text` in it.
  template <typename E>
  void expect_refused(const std::function<void(Json&)>& edit, const std::string& text,
                      const std::string& array = "6/h_tdigest") {
    const Json original = meta(array);
    Json m = original;
    edit(m);
    put(array, m);
    try {
      RaggedField::open(store_, "6/h_tdigest");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const E& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    } catch (const Error& e) {
      ADD_FAILURE() << "wrong error type for '" << text << "': " << e.what();
    }
    put(array, original);
  }

  io::MemoryStore store_;
};

TEST_F(RaggedGates, TheFixtureOpensWithItsBindingsAndDeclarations) {
  const RaggedField f = RaggedField::open(store_, "6/h_tdigest");
  EXPECT_TRUE(f.payload().element().is_tdigest());
  EXPECT_EQ(f.payload().weights(), Weights::Counts);
  ASSERT_TRUE(f.locations());
  ASSERT_TRUE(f.times());
  EXPECT_EQ(f.locations()->located()->grammar, "mortie-morton/1");
  EXPECT_EQ(f.times()->temporal()->shape, "per-centroid");
  EXPECT_TRUE(f.has_morton());
  const CellsAxis axis = f.axis();
  EXPECT_EQ(axis.cell_order, 6);
  EXPECT_EQ(axis.chunk_order, 5);
  EXPECT_EQ(axis.root, morton::parse_decimal("11213"));
  EXPECT_EQ(axis.depth, 2);
  EXPECT_FALSE(axis.flat);
}

TEST_F(RaggedGates, RaggedBlockRules) {
  expect_refused<FormatError>([](Json& m) { m["attributes"].erase("ragged"); }, "not a zagg ragged array");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"] = "x"; }, "not a zagg ragged array");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["ragged"]["spec"] = "zagg-ragged/2"; },
                                   "unknown ragged revision");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["ragged"].erase("spec"); }, "unknown ragged revision");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"].erase("element"); }, "element");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"]["element"]["dtype"] = ">f4"; }, "big-endian");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["ragged"]["element"]["dtype"] = "complex64"; },
                                   "not supported");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"]["element"]["shape"] = Json::array({2}); },
                              "[-1, *inner_shape]");
  expect_refused<FormatError>(
      [](Json& m) {
        m["attributes"]["ragged"]["element"]["shape"] = Json::array({-1, 0});
      },
      "inner dimension");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"]["locations"] = "a/b"; }, "one key component");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"]["locations"] = ""; }, "one key component");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["weights"] = "photons"; }, "unknown weights");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["weights"] = 3; }, "weights");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["times"] = 7; }, "times");
  // typed vlen (zagg-ragged/2) arrays get the succession message
  expect_refused<UnsupportedError>([](Json& m) { m["data_type"] = "vlen-ndarray"; }, "zagg-ragged/2");
  // accepted spellings
  Json m = meta("6/h_tdigest");
  m["attributes"]["ragged"]["element"]["dtype"] = "<f4";
  m["data_type"] = "bytes";
  m["attributes"]["gain"] = Json::object();
  m["attributes"]["provenance"] = 1;
  m["attributes"]["ragged"]["future_key"] = true;
  put("6/h_tdigest", m);
  EXPECT_TRUE(RaggedField::open(store_, "6/h_tdigest").payload().element().is_tdigest());
  // a dense array is not ragged
  EXPECT_THROW(RaggedArray::open(store_, "6/count"), FormatError);
}

TEST_F(RaggedGates, BindingRules) {
  expect_refused<FormatError>([](Json& m) { m["attributes"]["ragged"]["locations"] = "nope"; }, "does not exist");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["times"] = "count"; }, "not variable_length_bytes");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["times"] = "h_tdigest"; }, "element float32");
  // a declaration with an unknown spec, shape or grammar is refused on the sibling
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["located"]["spec"] = "zagg-located/9"; },
                                   "unknown declaration spec", "6/h_tdigest_locations");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["located"]["shape"] = "per-cell"; }, "not implemented",
                                   "6/h_tdigest_locations");
  expect_refused<UnsupportedError>([](Json& m) { m["attributes"]["temporal"]["grammar"] = "iso"; }, "not implemented",
                                   "6/h_tdigest_times");
  expect_refused<FormatError>([](Json& m) { m["attributes"]["temporal"]["shape"] = "per-cell"; }, "per-centroid",
                              "6/h_tdigest_times");
  // geometry mismatch of a sibling
  expect_refused<FormatError>([](Json& m) { m["codecs"][0]["configuration"]["chunk_shape"] = Json::array({16}); },
                              "geometry", "6/h_tdigest_times");
  // absent declarations are never a refusal
  Json loc = meta("6/h_tdigest_locations");
  loc["attributes"].erase("located");
  put("6/h_tdigest_locations", loc);
  EXPECT_FALSE(RaggedField::open(store_, "6/h_tdigest").locations()->located());
}

TEST_F(RaggedGates, MortonAndAxisRules) {
  // without morton: read_cell works, sweeps refuse naming the path
  store_.erase_prefix("6/morton");
  const RaggedField f = RaggedField::open(store_, "6/h_tdigest");
  EXPECT_EQ(f.read_cell(0).rows, 18u);
  try {
    f.read_tensors();
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("6/morton"), std::string::npos);
  }
  EXPECT_THROW(f.read_locations(), FormatError);
}

TEST_F(RaggedGates, PerChunkCompanionsAreReadCellOnly) {
  Json m = meta("6/h_tdigest");
  m["dimension_names"] = Json::array({"chunks"});
  put("6/h_tdigest", m);
  const RaggedField f = RaggedField::open(store_, "6/h_tdigest");
  EXPECT_EQ(f.read_cell(5).rows, 5u);
  EXPECT_THROW(f.read_tensors(), UsageError);
  EXPECT_THROW(f.read_raw_values(), UsageError);
}

TEST_F(RaggedGates, CellIndexRules) {
  const RaggedField f = RaggedField::open(store_, "6/h_tdigest");
  const std::uint64_t chunk3 = morton::parse_decimal("112134");
  EXPECT_EQ(f.cell_index(chunk3, 1, 1), 15u);
  EXPECT_EQ(f.cell_index(chunk3, 0, 0), 12u);
  EXPECT_EQ(f.cell_index(morton::parse_decimal("112131"), 1, 0), 2u);
  EXPECT_THROW(f.cell_index(chunk3, 2, 0), UsageError);
  EXPECT_THROW(f.cell_index(chunk3, 0, -1), UsageError);
  EXPECT_THROW(f.cell_index(morton::parse_decimal("11213"), 0, 0), UsageError);   // a block id, not a chunk
  EXPECT_THROW(f.cell_index(morton::parse_decimal("112133"), 0, 0), UsageError);  // absent chunk
  EXPECT_THROW(f.cell_index(morton::parse_decimal("211111"), 0, 0), UsageError);  // elsewhere
  EXPECT_THROW(f.cell_index(0, 0, 0), UsageError);
  // the key read_cell takes
  EXPECT_EQ(f.read_cell(static_cast<std::int64_t>(f.cell_index(chunk3, 1, 1))).rows, 17u);
}

TEST_F(RaggedGates, SubtreeRulesOfPerCellReaders) {
  const RaggedField f = RaggedField::open(store_, "6/h_tdigest");
  SweepOptions o;
  o.subtree = morton::parse_decimal("1121344");  // one cell
  const auto one = f.read_locations(o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].index, 15u);
  o.subtree = morton::parse_decimal("11213111");  // deeper than the axis
  EXPECT_THROW(f.read_locations(o), UsageError);
  o.subtree = morton::parse_decimal("112131123333333333333333442343p");
  EXPECT_THROW(f.read_times(o), UsageError);
  int warned = 0;
  o.subtree = morton::parse_decimal("-1");
  o.warn = [&](const Warning& w) { warned += w.code == "subtree_disjoint"; };
  EXPECT_TRUE(f.read_times(o).empty());
  EXPECT_EQ(warned, 1);
  // an empty store yields nothing, but a malformed word still raises
  io::MemoryStore empty;
  for (const std::string key : {"zarr.json", "6/zarr.json", "6/h_tdigest/zarr.json", "6/morton/zarr.json"})
    empty.put(key, *store_.get(key));
  Json m = meta("6/h_tdigest");
  m["attributes"]["ragged"].erase("locations");
  m["attributes"].erase("times");
  empty.put("6/h_tdigest/zarr.json", codec::as_bytes(codec::json::dump(m, codec::json::DumpOptions::python_pretty())));
  const RaggedField e = RaggedField::open(empty, "6/h_tdigest");
  SweepOptions eo;
  eo.subtree = morton::parse_decimal("11213");
  EXPECT_TRUE(e.read_raw_values(eo).empty());
  EXPECT_TRUE(e.read_tensors().empty());
  eo.subtree = 12345;  // not a valid word
  EXPECT_THROW(e.read_raw_values(eo), UsageError);
}

}  // namespace
}  // namespace tessera::ragged
