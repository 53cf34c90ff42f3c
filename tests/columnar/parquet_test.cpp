// Parquet: tessera's writer profile read back by tessera and by hyparquet (npm) value for value,
// and files written by hyparquet-writer (data page v2, PLAIN and dictionary, UNCOMPRESSED /
// SNAPPY / GZIP, REQUIRED columns, several row groups and pages) read by tessera.
#include <gtest/gtest.h>

#include "columnar_support.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"
#include "tessera/version.hpp"

namespace tessera::columnar {
namespace {

using test::random_column;

std::vector<std::byte> write_parquet(const std::vector<ParquetColumnSpec>& specs,
                                     const std::vector<std::vector<Column>>& row_groups, std::vector<KeyValue> kv = {},
                                     ParquetWriterOptions options = {}) {
  io::MemorySink sink;
  ParquetWriter writer(sink, specs, std::move(kv), options);
  for (const auto& rg : row_groups) writer.write_row_group(rg);
  writer.finish();
  EXPECT_TRUE(sink.committed());
  return sink.bytes();
}

std::vector<ParquetColumnSpec> specs_for(const std::vector<ColumnType>& types, bool dictionary) {
  std::vector<ParquetColumnSpec> specs;
  for (const auto t : types)
    specs.push_back({std::string(column_type_name(t)) + "_col", t,
                     dictionary && (t == ColumnType::String || t == ColumnType::Int8)});
  return specs;
}

// Every stored type, three row groups (the middle one empty), nulls in every column.
TEST(Parquet, RoundTripEveryTypeThroughTesseraAndHyparquet) {
  const auto specs = specs_for(test::all_types(), true);
  std::vector<std::vector<Column>> groups(3);
  const std::size_t rows[] = {1500, 0, 777};
  for (std::size_t g = 0; g < 3; ++g)
    for (std::size_t c = 0; c < specs.size(); ++c)
      groups[g].push_back(random_column(specs[c].type, rows[g], 0.2, 10 * g + c));
  const auto bytes = write_parquet(specs, groups, {{"k", "v"}, {"empty", std::nullopt}});

  const auto source = io::memory_source(bytes, "every_type.parquet");
  const auto file = ParquetFile::open(*source);
  ASSERT_EQ(file.columns().size(), specs.size());
  ASSERT_EQ(file.row_groups().size(), 3u);
  EXPECT_EQ(file.num_rows(), 1500u + 777u);
  EXPECT_EQ(file.created_by(), std::string("tessera ") + kVersion);
  EXPECT_EQ(file.metadata("k"), "v");
  for (std::size_t c = 0; c < specs.size(); ++c) {
    EXPECT_EQ(file.columns()[c].name, specs[c].name);
    EXPECT_EQ(file.columns()[c].type, specs[c].type) << specs[c].name;
    EXPECT_TRUE(file.columns()[c].optional);
    EXPECT_TRUE(file.columns()[c].unsupported.empty());
    for (std::size_t g = 0; g < 3; ++g)
      test::expect_same_column(file.read_column(g, c), groups[g][c], specs[c].name + " rg " + std::to_string(g));
  }

  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  testing::write_file_bytes(dir / "every_type.parquet", bytes);
  const auto theirs = test::run_node("read_parquet.mjs", {(dir / "every_type.parquet").string()});
  EXPECT_EQ(theirs["row_groups"], (nlohmann::json{1500, 0, 777}));
  EXPECT_EQ(theirs["kv"]["k"], "v");
  for (std::size_t c = 0; c < specs.size(); ++c)
    test::expect_same_values(test::concat_parts(groups, c, specs[c].type), theirs["columns"][specs[c].name],
                             "hyparquet " + specs[c].name);
}

TEST(Parquet, OutputIsDeterministic) {
  const auto specs = specs_for(test::all_types(), true);
  std::vector<Column> cols;
  for (std::size_t c = 0; c < specs.size(); ++c) cols.push_back(random_column(specs[c].type, 999, 0.1, c));
  EXPECT_EQ(write_parquet(specs, {cols}), write_parquet(specs, {cols}));
}

// Columns above 1 MiB are cut into several pages; a dictionary whose PLAIN form exceeds 1 MiB
// falls back to PLAIN; a small vocabulary stays dictionary-encoded.
TEST(Parquet, PageSplitAndDictionaryFallback) {
  const std::size_t n = 200000;
  Column doubles = random_column(ColumnType::Double, n, 0.05, 1);  // ~1.5 MiB of values
  Column unique(ColumnType::String), vocab(ColumnType::String), codes(ColumnType::Int8);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string u = "cell_" + std::to_string(i * 7919) + "_barcode_ACGTACGTACGT";
    unique.append_string(i % 50 == 7 ? std::nullopt : std::optional<std::string_view>(u));
    const std::string v = "type_" + std::to_string(i % 13);
    vocab.append_string(v);
    codes.append<std::int8_t>(static_cast<std::int8_t>(i % 5 == 0 ? -1 : i % 11));
  }
  const std::vector<ParquetColumnSpec> specs = {{"x", ColumnType::Double, false},
                                                {"barcode", ColumnType::String, true},
                                                {"cell_type", ColumnType::String, true},
                                                {"code", ColumnType::Int8, true}};
  const std::vector<Column> cols = {doubles, unique, vocab, codes};
  const auto bytes = write_parquet(specs, {cols});
  const auto source = io::memory_source(bytes, "big.parquet");
  const auto file = ParquetFile::open(*source);
  const auto has = [](const std::vector<int>& encodings, Encoding e) {
    return std::find(encodings.begin(), encodings.end(), static_cast<int>(e)) != encodings.end();
  };
  const auto& chunks = file.row_groups()[0].columns;
  EXPECT_FALSE(has(chunks[0].encodings, Encoding::RleDictionary));
  EXPECT_FALSE(has(chunks[1].encodings, Encoding::RleDictionary)) << "a >1 MiB dictionary falls back to PLAIN";
  EXPECT_TRUE(has(chunks[2].encodings, Encoding::RleDictionary));
  EXPECT_TRUE(has(chunks[3].encodings, Encoding::RleDictionary));
  for (std::size_t c = 0; c < cols.size(); ++c)
    test::expect_same_column(file.read_column(0, c), cols[c], specs[c].name);

