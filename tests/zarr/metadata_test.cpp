// zarr.json: byte-identical round trips of every conformance metadata file, the data types and
// fill values, and one test per refusal rule (error type, and a message naming the key, the
// structure and the rule).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::zarr {
namespace {

using codec::json::Json;
using test::as_bytes;
namespace fs = std::filesystem;

constexpr const char* kKey = "6/count/zarr.json";

// The fixture's sharded int32 `count` array metadata, as a tree to mutate.
Json count_metadata() {
  const fs::path p = test::zagg_dir() / "tests/data/spec/minimal/1/1/2/1/3/11213.zarr/6/count/zarr.json";
  return Json::parse(testing::read_file_text(p));
}

NodeMeta decode_and_validate(const std::string& text, const char* key = kKey) {
  NodeMeta node = decode_node(as_bytes(text), key);
  if (const auto* a = std::get_if<ArrayMeta>(&node)) validate(*a, key);
  return node;
}

ArrayMeta decode_array_text(const std::string& text) { return std::get<ArrayMeta>(decode_and_validate(text)); }

// Expects decoding `doc` to throw E with every `parts` in the message (which starts with the key).
template <typename E>
void expect_refused(const Json& doc, std::vector<std::string> parts) {
  try {
    decode_and_validate(doc.dump());
    ADD_FAILURE() << "accepted: " << doc.dump();
  } catch (const E& e) {
    const std::string what = e.what();
    // Messages start with the key (the zagg-ragged/2 refusal, whose text is fixed by the ragged
    // specification, with the array path).
    EXPECT_EQ(what.rfind("6/count", 0), 0u) << what;
    EXPECT_EQ(e.path(), kKey);
    for (const auto& part : parts) EXPECT_NE(what.find(part), std::string::npos) << "'" << part << "' not in: " << what;
  } catch (const Error& e) {
    ADD_FAILURE() << "wrong error type for " << doc.dump() << ": " << e.what();
  }
}

template <typename E>
void expect_refused(const std::function<void(Json&)>& edit, std::vector<std::string> parts) {
  Json doc = count_metadata();
  edit(doc);
  expect_refused<E>(doc, std::move(parts));
}

Json& inner_codecs(Json& doc) { return doc["codecs"][0]["configuration"]["codecs"]; }

TEST(ZarrMetadata, EveryConformanceFileRoundTripsByteForByte) {
  const auto files = test::all_metadata_files();
  ASSERT_GE(files.size(), 90u);
  std::size_t arrays = 0, groups = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const std::string text = testing::read_file_text(file);
    const NodeMeta node = decode_and_validate(text, "zarr.json");
    const std::string again = std::visit([](const auto& m) { return encode(m); }, node);
    EXPECT_EQ(again, text);
    (std::holds_alternative<ArrayMeta>(node) ? arrays : groups) += 1;
  }
  EXPECT_EQ(arrays, 65u);
  EXPECT_EQ(groups, 29u);
}

