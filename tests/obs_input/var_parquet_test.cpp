// `var.parquet` (cells/var_table.hpp, spec deltacells.md §6.7): tessera's writer read back by
// tessera and by parquet-wasm (the Rust Apache Parquet reader, tests/columnar/node); the `pandas`
// metadata checked against what pyarrow's Table.from_pandas would write for the same frame
// (pyarrow is not in Debian 12, so tests/obs_input/obs_fixtures.py derives it from pandas' own
// dtypes); the index found through `index_columns` (named, unnamed, RangeIndex, none); P8.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "obs_input_support.hpp"
#include "support/testing.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/h5ad_tables.hpp"
#include "tessera/io/byte_sink.hpp"

namespace tessera::cells {
namespace {

using columnar::Column;
using columnar::ColumnType;
using obs_input::test::fixture;
using obs_input::test::have_anndata;
using tessera::testing::read_file_text;
using tessera::testing::TempDir;
using tessera::testing::write_file_bytes;
using tessera::testing::write_file_text;

std::filesystem::path node_dir() { return tessera::testing::source_dir() / "tests/columnar/node"; }

std::string node_unavailable() {
  if (!std::filesystem::exists(node_dir() / "node_modules/parquet-wasm") ||
      !std::filesystem::exists(node_dir() / "node_modules/apache-arrow"))
    return "npm packages missing: run `npm ci --prefix tests/columnar/node`";
  if (tessera::testing::run_process({"node", "--version"}).rc != 0) return "node is not on PATH";
  return {};
}

nlohmann::json read_with_parquet_wasm(const std::filesystem::path& file) {
  const auto r =
      tessera::testing::run_process({"node", (node_dir() / "read_parquet_wasm.mjs").string(), file.string()});
  if (r.rc != 0) throw std::runtime_error("read_parquet_wasm.mjs failed: " + r.err);
  return nlohmann::json::parse(r.out);
}

VarTable sample_table(bool named) {
  VarTable t;
  const auto add = [&](const std::string& name, Column c) {
    t.column_names.push_back(name);
    t.columns.push_back(std::move(c));
  };
  add("gene_symbols", columnar::make_string_column({"TP53", "grün-ß", std::nullopt, "日本😀", ""}));
  add("n_cells",
      columnar::make_column<std::int64_t>(ColumnType::Int64, {0, -5, std::numeric_limits<std::int64_t>::min(), 7, 8}));
  add("n_int", columnar::make_column<std::uint16_t>(ColumnType::UInt16, {1, std::nullopt, 65535, 3, std::nullopt}));
  add("mean", columnar::make_column<double>(ColumnType::Double, {0.5, std::nan(""), -1e300, 0.0, 2.25}));
  add("dispersion", columnar::make_column<float>(ColumnType::Float, {0.1f, 2.0f, std::nullopt, -3.5f, 1e-7f}));
  add("highly_variable", columnar::make_column<std::uint8_t>(ColumnType::Bool, {1, 0, 1, std::nullopt, 0}));
  add("big", columnar::make_column<std::uint64_t>(ColumnType::UInt64, {0, ~std::uint64_t{0}, 2, 3, 4}));
  t.index = columnar::make_string_column({"ENSG1", "ENSG2", "ENSG3", "ENSG4", "ENSG5"});
  if (named) t.index_name = "gene_ids";
  return t;
}

std::vector<std::byte> write_bytes(const VarTable& t) {
  io::MemorySink sink;
  write_var_parquet(sink, t);
  EXPECT_TRUE(sink.committed());
  return sink.bytes();
}

// `mine` with NaN stored as null, compared with what came back.
void expect_same(const Column& written, const Column& read, const std::string& what) {
  ASSERT_EQ(written.type, read.type) << what;
  ASSERT_EQ(written.length, read.length) << what;
  for (std::uint64_t r = 0; r < written.length; ++r) {
    bool valid = written.is_valid(r);
    if (valid && written.type == ColumnType::Double) valid = !std::isnan(written.value<double>(r));
    ASSERT_EQ(read.is_valid(r), valid) << what << " row " << r;
    if (!valid) continue;
    EXPECT_EQ(obs_input::test::python_text(written, r), obs_input::test::python_text(read, r)) << what << " row " << r;
  }
}

TEST(VarParquet, RoundTripThroughTessera) {
  for (const bool named : {false, true}) {
    const VarTable t = sample_table(named);
    const auto bytes = write_bytes(t);
    const auto src = io::memory_source(bytes, "var.parquet");
    const VarTable back = read_var_parquet(*src, 5);
    EXPECT_EQ(back.column_names, t.column_names);
    EXPECT_EQ(back.index_name, t.index_name);
    ASSERT_EQ(back.columns.size(), t.columns.size());
    for (std::size_t i = 0; i < t.columns.size(); ++i) expect_same(t.columns[i], back.columns[i], t.column_names[i]);
    expect_same(t.index, back.index, "index");
    // The layout: the index is the last column, named as pandas expects.
    const auto file = columnar::ParquetFile::open(*src);
    EXPECT_EQ(file.columns().back().name, named ? "gene_ids" : "__index_level_0__");
    EXPECT_EQ(file.row_groups().size(), 1u);
  }
}

// Every truncation and two bit flips per byte of a var.parquet: reading it (footer, pages and the
// pandas metadata) ends in a tessera::Error or a table — never a crash or another exception
// (values may differ where nothing checksums them: a flipped index name reads as no index).
// Every truncation fails (the trailing magic goes first).
TEST(VarParquet, TruncationsAndBitFlipsEndInTypedErrors) {
  const auto bytes = write_bytes(sample_table(true));
  std::size_t errors = 0;
  const auto attempt = [&](std::span<const std::byte> mutant) {
    try {
      const auto src = io::memory_source(mutant, "var.parquet");
      (void)read_var_parquet(*src, 5);
    } catch (const Error&) {
      ++errors;
    }
  };
  for (std::size_t n = 0; n < bytes.size(); ++n) attempt(std::span(bytes).first(n));
  EXPECT_EQ(errors, bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (const unsigned bit : {static_cast<unsigned>(i % 8), static_cast<unsigned>((i * 3 + 5) % 8)}) {
      auto mutant = bytes;
      mutant[i] ^= static_cast<std::byte>(1u << bit);
      attempt(mutant);
    }
}

TEST(VarParquet, PandasMetadataLayout) {
  const auto bytes = write_bytes(sample_table(false));
  const auto src = io::memory_source(bytes, "var.parquet");
  const auto file = columnar::ParquetFile::open(*src);
  const auto text = file.metadata("pandas");
  ASSERT_TRUE(text);
  const auto meta = codec::json::parse_strict(*text);
  EXPECT_EQ(meta["index_columns"], nlohmann::ordered_json::array({"__index_level_0__"}));
  EXPECT_EQ(meta["pandas_version"], "1.5.3");
  EXPECT_EQ(meta["creator"]["library"], "tessera");
  EXPECT_EQ(meta["column_indexes"][0]["metadata"]["encoding"], "UTF-8");
  const auto& cols = meta["columns"];
  ASSERT_EQ(cols.size(), 8u);
  const auto expect_col = [&](std::size_t i, const char* pandas_type, const char* numpy_type) {
    EXPECT_EQ(cols[i]["pandas_type"], pandas_type) << cols[i].dump();
    EXPECT_EQ(cols[i]["numpy_type"], numpy_type) << cols[i].dump();
  };
  expect_col(0, "unicode", "object");
  expect_col(1, "int64", "int64");
  expect_col(2, "uint16", "UInt16");
  expect_col(3, "float64", "float64");
  expect_col(4, "float32", "float32");
  expect_col(5, "bool", "boolean");
  expect_col(6, "uint64", "uint64");
  expect_col(7, "unicode", "object");
  EXPECT_TRUE(cols[7]["name"].is_null());
  EXPECT_EQ(cols[7]["field_name"], "__index_level_0__");
  EXPECT_EQ(cols[0]["name"], "gene_symbols");
  EXPECT_EQ(cols[0]["field_name"], "gene_symbols");
  EXPECT_TRUE(cols[0]["metadata"].is_null());
}

TEST(VarParquet, ParquetWasmReadsTheSameValues) {
  if (const auto why = node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const VarTable t = sample_table(true);
  write_file_bytes(dir / "var.parquet", write_bytes(t));
  const auto got = read_with_parquet_wasm(dir / "var.parquet");
  std::vector<std::string> names = t.column_names;
  names.push_back("gene_ids");
  EXPECT_EQ(got["names"].get<std::vector<std::string>>(), names);
  ASSERT_TRUE(got["kv"].contains("pandas"));
  EXPECT_EQ(codec::json::parse_strict(got["kv"]["pandas"].get<std::string>())["index_columns"][0], "gene_ids");
  for (std::size_t i = 0; i <= t.columns.size(); ++i) {
    const Column& c = i < t.columns.size() ? t.columns[i] : t.index;
    const auto& theirs = got["columns"][names[i]];
    ASSERT_EQ(theirs.size(), c.length) << names[i];
    for (std::uint64_t r = 0; r < c.length; ++r) {
      const bool nan = c.type == ColumnType::Double && c.is_valid(r) && std::isnan(c.value<double>(r));
      if (!c.is_valid(r) || nan) {
        EXPECT_TRUE(theirs[r].is_null()) << names[i] << " row " << r << ": " << theirs[r].dump();
        continue;
      }
      ASSERT_TRUE(theirs[r].is_string()) << names[i] << " row " << r;
      const std::string s = theirs[r].get<std::string>();
      switch (c.type) {
        case ColumnType::Float:
          EXPECT_EQ(std::strtod(s.c_str(), nullptr), static_cast<double>(c.value<float>(r)));
          break;
        case ColumnType::Double: EXPECT_EQ(std::strtod(s.c_str(), nullptr), c.value<double>(r)); break;
        case ColumnType::Bool: EXPECT_EQ(s, c.value<std::uint8_t>(r) ? "true" : "false"); break;
        default: EXPECT_EQ(s, obs_input::test::python_text(c, r)) << names[i] << " row " << r;
      }
    }
  }
}

// h5ad var → tessera → var.parquet: parquet-wasm reads anndata's values, and the pandas
// metadata is what pyarrow would write for that frame.
TEST(VarParquet, FromH5adMatchesPandas) {
  if (!have_anndata()) GTEST_SKIP() << "/usr/bin/python3 lacks anndata, h5py, scipy or pandas";
  if (const auto why = node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  for (const bool raw : {false, true}) {
    TempDir dir;
    const std::string h5ad = (dir / "a.h5ad").string();
    std::vector<std::string> args{"h5ad", h5ad, (dir / "a.json").string(), "--cells", "8"};
    if (raw) args.push_back("--raw");
    ASSERT_TRUE(fixture(args));
    const VarTable var = interop::read_h5ad_var(h5ad, {.use_raw = raw});
    {
      io::AtomicFileSink sink((dir / "var.parquet").string());
      write_var_parquet(sink, var);
    }
    const auto src = io::open_file((dir / "var.parquet").string());
    const auto file = columnar::ParquetFile::open(*src);
    write_file_text(dir / "meta.json", *file.metadata("pandas"));
    write_file_text(dir / "wasm.json", read_with_parquet_wasm(dir / "var.parquet").dump());
    std::vector<std::string> check{"pandas_meta", h5ad, (dir / "meta.json").string(), (dir / "wasm.json").string()};
    if (raw) check.push_back("--raw");
    EXPECT_TRUE(fixture(check)) << (raw ? "raw/var" : "var");
    const VarTable back = read_var_parquet(*src, var.index.length);
    EXPECT_EQ(back.column_names, var.column_names);
    EXPECT_EQ(back.index_name, var.index_name);
  }
}

TEST(VarParquet, WrongRowCountIsP8) {
  const auto bytes = write_bytes(sample_table(false));
  const auto src = io::memory_source(bytes, "ds/var.parquet");
  try {
    (void)read_var_parquet(*src, 6);
    FAIL() << "read with the wrong gene count";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ds/var.parquet"), std::string::npos) << m;
    EXPECT_NE(m.find("P8"), std::string::npos) << m;
    EXPECT_NE(m.find("6 genes"), std::string::npos) << m;
  }
}

// Files tessera did not write: several row groups; a RangeIndex descriptor, no metadata, a
// pyarrow-style named level without a `columns` entry.
std::vector<std::byte> foreign_file(const std::vector<columnar::KeyValue>& kv, const std::string& index_field) {
  io::MemorySink sink;
  columnar::ParquetWriter w(sink, {{"symbol", ColumnType::String, false}, {index_field, ColumnType::String, false}},
                            kv);
  const std::vector<Column> g1{columnar::make_string_column({"A", "B"}), columnar::make_string_column({"g0", "g1"})};
  const std::vector<Column> g2{columnar::make_string_column({"C"}), columnar::make_string_column({"g2"})};
  w.write_row_group(g1);
  w.write_row_group(g2);
  w.finish();
  return sink.bytes();
}

TEST(VarParquet, IndexFromForeignMetadata) {
  const auto read = [](const std::vector<std::byte>& bytes) {
    const auto src = io::memory_source(bytes, "var.parquet");
    return read_var_parquet(*src, 3);
  };
  {
    const auto t = read(
        foreign_file({{"pandas", R"({"index_columns": ["__index_level_0__"], "columns": []})"}}, "__index_level_0__"));
    EXPECT_EQ(t.column_names, std::vector<std::string>{"symbol"});
    EXPECT_EQ(t.index_name, "");
    ASSERT_EQ(t.index.length, 3u);
    EXPECT_EQ(t.index.string(2), "g2");
    EXPECT_EQ(t.columns[0].string(2), "C");
  }
  {
    const auto t = read(foreign_file({{"pandas", R"({"index_columns": ["gene"]})"}}, "gene"));
    EXPECT_EQ(t.index_name, "gene");
    EXPECT_EQ(t.index.length, 3u);
  }
  {
    const auto t = read(foreign_file(
        {{"pandas", R"({"index_columns": [{"kind": "range", "name": null, "start": 0, "stop": 3, "step": 1}]})"}},
        "other"));
    EXPECT_EQ(t.column_names, (std::vector<std::string>{"symbol", "other"}));
    EXPECT_EQ(t.index.length, 0u);
  }
  {
    const auto t = read(foreign_file({}, "other"));
    EXPECT_EQ(t.column_names.size(), 2u);
    EXPECT_EQ(t.index.length, 0u);
  }
  EXPECT_THROW(read(foreign_file({{"pandas", R"({"index_columns": ["missing"]})"}}, "x")), FormatError);
  EXPECT_THROW(read(foreign_file({{"pandas", "{not json"}}, "x")), FormatError);
}

TEST(VarParquet, WriterRefusesInconsistentTables) {
  VarTable t = sample_table(false);
  t.columns[1] = columnar::make_column<std::int64_t>(ColumnType::Int64, {1, 2});
  io::MemorySink sink;
  EXPECT_THROW(write_var_parquet(sink, t), UsageError);
  VarTable dup = sample_table(true);
  dup.column_names[0] = "gene_ids";
  EXPECT_THROW(write_var_parquet(sink, dup), UsageError);
}

}  // namespace
}  // namespace tessera::cells
