// Arrow IPC file format: tessera's cache files read back by tessera (zero-copy, from a memory
// map) and by apache-arrow (npm) value for value, and files apache-arrow writes read by tessera.
#include <gtest/gtest.h>

#include "columnar_support.hpp"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar {
namespace {

using test::random_column;

std::vector<std::byte> write_arrow(const std::vector<ArrowField>& fields,
                                   const std::vector<std::vector<Column>>& batches) {
  io::MemorySink sink;
  ArrowFileWriter writer(sink, fields);
  for (const auto& b : batches) writer.write_batch(b);
  writer.finish();
  EXPECT_TRUE(sink.committed());
  return sink.bytes();
}

TEST(ArrowIpc, CacheFileLayout) {
  // One field, three batches (one empty, one without nulls): the spec §6.9 file.
  const std::vector<ArrowField> fields = {{"cell type", ColumnType::Int8, true}};
  const auto bytes = write_arrow(fields, {{random_column(ColumnType::Int8, 10, 0.0, 1)},
                                          {random_column(ColumnType::Int8, 0, 0.0, 2)},
                                          {random_column(ColumnType::Int8, 5, 0.5, 3)}});
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(0, std::memcmp(bytes.data(), "ARROW1\0\0", 8));
  EXPECT_EQ(0, std::memcmp(bytes.data() + bytes.size() - 6, "ARROW1", 6));
  const auto footer_length = load_le<std::int32_t>(bytes.data() + bytes.size() - 10);
  const std::size_t eos = bytes.size() - 10 - static_cast<std::size_t>(footer_length) - 8;
  EXPECT_EQ(load_le<std::uint32_t>(bytes.data() + eos), 0xFFFFFFFFu);
  EXPECT_EQ(load_le<std::uint32_t>(bytes.data() + eos + 4), 0u);
  EXPECT_EQ(eos % 8, 0u);
  EXPECT_EQ(load_le<std::uint32_t>(bytes.data() + 8), 0xFFFFFFFFu);  // schema message continuation
  EXPECT_EQ((8 + load_le<std::int32_t>(bytes.data() + 12)) % 8, 0);
}

TEST(ArrowIpc, RoundTripEveryTypeZeroCopyFromMmap) {
  std::vector<ArrowField> fields;
  for (const auto t : test::all_types()) fields.push_back({std::string(column_type_name(t)), t, true});
  std::vector<std::vector<Column>> batches(4);
  const std::size_t rows[] = {300, 0, 1000, 17};
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t f = 0; f < fields.size(); ++f)
      batches[b].push_back(random_column(fields[f].type, rows[b], b == 2 ? 0.0 : 0.3, 100 * b + f));
  const auto bytes = write_arrow(fields, batches);
  EXPECT_EQ(bytes, write_arrow(fields, batches)) << "deterministic";

  testing::TempDir dir;
  const auto path = dir / "all.arrow";
  testing::write_file_bytes(path, bytes);
  const auto source = io::open_file(path.string(), io::OpenMode::Mmap);
  const auto file = ArrowFile::open(*source);
  ASSERT_EQ(file.fields().size(), fields.size());
  ASSERT_EQ(file.num_batches(), 4u);
  const std::byte* base = source->view(0, source->size());
  ASSERT_NE(base, nullptr);
  for (std::size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(file.batch_length(b), rows[b]);
    for (std::size_t f = 0; f < fields.size(); ++f) {
      EXPECT_EQ(file.fields()[f].name, fields[f].name);
      EXPECT_EQ(file.fields()[f].type, fields[f].type);
      const auto& view = file.column(b, f);
      if (!view.values.empty()) {
        EXPECT_GE(view.values.data(), base);
        EXPECT_LT(view.values.data(), base + source->size());
        EXPECT_EQ((view.values.data() - base) % 8, 0) << "buffers start at multiples of 8";
      }
      EXPECT_EQ(view.null_count, batches[b][f].null_count());
      test::expect_same_column(view.to_column(), batches[b][f], fields[f].name + " batch " + std::to_string(b));
    }
  }

  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const auto theirs = test::run_node("read_arrow.mjs", {path.string()});
  EXPECT_EQ(theirs["batches"], (nlohmann::json{300, 0, 1000, 17}));
  for (std::size_t f = 0; f < fields.size(); ++f)
    test::expect_same_values(test::concat_parts(batches, f, fields[f].type), theirs["columns"][fields[f].name],
                             "apache-arrow " + fields[f].name);
}

TEST(ArrowIpc, ReadsApacheArrowFiles) {
  if (const auto why = test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  nlohmann::json spec;
  std::vector<std::vector<Column>> expected(2);
  const std::size_t rows[] = {257, 40};
  for (std::size_t b = 0; b < 2; ++b) {
    nlohmann::json batch;
    for (std::size_t f = 0; f < test::all_types().size(); ++f) {
      const auto t = test::all_types()[f];
      expected[b].push_back(random_column(t, rows[b], b == 0 ? 0.2 : 0.0, 50 * b + f));
      batch["columns"].push_back({{"name", std::string(column_type_name(t))},
                                  {"type", column_type_name(t)},
                                  {"data", test::json_values(expected[b].back())}});
    }
    spec["batches"].push_back(batch);
  }
  testing::TempDir dir;
  testing::write_file_text(dir / "spec.json", spec.dump());
  test::run_node("write_arrow.mjs", {(dir / "js.arrow").string(), (dir / "spec.json").string()});
  const auto source = io::open_file((dir / "js.arrow").string(), io::OpenMode::Pread);
  const auto file = ArrowFile::open(*source);
  ASSERT_EQ(file.num_batches(), 2u);
  ASSERT_EQ(file.fields().size(), test::all_types().size());
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t f = 0; f < file.fields().size(); ++f)
      test::expect_same_column(file.column(b, f).to_column(), expected[b][f],
                               file.fields()[f].name + " batch " + std::to_string(b));
}

TEST(ArrowIpc, WriterRefusesMismatchedColumns) {
  io::MemorySink sink;
  ArrowFileWriter writer(sink, {{"a", ColumnType::Int32, true}});
  const std::vector<Column> wrong = {random_column(ColumnType::Int64, 3, 0.0, 1)};
  EXPECT_THROW(writer.write_batch(wrong), UsageError);
}

}  // namespace
}  // namespace tessera::columnar
