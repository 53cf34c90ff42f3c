// TetWriter: every §1.10 validation rule, call-order errors, byte-identical regeneration of the
// conformance fixtures written by the reference writer, zstd round trips, streaming versus
// whole-array writes, and footers (inline and spilled) read back through TetFile.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"
#include "writer_test_support.hpp"

namespace {

using namespace tessera::tet::writer_testing;  // NOLINT(google-build-using-namespace): the shared helpers

// Re-creates `source` through TetWriter: same datasets, codecs, TIDX settings and footer, data
// read back with TetFile.
std::vector<std::byte> rebuild(const tet::TetFile& source, unsigned threads = 0) {
  WriterOptions options = reference_options();
  options.memory_budget_percent_bps = source.layout().index_header.memory_budget_percent_bps;
  options.memory_budget_bytes = source.layout().index_header.memory_budget_bytes;
  options.threads = threads;
  if (source.layout().footer) {
    options.history = source.layout().footer->history;
    options.metadata = source.layout().footer->metadata;
  }
  io::MemorySink sink;
  TetWriter writer(sink, options);
  for (const auto& ds : source.datasets()) {
    const auto codec = static_cast<Codec>(source.entry(ds.entry_of_chunk[0]).codec);
    EXPECT_EQ(writer.add_dataset({ds.name, ds.dtype, ds.shape, ds.chunk_shape, codec, 3}), ds.id);
  }
  for (const auto& ds : source.datasets()) writer.write_dataset(ds.id, read_all(source, ds));
  writer.commit();
  return sink.bytes();
}

// ---- byte-identical regeneration of the reference writer's raw files --------------------------

TEST(TetWriterFixtures, SampleIsByteIdentical) {
  const auto out = write_one(spec("temperature", DType::F32, {2, 3}, {2, 2}), bytes_of(iota_values<float>(6, 1.0f)));
  expect_same_bytes(out, read_file_bytes(tet_dir() / "sample.tet"));
}

TEST(TetWriterFixtures, MultichunkU8U32F16AreByteIdentical) {
  expect_same_bytes(write_one(spec("a", DType::U8, {2, 3}, {2, 2}), bytes_of(iota_values<std::uint8_t>(6, 1))),
                    read_file_bytes(tet_dir() / "multichunk_u8.tet"));
  expect_same_bytes(write_one(spec("a", DType::U32, {2, 3}, {2, 2}), bytes_of(iota_values<std::uint32_t>(6, 1))),
                    read_file_bytes(tet_dir() / "multichunk_u32.tet"));
  std::vector<std::uint16_t> halves;
  for (int v = 1; v <= 6; ++v) halves.push_back(tessera::float_to_half(static_cast<float>(v)));
  ASSERT_EQ(halves[0], 0x3C00);
  expect_same_bytes(write_one(spec("a", DType::F16, {2, 3}, {2, 2}), bytes_of(halves)),
                    read_file_bytes(tet_dir() / "multichunk_f16.tet"));
}

TEST(TetWriterFixtures, LargeIsByteIdenticalWholeAndStreamed) {
  const auto expected = read_file_bytes(tet_dir() / "large.tet");
  const auto values = iota_values<float>(34 * 64, 0.0f);
  expect_same_bytes(write_one(spec("a", DType::F32, {34, 64}, {4, 4}), bytes_of(values)), expected);

  // The same file one chunk row at a time (8 full rows of 4 plus the clipped row of 2).
  io::MemorySink sink;
  TetWriter writer(sink, reference_options());
  writer.add_dataset(spec("a", DType::F32, {34, 64}, {4, 4}));
  ASSERT_EQ(writer.chunk_rows(0), 9u);
  const auto all = bytes_of(values);
  std::size_t offset = 0;
  for (std::uint64_t row = 0; row < 9; ++row) {
    const std::size_t n = writer.chunk_row_bytes(0, row);
    EXPECT_EQ(n, (row < 8 ? 4u : 2u) * 64 * 4);
    writer.write_chunk_row(0, row, std::span(all).subspan(offset, n));
    offset += n;
  }
  writer.commit();
  expect_same_bytes(sink.bytes(), expected);
}

TEST(TetWriterFixtures, QcF32WithNaNAndInfIsByteIdentical) {
  const float nan = std::bit_cast<float>(0x7FC00000u);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values{1, nan, 3, inf, -2, -inf, nan, 8};
  expect_same_bytes(write_one(spec("qc", DType::F32, {2, 4}, {1, 4}), bytes_of(values)),
                    read_file_bytes(tet_dir() / "generated" / "qc_f32.tet"));
}

TEST(TetWriterFixtures, EmptyFileIsTheBareSuperblock) {
  io::MemorySink sink;
  TetWriter writer(sink, reference_options());
  writer.commit();
  expect_same_bytes(sink.bytes(), read_file_bytes(tet_dir() / "generated" / "empty.tet"));
  EXPECT_EQ(writer.chunk_count(), 0u);
}

TEST(TetWriterFixtures, LabeledWithInlineFooterIsByteIdentical) {
  const auto expected = read_file_bytes(tet_dir() / "generated" / "labeled.tet");
  const auto original = open_memory(expected);
  ASSERT_TRUE(original.layout().footer);
  // The footer contents as the reference wrote them, re-serialised by encode_footer.
  WriterOptions options = reference_options();
  options.history = original.layout().footer->history;
  options.metadata = original.layout().footer->metadata;
  ASSERT_EQ(options.history.size(), 1u);
  EXPECT_EQ(options.history[0].source, "gen_extra");
  const auto out =
      write_one(spec("temperature", DType::F32, {4, 3}, {3, 2}), bytes_of(iota_values<float>(12, 0.0f)), options);
  expect_same_bytes(out, expected);
}

TEST(TetWriterFixtures, MetaSpillIsByteIdentical) {
  const auto expected = read_file_bytes(tet_dir() / "generated" / "meta_spill.tet");
  const auto original = open_memory(expected);
  ASSERT_TRUE(original.layout().footer);
  ASSERT_TRUE(original.layout().footer->metadata_ref);
  EXPECT_EQ(original.layout().footer->metadata_ref->offset, 392u);
  const auto out = rebuild(original);
  expect_same_bytes(out, expected);
  // Independently of the reader: d0 = 0..3 and d1 = 10..13.
  const auto& d0 = *original.find("d0");
  const auto& d1 = *original.find("d1");
  EXPECT_EQ(read_all(original, d0), bytes_of(iota_values<float>(4, 0.0f)));
  EXPECT_EQ(read_all(original, d1), bytes_of(iota_values<float>(4, 10.0f)));
}

TEST(TetWriterFixtures, EveryRawFixtureRebuildsByteIdentical) {
  for (const char* name :
       {"sample.tet", "multichunk_u8.tet", "multichunk_u32.tet", "multichunk_f16.tet", "large.tet",
        "generated/empty.tet", "generated/qc_f32.tet", "generated/labeled.tet", "generated/meta_spill.tet"}) {
    SCOPED_TRACE(name);
    const auto expected = read_file_bytes(tet_dir() / name);
    expect_same_bytes(rebuild(open_memory(expected)), expected);
    expect_same_bytes(rebuild(open_memory(expected), /*threads=*/1), expected);
  }
}

// The zstd fixtures cannot be byte-identical: tessera's frames are single-segment frames that
// declare their content size, the reference's come from a streaming encoder (no content size,
// a 2 MiB window descriptor), so every frame header — and with it every stored length and later
// offset — differs even where the compressed blocks agree. The layout around the frames
// (superblock, directory, TIDX header and settings, entry order, coordinates, raw lengths,
// codecs) must still match, and every value must decode identically.
TEST(TetWriterFixtures, ZstdFixturesRebuildWithSameLayoutAndValues) {
  for (const char* name : {"generated/zstd_f64_3d.tet", "generated/multi_dataset.tet"}) {
    SCOPED_TRACE(name);
    const auto expected_bytes = read_file_bytes(tet_dir() / name);
    const auto expected = open_memory(expected_bytes);
    const auto rebuilt_bytes = rebuild(expected);
    const auto rebuilt = open_memory(rebuilt_bytes);
    const std::uint64_t header_end = expected.layout().superblock.chunk_index_offset + 32;
    ASSERT_GE(rebuilt_bytes.size(), header_end);
    EXPECT_TRUE(std::equal(expected_bytes.begin(), expected_bytes.begin() + static_cast<std::ptrdiff_t>(header_end),
                           rebuilt_bytes.begin()));
    ASSERT_EQ(rebuilt.layout().entries.size(), expected.layout().entries.size());
    for (std::size_t i = 0; i < expected.layout().entries.size(); ++i) {
      const auto& a = rebuilt.layout().entries[i];
      const auto& b = expected.layout().entries[i];
      EXPECT_EQ(a.dataset_id, b.dataset_id);
      EXPECT_EQ(a.chunk_index, b.chunk_index);
      EXPECT_EQ(a.raw_byte_len, b.raw_byte_len);
      EXPECT_EQ(a.codec, b.codec);
    }
    for (const auto& ds : expected.datasets())
      EXPECT_EQ(read_all(rebuilt, rebuilt.datasets()[ds.id]), read_all(expected, ds));
  }
}

TEST(TetWriterFixtures, ZstdF64CubeValuesFromTheReadme) {
  std::vector<double> values(5 * 4 * 3);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5 * static_cast<double>(i);
  const auto out = write_one(spec("cube", DType::F64, {5, 4, 3}, {2, 3, 2}, Codec::Zstd), bytes_of(values));
  const auto file = open_memory(out);
  ASSERT_EQ(file.layout().entries.size(), 12u);
  for (const auto& e : file.layout().entries) EXPECT_EQ(e.codec, 1u);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(values));
  // Same values as the reference's zstd file.
  const auto reference = tet::TetFile::open((tet_dir() / "generated" / "zstd_f64_3d.tet").string());
  EXPECT_EQ(read_all(reference, reference.datasets()[0]), bytes_of(values));
}

