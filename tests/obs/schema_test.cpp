// obs/schema.json (S1–S7), the fingerprint against the conformance vectors, cache file names and
// numpy's type promotion (checked against numpy itself).
#include <gtest/gtest.h>

#include "support/testing.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_table.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using codec::json::Json;
using columnar::ColumnType;

Json vectors() {
  return codec::json::parse_strict(testing::read_file_text(testing::conformance_dir() / "deltacells" / "vectors.json"));
}

TEST(ObsFingerprint, ConformanceCasesReproduceExactly) {
  const Json cases = vectors()["fingerprint_examples"];
  ASSERT_EQ(cases.size(), 3u);
  for (const Json& c : cases) {
    const std::string text = c["schema_json_text"].get<std::string>();
    const auto shards = c["shard_sha256"].get<std::vector<std::string>>();
    const auto tiles = c["tile_cells"].get<std::vector<std::uint64_t>>();
    EXPECT_EQ(obs_fingerprint_payload(text, shards, tiles), c["canonical_payload"].get<std::string>());
    EXPECT_EQ(obs_fingerprint(text, shards, tiles), c["fingerprint"].get<std::string>());
    // The schema texts are canonical: parsing and serializing gives them back byte for byte (S7).
    EXPECT_EQ(ObsSchema::parse(text).serialize(), text);
    EXPECT_NO_THROW(check_schema_canonical(text));
  }
}

TEST(ObsSchemaFile, SerializesLikePythonJsonDumps) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 unavailable";
  ObsSchema s;
  s.columns.push_back({"cell type", ObsKind::Category, ColumnType::Int8, {"T cell", "Müller", "a\"b\\c", "日本", "😀"}});
  s.columns.push_back({"age", ObsKind::Numeric, ColumnType::Double, {}});
  s.columns.push_back({"ok", ObsKind::Bool, ColumnType::Bool, {}});
  s.columns.push_back({"obs_names", ObsKind::String, ColumnType::String, {}});
  const std::string text = s.serialize();
  const auto r = testing::run_python(
      "import json,sys\n"
      "cols=[{'name':'cell type','kind':'category','arrow_type':'int8','categories':['T "
      "cell','Müller','a\"b\\\\c','日本','😀']},"
      "{'name':'age','kind':'numeric','arrow_type':'double','categories':None},"
      "{'name':'ok','kind':'bool','arrow_type':'bool','categories':None},"
      "{'name':'obs_names','kind':'string','arrow_type':'string','categories':None}]\n"
      "sys.stdout.write(json.dumps({'format':'deltacells-obs','version':1,'columns':cols}))\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(text, r.out);
  const ObsSchema back = ObsSchema::parse(text);
  ASSERT_EQ(back.columns.size(), 4u);
  EXPECT_EQ(back.columns[0].categories[1], "Müller");
  EXPECT_EQ(back.columns[0].categories[4], "😀");
}

