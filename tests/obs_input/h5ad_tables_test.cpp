// obs and var dataframes of h5ad files (interop/h5ad_tables.hpp, spec deltacells.md §6.4, §7.5):
// files written by Debian's anndata with every column kind and missing values of every kind,
// the AnnData 0.7 layout and a nullable-string-array written with h5py, read by tessera and
// compared with what anndata/pandas read (tests/obs_input/obs_fixtures.py); damaged files end in
// FormatError naming the file and object, unsupported columns in UnsupportedError suggesting
// --obs-exclude; and the 10x HDF5 scan's barcodes and genomes.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "obs_input_support.hpp"
#include "support/testing.hpp"
#include "tessera/cells/obs_table.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/h5ad_tables.hpp"
#include "tessera/interop/tenx_h5.hpp"

namespace tessera::interop {
namespace {

using cells::ObsKind;
using columnar::ColumnType;
using obs_input::test::expect_values;
using obs_input::test::fixture;
using obs_input::test::have_anndata;
using tessera::testing::read_file_text;
using tessera::testing::TempDir;

#define SKIP_WITHOUT_ANNDATA() \
  if (!have_anndata()) GTEST_SKIP() << "/usr/bin/python3 lacks anndata, h5py, scipy or pandas"

nlohmann::json load(const std::filesystem::path& p) { return nlohmann::json::parse(read_file_text(p)); }

std::string kind_name(ObsKind k) { return std::string(cells::obs_kind_name(k)); }

// Compares one obs column with the fixture's expectation (category codes compared as numbers).
void expect_obs_column(const cells::InputObsColumn& c, const nlohmann::json& want) {
  const std::string name = want["name"].get<std::string>();
  ASSERT_EQ(c.name, name);
  ASSERT_EQ(kind_name(c.kind), want["kind"].get<std::string>()) << name;
  if (c.kind == ObsKind::Category) {
    ASSERT_EQ(c.values.type, ColumnType::Int32) << name;
    EXPECT_EQ(c.values.null_count(), 0u) << name;
    EXPECT_EQ(c.categories, want["categories"].get<std::vector<std::string>>()) << name;
    ASSERT_EQ(c.values.length, want["values"].size()) << name;
    for (std::uint64_t r = 0; r < c.values.length; ++r)
      EXPECT_EQ(c.values.value<std::int32_t>(r), want["values"][r].get<int>()) << name << " row " << r;
    return;
  }
  EXPECT_TRUE(c.categories.empty()) << name;
  if (want.contains("dtype")) {
    const auto t = columnar::column_type_from_name(want["dtype"].get<std::string>());
    ASSERT_TRUE(t) << want["dtype"];
    EXPECT_EQ(c.values.type, *t) << name;
  }
  if (c.kind == ObsKind::Bool) {
    EXPECT_EQ(c.values.type, ColumnType::Bool) << name;
  }
  if (c.kind == ObsKind::String) {
    EXPECT_EQ(c.values.type, ColumnType::String) << name;
  }
  expect_values(c.values, want["values"], name);
}

// A var column: categoricals come back as their strings.
void expect_var_column(const std::string& name, const columnar::Column& c, const nlohmann::json& want) {
  ASSERT_EQ(name, want["name"].get<std::string>());
  if (want["kind"] == "category") {
    ASSERT_EQ(c.type, ColumnType::String) << name;
    nlohmann::json strings = nlohmann::json::array();
    for (const auto& code : want["values"])
      strings.push_back(code.get<int>() < 0 ? nlohmann::json(nullptr) : want["categories"][code.get<int>()]);
    expect_values(c, strings, name);
    return;
  }
  expect_values(c, want["values"], name);
}

void expect_var(const cells::VarTable& var, const nlohmann::json& want) {
  ASSERT_EQ(var.columns.size(), want["var"].size());
  ASSERT_EQ(var.column_names.size(), var.columns.size());
  for (std::size_t i = 0; i < var.columns.size(); ++i)
    expect_var_column(var.column_names[i], var.columns[i], want["var"][i]);
  EXPECT_EQ(var.index_name, want["var_index_name"].is_null() ? "" : want["var_index_name"].get<std::string>());
  nlohmann::json index = want["var_index"];
  expect_values(var.index, index, "var index");
}

TEST(H5adTables, ObsEveryColumnKindMatchesAnndata) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"h5ad", (dir / "a.h5ad").string(), (dir / "a.json").string(), "--cells", "40"}));
  const auto want = load(dir / "a.json");
  const H5adObs obs = read_h5ad_obs((dir / "a.h5ad").string());
  EXPECT_EQ(obs.names, want["obs_names"].get<std::vector<std::string>>());
  EXPECT_EQ(obs.table.n_rows, 40u);
  EXPECT_EQ(obs.table.source, (dir / "a.h5ad").string());
  ASSERT_EQ(obs.table.columns.size(), want["obs"].size());
  for (std::size_t i = 0; i < want["obs"].size(); ++i) expect_obs_column(obs.table.columns[i], want["obs"][i]);
}