// ---- layout facts -------------------------------------------------------------------------------

TEST(TetWriter, PayloadsAreContiguousInIndexOrderAndGroupedByDataset) {
  io::MemorySink sink;
  TetWriter writer(sink, reference_options());
  writer.add_dataset(spec("first", DType::I16, {5, 3, 4}, {2, 2, 3}, Codec::Zstd));
  writer.add_dataset(spec("second", DType::U64, {7}, {3}));
  EXPECT_EQ(writer.chunk_count(), 3u * 2 * 2 + 3);
  writer.write_dataset(0, bytes_of(iota_values<std::int16_t>(60, -30)));
  writer.write_dataset(1, bytes_of(iota_values<std::uint64_t>(7, 1000)));
  writer.commit();
  const auto file = open_memory(sink.bytes());
  const auto& L = file.layout();
  std::uint64_t expected_offset = L.superblock.chunk_index_offset + L.superblock.chunk_index_length;
  std::array<std::uint64_t, 8> previous{};
  for (std::size_t i = 0; i < L.entries.size(); ++i) {
    const auto& e = L.entries[i];
    EXPECT_EQ(e.payload_offset, expected_offset) << i;
    expected_offset += e.stored_byte_len;
    EXPECT_EQ(e.dataset_id, i < 12 ? 0u : 1u);
    if (i > 0 && i != 12) {
      EXPECT_LT(previous, e.chunk_index) << "grid row-major order at entry " << i;
    }
    previous = e.chunk_index;
  }
  EXPECT_EQ(expected_offset, L.file_len);
  EXPECT_EQ(L.superblock.flags, 0u);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(iota_values<std::int16_t>(60, -30)));
  EXPECT_EQ(read_all(file, file.datasets()[1]), bytes_of(iota_values<std::uint64_t>(7, 1000)));
}