void expect_rule(const std::string& text, const std::string& rule, bool unsupported = false) {
  try {
    (void)ObsSchema::parse(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const UnsupportedError& e) {
    EXPECT_TRUE(unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
  } catch (const FormatError& e) {
    EXPECT_FALSE(unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("obs/schema.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(" + rule + ")"), std::string::npos) << e.what();
  }
}

TEST(ObsSchemaFile, RulesS1ToS6NameTheirRule) {
  const std::string head = R"({"format": "deltacells-obs", "version": 1, "columns": )";
  expect_rule("[]", "S1");
  expect_rule(R"({"format": "x", "version": 1, "columns": []})", "S1");
  expect_rule(R"({"format": "deltacells-obs", "version": 2, "columns": []})", "S1");
  expect_rule(R"({"format": "deltacells-obs", "version": 1.0, "columns": []})", "S1");
  expect_rule(R"({"format": "deltacells-obs", "version": 1, "columns": [], "extra": 1})", "S1");
  expect_rule(head + "{}}", "S2");
  expect_rule(head + R"([{"name": "a", "kind": "string"}]})", "S2");
  expect_rule(head + R"([{"name": "a", "kind": "string", "arrow_type": "string", "x": 1}]})", "S2");
  expect_rule(head + R"([{"name": 3, "kind": "string", "arrow_type": "string"}]})", "S3");
  expect_rule(
      head +
          R"([{"name": "a", "kind": "string", "arrow_type": "string"}, {"name": "a", "kind": "bool", "arrow_type": "bool"}]})",
      "S3");
  expect_rule(head + R"([{"name": "a", "kind": "text", "arrow_type": "string"}]})", "S4");
  expect_rule(head + R"([{"name": "a", "kind": "category", "arrow_type": "int8"}]})", "S4");
  expect_rule(head + R"([{"name": "a", "kind": "string", "arrow_type": "string", "categories": []}]})", "S4");
  expect_rule(head + R"([{"name": "a", "kind": "numeric", "arrow_type": "string"}]})", "S5");
  expect_rule(head + R"([{"name": "a", "kind": "category", "arrow_type": "int64", "categories": ["x"]}]})", "S5");
  expect_rule(head + R"([{"name": "a", "kind": "numeric", "arrow_type": "halffloat"}]})", "halffloat", true);
  expect_rule(head + R"([{"name": "a", "kind": "category", "arrow_type": "int8", "categories": ["x", 1]}]})", "S6");
  expect_rule(head + R"([{"name": "a", "kind": "category", "arrow_type": "int8", "categories": ["x", "x"]}]})", "S6");
  std::string many = head + R"([{"name": "a", "kind": "category", "arrow_type": "int8", "categories": [)";
  for (int i = 0; i < 128; ++i) many += (i ? ", \"" : "\"") + std::to_string(i) + "\"";
  expect_rule(many + "]}]}", "S5");
  // Absent categories read as null for non-category kinds.
  EXPECT_NO_THROW((void)ObsSchema::parse(head + R"([{"name": "a", "kind": "string", "arrow_type": "string"}]})"));
}

TEST(ObsSchemaFile, NonCanonicalTextFailsS7) {
  const std::string canonical =
      R"({"format": "deltacells-obs", "version": 1, "columns": [{"name": "a", "kind": "bool", "arrow_type": "bool", "categories": null}]})";
  EXPECT_NO_THROW(check_schema_canonical(canonical));
  for (
      const std::string& other :
      {canonical + "\n",
       std::string(
           R"({"format":"deltacells-obs","version":1,"columns":[{"name":"a","kind":"bool","arrow_type":"bool","categories":null}]})"),
       std::string(
           R"({"version": 1, "format": "deltacells-obs", "columns": [{"name": "a", "kind": "bool", "arrow_type": "bool", "categories": null}]})"),
       std::string(
           R"({"format": "deltacells-obs", "version": 1, "columns": [{"name": "a", "kind": "bool", "arrow_type": "bool"}]})")}) {
    try {
      check_schema_canonical(other);
      ADD_FAILURE() << other;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("(S7)"), std::string::npos) << e.what();
    }
  }
}

TEST(ObsCacheNames, QuoteLikeUrllib) {
  EXPECT_EQ(quote_column_file_name("cell type"), "cell%20type");
  EXPECT_EQ(quote_column_file_name("a/b"), "a%2Fb");
  EXPECT_EQ(quote_column_file_name("ü"), "%C3%BC");
  EXPECT_EQ(quote_column_file_name("Az09_.-~"), "Az09_.-~");
  if (!testing::have_python_numpy()) return;
  const std::string names[] = {"%x", "a+b=c&d", "über/ß", "..", "😀 emoji", "tab\tnew\nline", "'\"!*()"};
  for (const auto& n : names) {
    const auto r = testing::run_python(
        "import sys, urllib.parse\nsys.stdout.write(urllib.parse.quote(sys.argv[1], safe=''))", {n});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(quote_column_file_name(n), r.out) << n;
  }
  EXPECT_EQ(obs_shard_key(0), "obs/obs_0000.parquet");
  EXPECT_EQ(obs_shard_key(12345), "obs/obs_12345.parquet");
}

TEST(ObsTypes, PromotionMatchesNumpy) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "numpy unavailable";
  const std::vector<ColumnType> types = {ColumnType::Int8,  ColumnType::Int16,  ColumnType::Int32,  ColumnType::Int64,
                                         ColumnType::UInt8, ColumnType::UInt16, ColumnType::UInt32, ColumnType::UInt64,
                                         ColumnType::Float, ColumnType::Double};
  const char* numpy_names[] = {"int8",   "int16",  "int32",  "int64",   "uint8",
                               "uint16", "uint32", "uint64", "float32", "float64"};
  const auto r = testing::run_python(
      "import numpy as np\n"
      "names=['int8','int16','int32','int64','uint8','uint16','uint32','uint64','float32','float64']\n"
      "for a in names:\n"
      "  print(' '.join(str(np.promote_types(a,b)) for b in names))\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::size_t i = 0; i < types.size(); ++i)
    for (std::size_t j = 0; j < types.size(); ++j) {
      std::string want;
      lines >> want;
      const ColumnType got = promote_numeric(types[i], types[j]);
      std::size_t k = 0;
      while (k < types.size() && types[k] != got) ++k;
      EXPECT_EQ(numpy_names[k], want) << numpy_names[i] << " + " << numpy_names[j];
    }
}

InputObsColumn category(std::string name, std::vector<std::int32_t> codes, std::vector<std::string> cats) {
  InputObsColumn c;
  c.name = std::move(name);
  c.kind = ObsKind::Category;
  c.values = columnar::Column(ColumnType::Int32);
  for (auto v : codes) c.values.append<std::int32_t>(v);
  c.categories = std::move(cats);
  return c;
}

InputObsColumn numeric(std::string name, ColumnType type, std::vector<std::optional<double>> values) {
  InputObsColumn c;
  c.name = std::move(name);
  c.kind = ObsKind::Numeric;
  c.values = columnar::Column(type);
  for (const auto& v : values)
    columnar::visit_value_type(type, [&](auto tag) {
      using T = decltype(tag);
      c.values.append<T>(v ? std::optional<T>(static_cast<T>(*v)) : std::nullopt);
    });
  return c;
}

TEST(ObsBuild, GlobalVocabularyPromotionAndEncoding) {
  InputObsTable a{"a.h5ad", 3, {}, {}}, b{"b.h5ad", 2, {}, {}};
  a.columns = {category("cell_type", {0, 1, -1}, {"T", "B"}), numeric("age", ColumnType::Int8, {1, std::nullopt, 3})};
  b.columns = {numeric("age", ColumnType::Float, {2.5, std::numeric_limits<double>::quiet_NaN()}),
               category("cell_type", {1, 0}, {"NK", "B"})};
  const std::vector<InputObsTable> tables = {a, b};
  const ObsSchema s = infer_obs_schema(tables);
  ASSERT_EQ(s.columns.size(), 2u);
  EXPECT_EQ(s.columns[0].name, "cell_type");  // the first table's order
  EXPECT_EQ(s.columns[0].categories, (std::vector<std::string>{"T", "B", "NK"}));
  EXPECT_EQ(s.columns[0].type, ColumnType::Int8);
  EXPECT_EQ(s.columns[1].type, ColumnType::Float);  // int8 + float32 -> float32
  const auto ea = encode_obs_table(a, s), eb = encode_obs_table(b, s);
  EXPECT_EQ(ea[0].value<std::int8_t>(2), -1);
  EXPECT_EQ(eb[0].value<std::int8_t>(0), 1);  // "B" is global code 1
  EXPECT_EQ(eb[0].value<std::int8_t>(1), 2);  // "NK"
  EXPECT_FALSE(ea[1].is_valid(1));
  EXPECT_FALSE(eb[1].is_valid(1));  // NaN -> null
  EXPECT_EQ(eb[1].value<float>(0), 2.5f);

  // More categories than max_categories: the column becomes string, missing codes null.
  const ObsSchema st = infer_obs_schema(tables, {.exclude = {"age"}, .max_categories = 2});
  ASSERT_EQ(st.columns.size(), 1u);
  EXPECT_EQ(st.columns[0].kind, ObsKind::String);
  const auto sa = encode_obs_table(a, st);
  EXPECT_EQ(sa[0].string(1), "B");
  EXPECT_FALSE(sa[0].is_valid(2));

  // Disagreeing tables name the table.
  InputObsTable c{"c.h5ad", 1, {category("cell_type", {0}, {"T"})}, {}};
  const std::vector<InputObsTable> bad = {a, c};
  try {
    (void)infer_obs_schema(bad);
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("c.h5ad"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)infer_obs_schema(tables, {.exclude = {"no such"}}), UsageError);
}

}  // namespace
}  // namespace tessera::cells