TEST(H5adTables, VarMatchesAnndataWithNamedIndex) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"h5ad", (dir / "a.h5ad").string(), (dir / "a.json").string(), "--cells", "8"}));
  const auto var = read_h5ad_var((dir / "a.h5ad").string());
  EXPECT_EQ(var.index_name, "gene_ids");
  expect_var(var, load(dir / "a.json"));
}

TEST(H5adTables, RawVarWithUseRaw) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"h5ad", (dir / "r.h5ad").string(), (dir / "r.json").string(), "--cells", "8", "--raw"}));
  const auto want = load(dir / "r.json");
  const auto raw = read_h5ad_var((dir / "r.h5ad").string(), {.use_raw = true});
  ASSERT_FALSE(raw.column_names.empty());
  EXPECT_EQ(raw.column_names.front(), "raw_symbols");
  expect_var(raw, want);
  const auto plain = read_h5ad_var((dir / "r.h5ad").string());
  EXPECT_EQ(plain.column_names, std::vector<std::string>{"n_cells"});
  EXPECT_EQ(plain.index.length, 3u);
}

TEST(H5adTables, LegacyCategoricalsAndNullableStrings) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"legacy", (dir / "l.h5ad").string(), (dir / "l.json").string()}));
  const auto want = load(dir / "l.json");
  const H5adObs obs = read_h5ad_obs((dir / "l.h5ad").string());
  EXPECT_EQ(obs.names, want["obs_names"].get<std::vector<std::string>>());
  ASSERT_EQ(obs.table.columns.size(), want["obs"].size());
  for (std::size_t i = 0; i < want["obs"].size(); ++i) expect_obs_column(obs.table.columns[i], want["obs"][i]);
  const auto var = read_h5ad_var((dir / "l.h5ad").string());
  expect_var(var, want);
}

TEST(H5adTables, UnsupportedColumnsNameTheColumnAndCanBeExcluded) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"broken", dir.path().string()}));
  const std::string path = (dir / "unsupported.h5ad").string();
  try {
    (void)read_h5ad_obs(path);
    FAIL() << "a 2-D obs column was read";
  } catch (const UnsupportedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("obs/matrix"), std::string::npos) << m;
    EXPECT_NE(m.find("--obs-exclude matrix"), std::string::npos) << m;
  }
  try {
    (void)read_h5ad_obs(path, {.exclude = {"matrix"}});
    FAIL() << "a dict obs column was read";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("--obs-exclude nested"), std::string::npos) << e.what();
  }
  const H5adObs obs = read_h5ad_obs(path, {.exclude = {"matrix", "nested", "absent"}});
  ASSERT_EQ(obs.table.columns.size(), 2u);
  EXPECT_EQ(obs.table.columns[0].name, "group");
  EXPECT_EQ(obs.table.columns[1].values.length, 4u);
  EXPECT_EQ(obs.table.skipped, (std::vector<std::string>{"matrix", "nested"}));  // "absent" is no column
  // The schema builder accepts exclusions of skipped columns, and refuses a name no table has.
  const std::vector<cells::InputObsTable> tables{obs.table};
  const auto schema = cells::infer_obs_schema(tables, {.exclude = {"matrix", "nested"}});
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"group", "x"}));
  EXPECT_THROW((void)cells::infer_obs_schema(tables, {.exclude = {"absent"}}), UsageError);
}