TEST(TetWriter, ExecutionSettingsGoToTheIndexHeader) {
  WriterOptions options = reference_options();
  options.memory_budget_percent_bps = 4000;
  options.memory_budget_bytes = 1048576;
  const auto out = write_one(spec("a", DType::U8, {3}, {2}), bytes_of(iota_values<std::uint8_t>(3, 0)), options);
  const auto file = open_memory(out);
  EXPECT_EQ(file.layout().index_header.memory_budget_percent_bps, 4000);
  EXPECT_EQ(file.layout().index_header.memory_budget_bytes, 1048576u);
}

TEST(TetWriter, ZstdOutputDoesNotDependOnThreadCount) {
  std::vector<float> values(40 * 30 * 6);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.01f * static_cast<float>(i));
  const auto s = spec("w", DType::F32, {40, 30, 6}, {7, 4, 5}, Codec::Zstd);
  WriterOptions one, two, all;
  one.threads = 1;
  two.threads = 2;
  const auto a = write_one(s, bytes_of(values), one);
  EXPECT_EQ(write_one(s, bytes_of(values), two), a);
  EXPECT_EQ(write_one(s, bytes_of(values), all), a);
  const auto file = open_memory(a);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(values));
}

TEST(TetWriter, EveryDtypeRoundTripsThroughZstd) {
  for (DType dt : {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::U16, DType::I16, DType::U32,
                   DType::F16, DType::U64}) {
    SCOPED_TRACE(std::string(tessera::dtype_info(dt).name));
    const std::size_t es = tessera::dtype_size(dt);
    std::vector<std::byte> data(9 * 11 * es);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 131 + 7) % 251);
    const auto file = open_memory(write_one(spec("x", dt, {9, 11}, {4, 20}, Codec::Zstd), data));
    EXPECT_EQ(read_all(file, file.datasets()[0]), data);
  }
}