TEST(ZarrMetadata, DecodesTheShardedCountArray) {
  const ArrayMeta m = decode_array_text(count_metadata().dump());
  EXPECT_EQ(m.shape, (std::vector<std::uint64_t>{16}));
  EXPECT_EQ(m.data_type, DataType::fixed(DType::I32));
  EXPECT_EQ(m.chunk_shape, (std::vector<std::uint64_t>{16}));
  EXPECT_EQ(m.chunk_key_encoding, (ChunkKeyEncoding{ChunkKeyEncoding::Kind::Default, '/'}));
  EXPECT_EQ(m.fill_value, zero_fill(m.data_type));
  ASSERT_TRUE(m.sharding);
  EXPECT_EQ(m.sharding->chunk_shape, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(m.sharding->index_codecs, (IndexCodecs{Endian::Little, true}));
  EXPECT_EQ(m.sharding->index_location, IndexLocation::End);
  EXPECT_EQ(m.codecs, (CodecChain{BytesCodec{Endian::Little}, {}}));
  EXPECT_EQ(m.dimension_names, (std::vector<std::optional<std::string>>{"cells"}));
}

TEST(ZarrMetadata, BothSpellingsOfTheBytesTypeAreAcceptedAndKept) {
  const fs::path p = test::zagg_dir() / "tests/data/spec/minimal/1/1/2/1/3/11213.zarr/6/h_tdigest/zarr.json";
  const std::string zarr_python = testing::read_file_text(p);
  ASSERT_NE(zarr_python.find("\"variable_length_bytes\""), std::string::npos);
  std::string registry = zarr_python;
  registry.replace(registry.find("\"variable_length_bytes\""), 23, "\"bytes\"");
  for (const std::string& text : {zarr_python, registry}) {
    const ArrayMeta m = decode_array_text(text);
    EXPECT_TRUE(m.data_type.vlen);
    EXPECT_TRUE(m.codecs.is_vlen());
    EXPECT_TRUE(m.fill_value.element.empty());
    EXPECT_EQ(encode(m), text);
  }
}

TEST(ZarrMetadata, EveryFixedWidthTypeRoundTrips) {
  for (const DType t : {DType::Bool, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                        DType::U64, DType::F16, DType::F32, DType::F64}) {
    ArrayMeta m;
    m.shape = {10, 3};
    m.data_type = DataType::fixed(t);
    m.chunk_shape = {4, 3};
    m.fill_value = zero_fill(m.data_type);
    m.codecs = CodecChain{BytesCodec{dtype_size(t) == 1 ? std::nullopt : std::optional(Endian::Big)},
                          {ZstdCodec{5, true}, Crc32cCodec{}}};
    SCOPED_TRACE(m.data_type.name);
    validate(m, "a/zarr.json");
    const std::string text = encode(m);
    const ArrayMeta back = decode_array(as_bytes(text), "a/zarr.json");
    EXPECT_EQ(back.data_type, m.data_type);
    EXPECT_EQ(back.fill_value, m.fill_value);
    EXPECT_EQ(back.codecs, m.codecs);
    EXPECT_EQ(encode(back), text);
    const bool is_float = t == DType::F16 || t == DType::F32 || t == DType::F64;
    const std::string expected_fill = t == DType::Bool ? "false" : is_float ? "0.0" : "0";
    EXPECT_NE(text.find("\"fill_value\": " + expected_fill + ",\n"), std::string::npos) << text;
  }
}

std::string fill_json(const std::string& type, const Json& fill) {
  Json doc = count_metadata();
  doc["data_type"] = type;
  doc["fill_value"] = fill;
  const ArrayMeta m = decode_array_text(doc.dump());
  return encode_fill_value(m.fill_value, m.data_type).dump();
}

TEST(ZarrMetadata, FloatFillValuesAcceptEverySpelling) {
  EXPECT_EQ(fill_json("float32", "NaN"), "\"NaN\"");
  EXPECT_EQ(fill_json("float64", "Infinity"), "\"Infinity\"");
  EXPECT_EQ(fill_json("float16", "-Infinity"), "\"-Infinity\"");
  EXPECT_EQ(fill_json("float32", 0.5), "0.5");
  EXPECT_EQ(fill_json("float64", 6378137), "6378137.0");
  EXPECT_EQ(fill_json("float16", "0x3c00"), "1.0");  // binary16 1.0
  EXPECT_EQ(fill_json("float32", "0x3f800000"), "1.0");
  EXPECT_EQ(fill_json("float64", "0x7ff8000000000000"), "\"NaN\"");
  // A NaN with a payload keeps its bits through a round trip.
  EXPECT_EQ(fill_json("float32", "0x7fc00001"), "\"0x7fc00001\"");
  // float32 fills are float32 values (zarr-python writes float(np.float32(x))).
  EXPECT_EQ(fill_json("float32", 0.1), "0.10000000149011612");
  EXPECT_EQ(fill_json("uint64", 18446744073709551615ull), "18446744073709551615");
  EXPECT_EQ(fill_json("int8", -128), "-128");
  EXPECT_EQ(fill_json("bool", true), "true");
}

TEST(ZarrMetadata, InvalidFillValuesAreRefused) {
  const auto with = [](const char* type, Json fill) {
    return [=](Json& d) {
      d["data_type"] = type;
      d["fill_value"] = fill;
    };
  };
  expect_refused<FormatError>(with("int8", 128), {"fill_value", "not a int8 value"});
  expect_refused<FormatError>(with("uint16", -1), {"fill_value", "not a uint16 value"});
  expect_refused<FormatError>(with("int32", 1.0), {"fill_value", "must be a JSON integer"});
  expect_refused<FormatError>(with("bool", 0), {"fill_value", "true or false"});
  expect_refused<FormatError>(with("float32", "0x3c00"), {"fill_value", "8 hex digits"});
  expect_refused<FormatError>(with("float32", "nan"), {"fill_value", "not a float fill value"});
  expect_refused<FormatError>(with("float64", nullptr), {"fill_value"});
  expect_refused<FormatError>(
      [](Json& d) {
        d["data_type"] = "variable_length_bytes";
        d["fill_value"] = "AA==";
        inner_codecs(d) = Json::parse(R"([{"name": "vlen-bytes", "configuration": {}}])");
      },
      {"fill_value", "must be \"\""});
}

TEST(ZarrMetadata, NodeLevelRefusals) {
  const auto refused_text = [](const std::string& text, const std::string& part) {
    try {
      decode_node(as_bytes(text), kKey);
      ADD_FAILURE() << "accepted " << text;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(kKey, 0), 0u);
    }
  };
  refused_text("[]", "must be a JSON object");
  refused_text("{\"zarr_format\": 3,", "invalid JSON");
  refused_text("{\"zarr_format\": 3, \"node_type\": \"group\", \"zarr_format\": 3}", "duplicate key \"zarr_format\"");
  refused_text("{\"zarr_format\": 2, \"node_type\": \"group\"}", "zarr_format: must be 3");
  refused_text("{\"node_type\": \"group\"}", "missing required member \"zarr_format\"");
  refused_text("{\"zarr_format\": 3, \"node_type\": \"dataset\"}", "node_type: must be \"group\" or \"array\"");
  refused_text("\xff", "invalid JSON");
  EXPECT_THROW(decode_array(as_bytes("{\"zarr_format\": 3, \"node_type\": \"group\"}"), kKey), FormatError);
  EXPECT_THROW(decode_group(as_bytes(count_metadata().dump()), kKey), FormatError);
}