TEST(H5adTables, DamagedFramesAreFormatErrorsNamingFileAndObject) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"broken", dir.path().string()}));
  const auto expect_format = [&](const std::string& file, const std::string& object, const std::string& words) {
    const std::string path = (dir / file).string();
    try {
      (void)read_h5ad_obs(path);
      ADD_FAILURE() << file << " was read";
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << m;
      EXPECT_NE(m.find(object), std::string::npos) << m;
      EXPECT_NE(m.find(words), std::string::npos) << m;
      EXPECT_EQ(e.path(), path);
    }
  };
  expect_format("short_column.h5ad", "obs/x", "3 rows, but the index has 4");
  expect_format("bad_code.h5ad", "obs/group/codes", "code 5 at row 2");
  expect_format("no_column_order.h5ad", "obs", "column-order");
  try {
    (void)read_h5ad_var((dir / "short_column.h5ad").string(), {.use_raw = true});
    ADD_FAILURE() << "raw/var of a file without raw was read";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("raw/var"), std::string::npos) << e.what();
  }
}

// A vocabulary beyond max_categories turns the column into strings (§6.4) — read here, decided by
// the schema builder.
TEST(H5adTables, LargeVocabularyBecomesStringInTheSchema) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  ASSERT_TRUE(fixture({"h5ad", (dir / "a.h5ad").string(), (dir / "a.json").string(), "--cells", "40"}));
  const H5adObs obs = read_h5ad_obs((dir / "a.h5ad").string());
  const std::vector<cells::InputObsTable> tables{obs.table};
  const auto schema = cells::infer_obs_schema(tables, {.exclude = {}, .max_categories = 10});
  EXPECT_EQ(schema.column("cluster").kind, ObsKind::String);  // 40 categories
  EXPECT_EQ(schema.column("cell_type").kind, ObsKind::Category);
  EXPECT_EQ(schema.column("n_int").kind, ObsKind::Numeric);
  EXPECT_EQ(schema.column("n_bool").kind, ObsKind::Bool);
  EXPECT_EQ(schema.column("barcode_text").kind, ObsKind::String);
  const auto encoded = cells::encode_obs_table(obs.table, schema);
  ASSERT_EQ(encoded.size(), schema.columns.size());
  const auto& cluster = encoded[*schema.find("cluster")];
  ASSERT_EQ(cluster.type, ColumnType::String);
  EXPECT_EQ(cluster.string(0), "type_000");
}

TEST(TenxH5Scan, BarcodesAndGenomes) {
  SKIP_WITHOUT_ANNDATA();
  TempDir dir;
  const std::string script = (tessera::testing::source_dir() / "tests/cells/h5ad_fixtures.py").string();
  std::filesystem::create_directories(dir / "v3");
  auto r = tessera::testing::run_process(
      {"/usr/bin/python3", script, "tenx", (dir / "v3").string(), "--cells", "7", "--genes", "5", "--splits", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto s = scan_tenx_h5((dir / "v3/part_1.h5").string());
  EXPECT_EQ(s.barcodes, (std::vector<std::string>{"CELL000004-1", "CELL000005-1", "CELL000006-1"}));
  EXPECT_EQ(s.genomes, std::vector<std::string>(5, "GRCh38"));
  std::filesystem::create_directories(dir / "v2");
  r = tessera::testing::run_process({"/usr/bin/python3", script, "tenx", (dir / "v2").string(), "--cells", "4",
                                     "--genes", "3", "--v2-genomes", "hg19"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto v2 = scan_tenx_h5((dir / "v2/part_0.h5").string());
  EXPECT_EQ(v2.barcodes.size(), 4u);
  EXPECT_EQ(v2.barcodes.front(), "CELL000000-1");
  EXPECT_TRUE(v2.genomes.empty());
}

}  // namespace
}  // namespace tessera::interop