// ---- footers -----------------------------------------------------------------------------------

TEST(TetWriterFooter, InlineFooterReadsBack) {
  WriterOptions options = reference_options();
  options.history.push_back({"write", "unit", "1700000000", {"p1", "p2"}, {{"k", "v"}, {"a", "b"}}});
  options.metadata.file = tet::FileMetadata{"tool", "1.0", std::nullopt};
  auto& dm = options.metadata.datasets["a"];
  dm.attrs = {{"units", "K"}};
  dm.dim_names = std::vector<std::string>{"x"};
  dm.coords["x"] = {"p", "q", "r"};
  const auto out = write_one(spec("a", DType::I32, {3}, {2}), bytes_of(iota_values<std::int32_t>(3, 5)), options);
  const auto file = open_memory(out);
  ASSERT_TRUE(file.layout().footer);
  EXPECT_EQ(file.layout().superblock.flags, 1u);
  EXPECT_FALSE(file.layout().footer->metadata_ref);
  const auto& f = *file.layout().footer;
  ASSERT_EQ(f.history.size(), 1u);
  EXPECT_EQ(f.history[0].op, "write");
  EXPECT_EQ(f.history[0].parents, options.history[0].parents);
  EXPECT_EQ(f.history[0].params, options.history[0].params);
  EXPECT_EQ(f.metadata.file->tool, "tool");
  EXPECT_EQ(f.metadata.file->library_version, "1.0");
  EXPECT_FALSE(f.metadata.file->created_at);
  EXPECT_EQ(f.metadata.datasets.at("a").attrs, dm.attrs);
  EXPECT_EQ(f.metadata.datasets.at("a").dim_names, dm.dim_names);
  EXPECT_EQ(f.metadata.datasets.at("a").coords, dm.coords);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(iota_values<std::int32_t>(3, 5)));
}