  // Count the data pages with a small page limit: 8,000 doubles of 8 bytes in 1 KiB pages.
  ParquetWriterOptions small;
  small.data_page_limit = 1024;
  const Column part = random_column(ColumnType::Double, 8000, 0.0, 3);
  const auto paged = write_parquet({{"x", ColumnType::Double, false}}, {{part}}, {}, small);
  const auto paged_source = io::memory_source(paged, "paged.parquet");
  const auto paged_file = ParquetFile::open(*paged_source);
  test::expect_same_column(paged_file.read_column(0, 0), part, "paged");
  EXPECT_GT(paged_file.row_groups()[0].columns[0].size, 62u * 1024u) << "about 63 pages of 1 KiB";

  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  testing::write_file_bytes(dir / "big.parquet", bytes);
  const auto theirs = test::run_node("read_parquet.mjs", {(dir / "big.parquet").string()});
  for (std::size_t c = 0; c < cols.size(); ++c)
    test::expect_same_values(cols[c], theirs["columns"][specs[c].name], "hyparquet " + specs[c].name);
}

TEST(Parquet, OpenMakesThreeSmallReadsAndEachChunkOne) {
  const auto specs = specs_for({ColumnType::Int32, ColumnType::String}, true);
  const auto bytes = write_parquet(
      specs, {{random_column(ColumnType::Int32, 100, 0.1, 1), random_column(ColumnType::String, 100, 0.1, 2)}});
  const auto inner = io::memory_source(bytes, "counted.parquet");
  io::CountingSource counted(*inner);
  const auto file = ParquetFile::open(counted);
  EXPECT_EQ(counted.reads(), 3u);  // tail, leading magic, footer
  counted.reset();
  file.read_column(0, 1);
  EXPECT_EQ(counted.reads(), 1u);
  EXPECT_EQ(counted.bytes(), file.row_groups()[0].columns[1].size);
}

TEST(Parquet, LimitsRefuseOversizedRowGroups) {
  const auto specs = specs_for({ColumnType::Int32}, false);
  const auto bytes = write_parquet(specs, {{random_column(ColumnType::Int32, 1000, 0.5, 1)}});
  const auto source = io::memory_source(bytes, "limits.parquet");
  ReadLimits limits;
  limits.max_rows_per_row_group = 999;
  const auto file = ParquetFile::open(*source, limits);
  EXPECT_THROW(file.read_column(0, 0), LimitError);
  limits = {};
  limits.max_footer_bytes = 16;
  EXPECT_THROW(ParquetFile::open(*source, limits), LimitError);
}

// A footer whose schema list claims 2^32 - 1 elements is refused before anything is allocated.
TEST(Parquet, HugeListCountInFooterIsAFormatError) {
  std::vector<std::byte> footer;
  for (const int b : {0x15, 0x04, 0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x00}) footer.push_back(std::byte(b));
  std::vector<std::byte> file;
  for (const char ch : std::string("PAR1")) file.push_back(std::byte(ch));
  file.insert(file.end(), footer.begin(), footer.end());
  for (const int b : {static_cast<int>(footer.size()), 0, 0, 0}) file.push_back(std::byte(b));
  for (const char ch : std::string("PAR1")) file.push_back(std::byte(ch));
  const auto source = io::memory_source(file, "huge.parquet");
  try {
    ParquetFile::open(*source);
    FAIL() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), "huge.parquet");
    EXPECT_NE(e.structure().find("footer"), std::string::npos) << e.structure();
  }
}

