// Robustness: every truncation and many single-bit flips of a small Parquet file and a small Arrow
// IPC file end in a typed tessera::Error or a successful read, never a crash. Also (re)writes the
// fuzz seeds under fuzz/corpus/ when TESSERA_WRITE_FUZZ_CORPUS is set.
#include <gtest/gtest.h>

#include <cstdlib>

#include "columnar_support.hpp"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar {
namespace {

using test::random_column;

std::vector<std::byte> small_parquet() {
  io::MemorySink sink;
  ParquetWriter writer(sink,
                       {{"code", ColumnType::Int8, true},
                        {"name", ColumnType::String, true},
                        {"x", ColumnType::Double, false},
                        {"flag", ColumnType::Bool, false}},
                       {{"origin", "test"}}, {});
  for (std::uint64_t g = 0; g < 2; ++g)
    writer.write_row_group(std::vector<Column>{
        random_column(ColumnType::Int8, 20, 0.1, g), random_column(ColumnType::String, 20, 0.2, g),
        random_column(ColumnType::Double, 20, 0.2, g), random_column(ColumnType::Bool, 20, 0.3, g)});
  writer.finish();
  return sink.bytes();
}

std::vector<std::byte> small_arrow() {
  io::MemorySink sink;
  ArrowFileWriter writer(sink, {{"name", ColumnType::String, true}, {"n", ColumnType::UInt16, true}});
  for (std::uint64_t b = 0; b < 2; ++b)
    writer.write_batch(std::vector<Column>{random_column(ColumnType::String, 12, 0.2, b),
                                           random_column(ColumnType::UInt16, 12, 0.3, b)});
  writer.finish();
  return sink.bytes();
}

// Reads everything; returns normally or throws a tessera::Error.
void read_parquet_fully(std::span<const std::byte> bytes) {
  const auto source = io::memory_source(bytes, "mutant.parquet");
  ReadLimits limits;
  limits.max_rows_per_row_group = 1 << 16;
  limits.max_page_bytes = 1 << 20;
  limits.max_string_bytes = 1 << 20;
  const auto file = ParquetFile::open(*source, limits);
  for (std::size_t g = 0; g < file.row_groups().size(); ++g)
    for (std::size_t c = 0; c < file.columns().size(); ++c) {
      const Column col = file.read_column(g, c);
      col.check_shape();
    }
}

void read_arrow_fully(std::span<const std::byte> bytes) {
  const auto source = io::memory_source(bytes, "mutant.arrow");
  const auto file = ArrowFile::open(*source);
  for (std::size_t b = 0; b < file.num_batches(); ++b)
    for (std::size_t f = 0; f < file.fields().size(); ++f) file.column(b, f).to_column().check_shape();
}

template <typename Read>
void sweep(const std::vector<std::byte>& bytes, Read read, std::size_t& ok, std::size_t& errors) {
  const auto attempt = [&](std::span<const std::byte> mutant) {
    try {
      read(mutant);
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  };
  for (std::size_t len = 0; len < bytes.size(); ++len) attempt(std::span(bytes).first(len));
  for (std::size_t pos = 0; pos < bytes.size(); ++pos)
    for (const unsigned bit : {pos % 8, (pos * 5 + 3) % 8}) {
      auto mutant = bytes;
      mutant[pos] ^= static_cast<std::byte>(1u << bit);
      attempt(mutant);
    }
}

TEST(ColumnarCorruption, ParquetTruncationsAndBitFlips) {
  const auto bytes = small_parquet();
  ASSERT_LT(bytes.size(), 4096u);
  read_parquet_fully(bytes);
  std::size_t ok = 0, errors = 0;
  sweep(bytes, read_parquet_fully, ok, errors);
  EXPECT_GE(errors, bytes.size()) << "every truncation fails";
  RecordProperty("parquet_mutants_ok", static_cast<int>(ok));
}

TEST(ColumnarCorruption, ArrowTruncationsAndBitFlips) {
  const auto bytes = small_arrow();
  ASSERT_LT(bytes.size(), 4096u);
  read_arrow_fully(bytes);
  std::size_t ok = 0, errors = 0;
  sweep(bytes, read_arrow_fully, ok, errors);
  EXPECT_GE(errors, bytes.size()) << "every truncation fails";
}

// The fuzz seeds small.parquet and small.arrow are these files as the writers make them today
// (the writers are deterministic); TESSERA_WRITE_FUZZ_CORPUS=1 rewrites them after a format change.
TEST(ColumnarCorruption, FuzzSeedsAreWhatTheWritersMakeToday) {
  const auto root = testing::source_dir() / "fuzz/corpus";
  const std::pair<std::filesystem::path, std::vector<std::byte>> seeds[] = {
      {root / "fuzz_parquet/small.parquet", small_parquet()}, {root / "fuzz_arrow_ipc/small.arrow", small_arrow()}};
  for (const auto& [path, bytes] : seeds) {
    if (std::getenv("TESSERA_WRITE_FUZZ_CORPUS") != nullptr) {
      std::filesystem::create_directories(path.parent_path());
      testing::write_file_bytes(path, bytes);
    }
    EXPECT_EQ(testing::read_file_bytes(path), bytes) << path << " (TESSERA_WRITE_FUZZ_CORPUS=1 rewrites it)";
  }
}

}  // namespace
}  // namespace tessera::columnar