TEST(TetWriterFooter, LargeMetadataSpillsAndReadsBack) {
  WriterOptions options = reference_options();
  options.history.push_back({"write", "unit", "1", {}, {}});
  for (int a = 0; a < 64; ++a) {
    options.metadata.datasets["a"].attrs["attr_" + std::to_string(a)] =
        std::string(1024, static_cast<char>('a' + a % 26));
  }
  const auto out = write_one(spec("a", DType::U16, {5}, {5}), bytes_of(iota_values<std::uint16_t>(5, 1)), options);
  const auto file = open_memory(out);
  const auto& L = file.layout();
  ASSERT_TRUE(L.footer);
  ASSERT_TRUE(L.footer->metadata_ref);
  // The spill starts where the payloads end.
  EXPECT_EQ(L.footer->metadata_ref->offset, L.payload_end);
  EXPECT_EQ(L.entries.back().payload_offset + L.entries.back().stored_byte_len, L.payload_end);
  EXPECT_EQ(L.footer->metadata.datasets.at("a").attrs, options.metadata.datasets["a"].attrs);
  EXPECT_EQ(L.footer->history.size(), 1u);
}

TEST(TetWriterFooter, EmptyFileWithFooter) {
  io::MemorySink sink;
  WriterOptions options = reference_options();
  options.history.push_back({"write", "nothing", "2", {}, {}});
  TetWriter writer(sink, options);
  writer.commit();
  const auto file = open_memory(sink.bytes());
  EXPECT_EQ(file.layout().superblock.flags, 1u);
  EXPECT_EQ(file.layout().superblock.chunk_index_offset, 32u);
  EXPECT_EQ(file.layout().superblock.chunk_index_length, 0u);
  EXPECT_EQ(file.layout().payload_end, 32u);
  ASSERT_TRUE(file.layout().footer);
  EXPECT_EQ(file.layout().footer->history[0].source, "nothing");
}

TEST(TetWriterFooter, LimitsAreEnforcedUpFrontAndAtCommit) {
  WriterOptions bad;
  bad.history.push_back({"write", "", "1", {}, {}});
  io::MemorySink sink;
  expect_error<tessera::LimitError>([&] { TetWriter w(sink, bad); }, "history footer metadata exceeds limits");

  TetWriter writer(sink, reference_options());
  writer.add_dataset(spec("a", DType::U8, {1}, {1}));
  writer.write_dataset(0, bytes_of(std::vector<std::uint8_t>{1}));
  writer.metadata().datasets["a"].attrs["k"] = std::string(1025, 'x');
  expect_error<tessera::LimitError>([&] { writer.commit(); }, "1025 bytes");
  // Nothing was written for the footer, so fixing it and committing again works.
  writer.metadata().datasets["a"].attrs["k"] = "ok";
  writer.commit();
  EXPECT_EQ(open_memory(sink.bytes()).layout().footer->metadata.datasets.at("a").attrs.at("k"), "ok");
}

// ---- validation (§1.10) -------------------------------------------------------------------------