// Found by fuzz_parquet: a zero-length footer must be refused before Thrift reads from it.
TEST(Parquet, EmptyFooterIsAFormatError) {
  std::vector<std::byte> file(12, std::byte{0});
  std::memcpy(file.data(), "PAR1", 4);
  std::memcpy(file.data() + 8, "PAR1", 4);
  const auto source = io::memory_source(file, "empty_footer.parquet");
  EXPECT_THROW(ParquetFile::open(*source), FormatError);
}

TEST(Parquet, EncryptedFooterIsUnsupported) {
  std::vector<std::byte> file(16, std::byte{0});
  std::memcpy(file.data(), "PAR1", 4);
  std::memcpy(file.data() + 12, "PARE", 4);
  const auto source = io::memory_source(file, "enc.parquet");
  EXPECT_THROW(ParquetFile::open(*source), UnsupportedError);
}

struct HyparquetCase {
  std::string codec;
  std::string encoding;  // "" = the writer's choice
};

class HyparquetFiles : public ::testing::TestWithParam<HyparquetCase> {};

// Files written by hyparquet-writer (data page v2) read back by tessera value for value.
TEST_P(HyparquetFiles, ReadByTessera) {
  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const auto& param = GetParam();
  struct Source {
    const char* type;
    ColumnType stored;
    bool nullable;
  };
  const std::vector<Source> sources = {{"INT32", ColumnType::Int32, true},  {"INT64", ColumnType::Int64, true},
                                       {"FLOAT", ColumnType::Float, true},  {"DOUBLE", ColumnType::Double, true},
                                       {"BOOLEAN", ColumnType::Bool, true}, {"STRING", ColumnType::String, true},
                                       {"INT32", ColumnType::Int32, false}, {"STRING", ColumnType::String, false}};
  const std::size_t n = 2500;
  nlohmann::json spec = {{"codec", param.codec}, {"rowGroupSize", 1000}, {"pageSize", 2048}};
  std::vector<Column> expected;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    // Few distinct values so that dictionaries pay off.
    Column c = random_column(sources[i].stored, n, sources[i].nullable ? 0.25 : 0.0, 100 + i);
    if (sources[i].stored == ColumnType::Int32) {
      Column small(ColumnType::Int32);
      for (std::uint64_t r = 0; r < n; ++r)
        small.append<std::int32_t>(c.is_valid(r) ? std::optional<std::int32_t>(c.value<std::int32_t>(r) % 7)
                                                 : std::nullopt);
      c = small;
    }
    nlohmann::json col = {{"name", "c" + std::to_string(i)},
                          {"type", sources[i].type},
                          {"nullable", sources[i].nullable},
                          {"data", test::json_values(c)}};
    if (!param.encoding.empty() && sources[i].stored != ColumnType::Bool) col["encoding"] = param.encoding;
    spec["columns"].push_back(col);
    expected.push_back(c);
  }
  testing::TempDir dir;
  testing::write_file_text(dir / "spec.json", spec.dump());
  test::run_node("write_parquet.mjs", {(dir / "in.parquet").string(), (dir / "spec.json").string()});
  const auto source = io::open_file((dir / "in.parquet").string());
  const auto file = ParquetFile::open(*source);
  ASSERT_EQ(file.row_groups().size(), 3u);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(file.columns()[i].optional, sources[i].nullable);
    Column all(sources[i].stored);
    std::uint64_t row = 0;
    for (std::size_t g = 0; g < file.row_groups().size(); ++g) {
      const Column part = file.read_column(g, i);
      for (std::uint64_t r = 0; r < part.length; ++r, ++row) {
        ASSERT_EQ(part.is_valid(r), expected[i].is_valid(row)) << "column " << i << " row " << row;
        if (!part.is_valid(r)) continue;
        if (part.type == ColumnType::String) {
          ASSERT_EQ(part.string(r), expected[i].string(row));
        } else {
          const std::size_t w = column_type_width(part.type);
          ASSERT_EQ(0, std::memcmp(part.data.data() + r * w, expected[i].data.data() + row * w, w))
              << "column " << i << " row " << row;
        }
      }
    }
    EXPECT_EQ(row, n);
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, HyparquetFiles,
                         ::testing::Values(HyparquetCase{"UNCOMPRESSED", "PLAIN"}, HyparquetCase{"SNAPPY", "PLAIN"},
                                           HyparquetCase{"GZIP", "PLAIN"},
                                           HyparquetCase{"UNCOMPRESSED", "RLE_DICTIONARY"},
                                           HyparquetCase{"SNAPPY", "RLE_DICTIONARY"},
                                           HyparquetCase{"GZIP", "RLE_DICTIONARY"}, HyparquetCase{"SNAPPY", ""}),
                         [](const auto& info) {
                           return info.param.codec + "_" + (info.param.encoding.empty() ? "auto" : info.param.encoding);
                         });

