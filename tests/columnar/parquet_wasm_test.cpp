// Parquet files written by an independent implementation — parquet-wasm, the Rust Apache Parquet
// writer — read by tessera to the same values: every stored type with nulls, dictionary and
// plain encodings, ZSTD, SNAPPY and uncompressed pages, data page v1 and v2, several row groups.
// (Without dictionaries the Rust writer's v2 profile encodes integers as DELTA_BINARY_PACKED,
// which the subset of spec §6.8 refuses by name; that case is checked to fail cleanly.)
#include <gtest/gtest.h>

#include "columnar_support.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::columnar {
namespace {

using test::all_types;
using test::node_dir;
using test::node_unavailable;
using test::random_column;

struct WasmCase {
  std::string compression;
  bool dictionary;
  std::string writer_version;
};

class ParquetWasmFiles : public ::testing::TestWithParam<WasmCase> {};

TEST_P(ParquetWasmFiles, ReadByTessera) {
  if (const auto why = node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!std::filesystem::exists(node_dir() / "node_modules/parquet-wasm")) GTEST_SKIP() << "parquet-wasm missing";
  const WasmCase& param = GetParam();
  testing::TempDir tmp;
  constexpr std::size_t kRows = 2500;
  std::vector<Column> sources;
  nlohmann::json spec = {{"compression", param.compression},
                         {"dictionary", param.dictionary},
                         {"writerVersion", param.writer_version},
                         {"rowGroupSize", 1000},
                         {"columns", nlohmann::json::array()}};
  for (std::size_t i = 0; i < all_types().size(); ++i) {
    const ColumnType type = all_types()[i];
    sources.push_back(random_column(type, kRows, 0.2, 500 + i));
    spec["columns"].push_back({{"name", "c" + std::to_string(i)},
                               {"type", std::string(column_type_name(type))},
                               {"data", test::json_values(sources.back())}});
  }
  testing::write_file_text(tmp / "spec.json", spec.dump());
  const auto file_path = tmp / "wasm.parquet";
  const auto run = testing::run_process(
      {"node", (node_dir() / "write_parquet_wasm.mjs").string(), file_path.string(), (tmp / "spec.json").string()});
  ASSERT_EQ(run.rc, 0) << run.err;

  const auto source = io::open_file(file_path.string());
  const ParquetFile file = ParquetFile::open(*source);
  ASSERT_EQ(file.columns().size(), sources.size());
  ASSERT_EQ(file.row_groups().size(), 3u);  // 1000 + 1000 + 500 rows
  for (std::size_t c = 0; c < sources.size(); ++c) {
    std::vector<std::vector<Column>> parts;
    for (std::size_t g = 0; g < file.row_groups().size(); ++g) {
      parts.emplace_back();
      parts.back().push_back(file.read_column(g, c));
    }
    const Column all = test::concat_parts(parts, 0, sources[c].type);
    test::expect_same_column(all, sources[c], "column " + file.columns()[c].name);
  }
}

TEST(ParquetWasm, DeltaEncodedColumnsAreRefusedByName) {
  if (const auto why = node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!std::filesystem::exists(node_dir() / "node_modules/parquet-wasm")) GTEST_SKIP() << "parquet-wasm missing";
  testing::TempDir tmp;
  const Column ints = random_column(ColumnType::Int64, 100, 0.0, 7);
  const nlohmann::json spec = {{"compression", "UNCOMPRESSED"},
                               {"dictionary", false},
                               {"writerVersion", "V2"},
                               {"columns", {{{"name", "n"}, {"type", "int64"}, {"data", test::json_values(ints)}}}}};
  testing::write_file_text(tmp / "spec.json", spec.dump());
  const auto path = tmp / "delta.parquet";
  ASSERT_EQ(testing::run_process(
                {"node", (node_dir() / "write_parquet_wasm.mjs").string(), path.string(), (tmp / "spec.json").string()})
                .rc,
            0);
  const auto source = io::open_file(path.string());
  const ParquetFile file = ParquetFile::open(*source);
  try {
    (void)file.read_column(0, 0);
    ADD_FAILURE() << "a DELTA_BINARY_PACKED column was read";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("DELTA_BINARY_PACKED"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Writers, ParquetWasmFiles,
                         ::testing::Values(WasmCase{"ZSTD", true, "V1"}, WasmCase{"ZSTD", false, "V1"},
                                           WasmCase{"SNAPPY", true, "V2"}, WasmCase{"UNCOMPRESSED", false, "V1"},
                                           WasmCase{"ZSTD", true, "V2"}),
                         [](const ::testing::TestParamInfo<WasmCase>& info) {
                           return info.param.compression + "_" + (info.param.dictionary ? "dict" : "plain") + "_" +
                                  info.param.writer_version;
                         });

}  // namespace
}  // namespace tessera::columnar