TEST(TetWriterValidation, EachRuleNamesTheDatasetAndRule) {
  io::MemorySink sink;
  TetWriter w(sink, reference_options());
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("", DType::F32, {1}, {1})); }, "name must not be empty");
  expect_error<tessera::LimitError>([&] { w.add_dataset(spec(std::string(1025, 'n'), DType::F32, {1}, {1})); },
                                    "name is 1025 bytes (limit 1024)");
  EXPECT_NO_THROW(w.add_dataset(spec(std::string(1024, 'n'), DType::F32, {1}, {1})));
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("bad\xff", DType::F32, {1}, {1})); }, "not valid UTF-8");
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("r0", DType::F32, {}, {})); },
                                    "dataset \"r0\": ndim 0 out of range (1..8)");
  expect_error<tessera::UsageError>(
      [&] {
        w.add_dataset(spec("r9", DType::F32, std::vector<std::uint64_t>(9, 1), std::vector<std::uint64_t>(9, 1)));
      },
      "dataset \"r9\": ndim 9 out of range (1..8)");
  expect_error<tessera::UsageError>(
      [&] {
        w.add_dataset(spec("ranks", DType::F32, {2, 2}, {2}));
      },
      "dataset \"ranks\": chunk_shape has 1 axes but shape has 2");
  expect_error<tessera::UsageError>(
      [&] {
        w.add_dataset(spec("z", DType::F32, {2, 0}, {1, 1}));
      },
      "dataset \"z\": zero extent");
  expect_error<tessera::UsageError>(
      [&] {
        w.add_dataset(spec("zc", DType::F32, {2, 2}, {0, 1}));
      },
      "dataset \"zc\": zero extent");
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("i8", DType::I8, {2}, {2})); },
                                    "dataset \"i8\": dtype i8");
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("b", DType::Bool, {2}, {2})); },
                                    "has no .tet element tag");
  expect_error<tessera::LimitError>(
      [&] {
        w.add_dataset(spec("huge", DType::F64, {1ull << 40, 1ull << 21}, {1ull << 40, 1ull << 21}));
      },
      "dataset \"huge\": logical tensor byte length overflow");
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("codec", DType::F32, {2}, {2}, static_cast<Codec>(7))); },
                                    "unsupported codec 7");
  auto level = spec("lvl", DType::F32, {2}, {2}, Codec::Zstd);
  level.zstd_level = 23;
  expect_error<tessera::UsageError>([&] { w.add_dataset(level); }, "dataset \"lvl\": zstd level 23 out of range");
  EXPECT_EQ(w.add_dataset(spec("dup", DType::F32, {2}, {2})), 1u);
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("dup", DType::U8, {3}, {3})); },
                                    "dataset \"dup\": duplicate dataset name (already dataset 1)");
  EXPECT_EQ(w.dataset_count(), 2u);
  // validate_dataset_spec alone gives the same answers.
  EXPECT_NO_THROW(
      tet::validate_dataset_spec(spec("ok", DType::U64, {1, 2, 3, 4, 5, 6, 7, 8}, {9, 9, 9, 9, 9, 9, 9, 9})));
  EXPECT_THROW(tet::validate_dataset_spec(spec("ok", DType::U64, {1}, {0})), tessera::UsageError);
}

TEST(TetWriterValidation, SinkMustBeEmpty) {
  io::MemorySink sink;
  const std::byte b{1};
  sink.write({&b, 1});
  expect_error<tessera::UsageError>([&] { TetWriter w(sink, reference_options()); }, "empty sink");
}