TEST(Parquet, UnsupportedEncodingsAndTypesAreNamed) {
  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  nlohmann::json spec = {
      {"codec", "UNCOMPRESSED"},
      {"columns",
       {{{"name", "delta"}, {"type", "INT32"}, {"encoding", "DELTA_BINARY_PACKED"}, {"data", {1, 2, 3}}},
        {{"name", "when"}, {"type", "TIMESTAMP"}, {"data", {1, 2, 3}}},
        {{"name", "ok"}, {"type", "INT32"}, {"data", {1, 2, 3}}}}}};
  testing::TempDir dir;
  testing::write_file_text(dir / "spec.json", spec.dump());
  test::run_node("write_parquet.mjs", {(dir / "u.parquet").string(), (dir / "spec.json").string()});
  const auto source = io::open_file((dir / "u.parquet").string());
  const auto file = ParquetFile::open(*source);
  try {
    file.read_column(0, 0);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("DELTA_BINARY_PACKED"), std::string::npos) << e.what();
    EXPECT_NE(e.structure().find("'delta'"), std::string::npos) << e.structure();
  }
  EXPECT_FALSE(file.columns()[1].unsupported.empty());
  EXPECT_THROW(file.read_column(0, 1), UnsupportedError);
  EXPECT_EQ(file.read_column(0, 2).length, 3u);
}

}  // namespace
}  // namespace tessera::columnar

namespace tessera::columnar {
namespace {

// A DATA_PAGE header in the compact protocol with the given uncompressed size and num_values.
std::vector<std::byte> page_header(std::uint32_t uncompressed, std::uint32_t num_values) {
  std::vector<std::byte> out;
  const auto byte = [&](unsigned b) { out.push_back(static_cast<std::byte>(b)); };
  const auto varint_i32 = [&](std::uint32_t v) {
    std::uint64_t z = static_cast<std::uint64_t>(v) << 1;  // zigzag of a non-negative int32
    while (z >= 0x80) {
      byte(static_cast<unsigned>((z & 0x7F) | 0x80));
      z >>= 7;
    }
    byte(static_cast<unsigned>(z));
  };
  byte(0x15), varint_i32(0);             // 1: type DATA_PAGE
  byte(0x15), varint_i32(uncompressed);  // 2: uncompressed_page_size
  byte(0x15), varint_i32(0);             // 3: compressed_page_size
  byte(0x2C);                            // 5: data_page_header
  byte(0x15), varint_i32(num_values);    //   1: num_values
  byte(0x15), varint_i32(0);             //   2: encoding PLAIN
  byte(0x15), varint_i32(3);             //   3: definition_level_encoding RLE
  byte(0x15), varint_i32(3);             //   4: repetition_level_encoding RLE
  byte(0x00), byte(0x00);
  return out;
}

TEST(Parquet, HugePageCountsAreRefusedBeforeAllocating) {
  ParquetColumn column;
  column.name = "donor";
  column.physical_type = static_cast<int>(PhysicalType::Int32);
  column.type = ColumnType::Int32;
  ColumnChunkInfo info;
  info.codec = static_cast<int>(Compression::Zstd);
  const ReadLimits limits;
  const auto huge_size = page_header(INT32_MAX, 10);
  EXPECT_THROW(decode_column_chunk(huge_size, column, info, 10, limits, "f.parquet", "row group 0 column 'donor'"),
               LimitError);
  const auto huge_count = page_header(0, INT32_MAX);
  try {
    decode_column_chunk(huge_count, column, info, 10, limits, "f.parquet", "row group 0 column 'donor'");
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), "f.parquet");
    EXPECT_EQ(e.structure(), "row group 0 column 'donor' page 0");
    EXPECT_NE(std::string(e.what()).find("exceeds the 10 rows left"), std::string::npos) << e.what();
  }
  ReadLimits few;
  few.max_rows_per_row_group = 5;
  EXPECT_THROW(decode_column_chunk(huge_count, column, info, 10, few, "f.parquet", "rg"), LimitError);
}

}  // namespace
}  // namespace tessera::columnar