TEST(ZarrMetadata, GroupsIgnoreConsolidatedMetadataAndApplyTheExtensionRule) {
  const GroupMeta g = decode_group(
      as_bytes(
          R"({"attributes": {"n": 18446744073709551615}, "zarr_format": 3, "node_type": "group", "consolidated_metadata": null})"),
      "g/zarr.json");
  EXPECT_EQ(g.attributes["n"].get<std::uint64_t>(), 18446744073709551615ull);
  EXPECT_NO_THROW(
      decode_group(as_bytes(R"({"zarr_format": 3, "node_type": "group", "x": {"must_understand": false}})"), "g"));
  EXPECT_THROW(
      decode_group(as_bytes(R"({"zarr_format": 3, "node_type": "group", "x": {"must_understand": true}})"), "g"),
      UnsupportedError);
  EXPECT_EQ(encode(GroupMeta{}), "{\n  \"attributes\": {},\n  \"zarr_format\": 3,\n  \"node_type\": \"group\"\n}");
}

TEST(ZarrMetadata, UnsupportedFeaturesAreRefusedWithUnsupportedError) {
  const std::string ragged2 = "zagg-ragged/2 array (typed vlen-ndarray data type); tessera reads zagg-ragged/1 only.";
  expect_refused<UnsupportedError>([](Json& d) { d["data_type"] = "complex64"; },
                                   {"data_type", "unsupported data type \"complex64\""});
  expect_refused<UnsupportedError>([](Json& d) { d["data_type"] = "string"; }, {"data_type", "\"string\""});
  expect_refused<UnsupportedError>([](Json& d) { d["data_type"] = "r16"; }, {"\"r16\""});
  expect_refused<UnsupportedError>([](Json& d) { d["data_type"] = {{"name", "numpy.datetime64"}}; }, {"objects"});
  try {
    Json d = count_metadata();
    d["data_type"] = "vlen-ndarray";
    decode_and_validate(d.dump());
    ADD_FAILURE();
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("6/count: " + ragged2, 0), 0u) << e.what();
  }
  expect_refused<UnsupportedError>([](Json& d) { d["data_type"] = {{"name", "ndarray"}}; }, {ragged2});
  expect_refused<UnsupportedError>([](Json& d) { inner_codecs(d) = Json::parse(R"([{"name": "vlen-ndarray"}])"); },
                                   {ragged2});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        d["codecs"].insert(d["codecs"].begin(),
                           Json::parse(R"({"name": "transpose", "configuration": {"order": [0]}})"));
      },
      {"codecs[0]", "\"transpose\" is not supported"});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        inner_codecs(d).push_back({{"name", "gzip"}, {"configuration", {{"level", 1}}}});
      },
      {"codecs[0].configuration.codecs[1]", "\"gzip\""});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        inner_codecs(d).push_back({{"name", "blosc"}});
      },
      {"unknown codec \"blosc\""});
  expect_refused<UnsupportedError>([](Json& d) { d["chunk_grid"]["name"] = "rectilinear"; },
                                   {"chunk_grid.name", "rectilinear"});
  expect_refused<UnsupportedError>([](Json& d) { d["chunk_key_encoding"]["name"] = "hive"; },
                                   {"chunk_key_encoding", "\"hive\""});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        d["storage_transformers"].push_back({{"name", "x"}});
      },
      {"storage_transformers"});
  expect_refused<UnsupportedError>([](Json& d) { d["extra"] = 1; }, {"extra", "must_understand"});
  expect_refused<UnsupportedError>([](Json& d) { d["extra"] = {{"must_understand", true}}; }, {"\"extra\""});
  expect_refused<UnsupportedError>([](Json& d) { inner_codecs(d)[0]["configuration"]["order"] = "C"; },
                                   {"unknown member \"order\""});
  expect_refused<UnsupportedError>([](Json& d) { inner_codecs(d) = Json::array({d["codecs"][0]}); },
                                   {"nested sharding_indexed"});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        d["codecs"].push_back({{"name", "crc32c"}});
      },
      {"codecs[1]", "after sharding_indexed"});
  expect_refused<UnsupportedError>(
      [](Json& d) {
        d["shape"] = Json::array();
        d["chunk_grid"]["configuration"]["chunk_shape"] = Json::array();
      },
      {"0-d"});
  // Ignorable extension members are accepted.
  Json ok = count_metadata();
  ok["extension"] = {{"must_understand", false}, {"anything", 1}};
  EXPECT_NO_THROW(decode_and_validate(ok.dump()));
}