TEST(TetWriterOrder, OutOfOrderAndMissingDataAreUsageErrors) {
  io::MemorySink sink;
  TetWriter w(sink, reference_options());
  w.add_dataset(spec("a", DType::U8, {5, 2}, {2, 2}));  // 3 chunk rows: 4, 4, 2 bytes
  w.add_dataset(spec("b", DType::U8, {3}, {3}));
  const std::vector<std::byte> row4(4), row2(2), all_b(3);
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(5, 0, row4); }, "no dataset with id 5 (2 declared)");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(1, 0, all_b); },
                                    "dataset 1 (\"b\"): data is written in dataset order; dataset 0 (\"a\"): 0 of 3");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 1, row4); },
                                    "dataset 0 (\"a\"): expected chunk row 0, got 1");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 3, row4); }, "chunk row 3 is outside the grid (3 rows)");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 0, row2); }, "chunk row 0 needs 4 bytes, got 2");
  expect_error<tessera::UsageError>([&] { w.commit(); }, "dataset 0 (\"a\"): no data written");
  w.write_chunk_row(0, 0, row4);
  expect_error<tessera::UsageError>([&] { w.add_dataset(spec("late", DType::U8, {1}, {1})); },
                                    "every dataset must be declared before any data is written");
  expect_error<tessera::UsageError>([&] { w.write_dataset(0, std::vector<std::byte>(10)); },
                                    "write_dataset needs a dataset with no rows written (1 of 3 written)");
  expect_error<tessera::UsageError>([&] { w.commit(); }, "dataset 0 (\"a\"): 1 of 3 chunk rows written");
  w.write_chunk_row(0, 1, row4);
  w.write_chunk_row(0, 2, row2);
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 0, row4); }, "all 3 chunk rows are already written");
  expect_error<tessera::UsageError>([&] { w.write_dataset(1, std::vector<std::byte>(2)); }, "needs 3 bytes, got 2");
  w.write_dataset(1, all_b);
  w.commit();
  expect_error<tessera::UsageError>([&] { w.commit(); }, "already committed");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 0, row4); }, "already committed");
  EXPECT_NO_THROW(open_memory(sink.bytes()));
}

// A sink that fails after a number of bytes, to show that a failed write abandons the writer.
class FailingSink final : public io::ByteSink {
 public:
  explicit FailingSink(std::uint64_t limit) : limit_(limit) {}
  void write(std::span<const std::byte> bytes) override {
    if (inner_.position() + bytes.size() > limit_) throw tessera::IoError("disk full");
    inner_.write(bytes);
  }
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override { inner_.write_at(offset, bytes); }
  std::uint64_t position() const override { return inner_.position(); }
  void commit() override { inner_.commit(); }
  bool committed() const { return inner_.committed(); }

 private:
  io::MemorySink inner_;
  std::uint64_t limit_;
};

TEST(TetWriterOrder, IoFailureInThePreambleAbandonsTheWriter) {
  FailingSink sink(200);  // the preamble alone is 96 + 32 + 4·104 bytes
  TetWriter w(sink, reference_options());
  w.add_dataset(spec("a", DType::F32, {4, 4}, {1, 4}));
  const std::vector<std::byte> row(16);
  expect_error<tessera::IoError>([&] { w.write_chunk_row(0, 0, row); }, "disk full");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 0, row); }, "an earlier write failed");
}

TEST(TetWriterOrder, IoFailureAbandonsTheWriterAndNothingIsCommitted) {
  FailingSink sink(96 + 32 + 4 * 104 + 20);  // room for the preamble and one row
  TetWriter w(sink, reference_options());
  w.add_dataset(spec("a", DType::F32, {4, 4}, {1, 4}));
  const std::vector<std::byte> row(16);
  w.write_chunk_row(0, 0, row);
  expect_error<tessera::IoError>([&] { w.write_chunk_row(0, 1, row); }, "disk full");
  expect_error<tessera::UsageError>([&] { w.write_chunk_row(0, 1, row); }, "an earlier write failed");
  expect_error<tessera::UsageError>([&] { w.commit(); }, "an earlier write failed");
  EXPECT_FALSE(sink.committed());
}

TEST(TetWriterFile, PathWriterIsAtomic) {
  TempDir dir;
  const auto path = dir / "out.tet";
  {
    TetWriter w(path.string(), reference_options());
    w.add_dataset(spec("a", DType::U8, {3}, {2}));
    w.write_dataset(0, bytes_of(iota_values<std::uint8_t>(3, 1)));
    // Destroyed without commit: nothing appears.
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
  {
    TetWriter w(path.string(), reference_options());
    w.add_dataset(spec("temperature", DType::F32, {2, 3}, {2, 2}));
    w.write_dataset(0, bytes_of(iota_values<float>(6, 1.0f)));
    w.commit();
  }
  expect_same_bytes(read_file_bytes(path), read_file_bytes(tet_dir() / "sample.tet"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

}  // namespace