TEST(ZarrMetadata, MalformedCodecListsAreFormatErrors) {
  expect_refused<FormatError>(
      [](Json& d) {
        inner_codecs(d).insert(inner_codecs(d).begin(), Json::object({{"name", "zstd"}}));
      },
      {"codecs[0].configuration.codecs[0]", "comes before the array->bytes codec"});
  expect_refused<FormatError>([](Json& d) { inner_codecs(d) = Json::array(); }, {"needs one array->bytes codec"});
  expect_refused<FormatError>([](Json& d) { inner_codecs(d).push_back(inner_codecs(d)[0]); },
                              {"\"bytes\" is a second one"});
  expect_refused<FormatError>(
      [](Json& d) {
        inner_codecs(d)[0] = {{"name", "vlen-bytes"}, {"configuration", Json::object()}};
      },
      {"vlen-bytes cannot encode the fixed-width type int32"});
  expect_refused<FormatError>(
      [](Json& d) {
        d["data_type"] = "variable_length_bytes";
        d["fill_value"] = "";
      },
      {"the bytes codec cannot encode the variable-length type"});
  expect_refused<FormatError>([](Json& d) { inner_codecs(d)[0].erase("configuration"); },
                              {"must name its endian", "int32"});
  expect_refused<FormatError>([](Json& d) { inner_codecs(d)[0]["configuration"]["endian"] = "middle"; }, {"endian"});
  expect_refused<FormatError>([](Json& d) { d["codecs"][0]["configuration"]["chunk_shape"] = {5}; },
                              {"codecs[0].configuration.chunk_shape", "does not divide"});
  expect_refused<FormatError>(
      [](Json& d) {
        d["codecs"][0]["configuration"]["chunk_shape"] = {2, 2};
      },
      {"2 entries for a rank-1 array"});
  expect_refused<FormatError>(
      [](Json& d) {
        d["codecs"][0]["configuration"]["index_codecs"][1] = {{"name", "zstd"}};
      },
      {"index_codecs", "only [bytes] or [bytes, crc32c]"});
  expect_refused<FormatError>([](Json& d) { d["codecs"][0]["configuration"]["index_codecs"] = Json::array(); },
                              {"index_codecs"});
  expect_refused<FormatError>([](Json& d) { d["codecs"][0]["configuration"]["index_location"] = "middle"; },
                              {"index_location"});
  expect_refused<FormatError>([](Json& d) { d["chunk_grid"]["configuration"]["chunk_shape"] = {0}; },
                              {"positive integers"});
  expect_refused<FormatError>(
      [](Json& d) {
        d["chunk_grid"]["configuration"]["chunk_shape"] = {4, 4};
      },
      {"2 entries for a rank-1"});
  expect_refused<FormatError>([](Json& d) { d["shape"] = {-1}; }, {"shape", "non-negative integers"});
  expect_refused<FormatError>([](Json& d) { d["dimension_names"] = {"a", "b"}; }, {"dimension_names", "2 entries"});
  expect_refused<FormatError>([](Json& d) { d["dimension_names"] = {1}; }, {"dimension_names"});
  expect_refused<FormatError>([](Json& d) { d["chunk_key_encoding"]["configuration"]["separator"] = "-"; },
                              {"separator"});
  expect_refused<FormatError>([](Json& d) { d.erase("fill_value"); }, {"missing required member \"fill_value\""});
  expect_refused<FormatError>([](Json& d) { d["attributes"] = Json::array(); }, {"attributes", "must be an object"});
  expect_refused<FormatError>([](Json& d) { d["codecs"] = Json::object(); }, {"codecs", "must be an array"});
}

TEST(ZarrMetadata, EncodeWritesPythonLayoutForFloatsAndUnicode) {
  ArrayMeta m;
  m.shape = {3};
  m.data_type = DataType::fixed(DType::F64);
  m.chunk_shape = {3};
  m.fill_value = decode_fill_value(Json("NaN"), m.data_type, "k");
  m.attributes = Json::parse(R"({"scale_factor": 0.0001, "add_offset": -0.1, "big": 1e16, "name": "caf\u00e9"})");
  m.dimension_names = std::vector<std::optional<std::string>>{std::nullopt};
  const std::string text = encode(m);
  EXPECT_NE(text.find("\"fill_value\": \"NaN\""), std::string::npos);
  EXPECT_NE(text.find("\"scale_factor\": 0.0001,"), std::string::npos);
  EXPECT_NE(text.find("\"add_offset\": -0.1,"), std::string::npos);
  EXPECT_NE(text.find("\"big\": 1e+16,"), std::string::npos);
  EXPECT_NE(text.find("\"name\": \"caf\\u00e9\""), std::string::npos);
  EXPECT_NE(text.find("\"dimension_names\": [\n    null\n  ]"), std::string::npos);
  EXPECT_NE(text.back(), '\n');
}

}  // namespace
}  // namespace tessera::zarr
