// TetWriter::append_raw_tiles: a raw dataset given as its tiles in index order, in parts cut
// anywhere, is byte for byte the reference writer's file; it mixes with chunk rows and other
// datasets; calls out of order are UsageErrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tessera/core/error.hpp"
#include "writer_test_support.hpp"

namespace {

using namespace tessera::tet::writer_testing;  // NOLINT(google-build-using-namespace): the shared helpers

// ---- raw tiles in parts (append_raw_tiles) --------------------------------------------------

// The payload region of a raw fixture: its tiles in index order, back to back.
std::vector<std::byte> payloads_of(const fs::path& fixture) {
  const auto file = tet::TetFile::open(fixture.string());
  const auto& entries = file.layout().entries;
  const auto bytes = read_file_bytes(fixture);
  const auto begin = static_cast<std::ptrdiff_t>(entries.front().payload_offset);
  const auto end = static_cast<std::ptrdiff_t>(entries.back().payload_offset + entries.back().stored_byte_len);
  return {bytes.begin() + begin, bytes.begin() + end};
}

// Gives `stream` to append_raw_tiles in parts of the sizes in `parts` (cycled).
void append_in_parts(TetWriter& w, std::uint32_t id, std::span<const std::byte> stream,
                     const std::vector<std::size_t>& parts) {
  std::size_t at = 0;
  for (std::size_t i = 0; at < stream.size(); ++i) {
    const std::size_t n = std::min(parts[i % parts.size()], stream.size() - at);
    w.append_raw_tiles(id, stream.subspan(at, n));
    at += n;
  }
}

TEST(TetWriterRawTiles, TilesInPartsCutAnywhereAreByteIdentical) {
  const auto expected = read_file_bytes(tet_dir() / "large.tet");
  const auto stream = payloads_of(tet_dir() / "large.tet");  // 144 tiles of 34 × 64 f32 in 4 × 4
  ASSERT_EQ(stream.size(), 34u * 64 * 4);
  for (const auto& parts : std::vector<std::vector<std::size_t>>{{stream.size()}, {1}, {7, 64, 1, 300}, {64}, {2000}}) {
    io::MemorySink sink;
    TetWriter w(sink, reference_options());
    w.add_dataset(spec("a", DType::F32, {34, 64}, {4, 4}));
    append_in_parts(w, 0, stream, parts);
    w.commit();
    expect_same_bytes(sink.bytes(), expected);
  }
  // A whole-array tile given a slab at a time.
  const auto values = bytes_of(iota_values<float>(6, 1.0f));
  io::MemorySink sink;
  TetWriter w(sink, reference_options());
  w.add_dataset(spec("temperature", DType::F32, {2, 3}, {2, 3}));
  append_in_parts(w, 0, values, {12});
  w.commit();
  expect_same_bytes(sink.bytes(), write_one(spec("temperature", DType::F32, {2, 3}, {2, 3}), values));
}

TEST(TetWriterRawTiles, MixWithChunkRowsAndOtherDatasets) {
  const auto stream = payloads_of(tet_dir() / "large.tet");
  const auto values = bytes_of(iota_values<float>(34 * 64, 0.0f));
  const std::vector<std::byte> b_values = bytes_of(iota_values<std::uint16_t>(10, 3));
  // Reference: both datasets whole.
  io::MemorySink ref_sink;
  TetWriter ref(ref_sink);
  ref.add_dataset(spec("a", DType::F32, {34, 64}, {4, 4}));
  ref.add_dataset(spec("b", DType::U16, {2, 5}, {2, 2}, Codec::Zstd));
  ref.write_dataset(0, values);
  ref.write_dataset(1, b_values);
  ref.commit();

  // Both with chunk checksums: a tile given in parts is checksummed like a whole one.
  io::MemorySink sink;
  TetWriter w(sink);
  w.add_dataset(spec("a", DType::F32, {34, 64}, {4, 4}));
  w.add_dataset(spec("b", DType::U16, {2, 5}, {2, 2}, Codec::Zstd));
  const std::size_t row_bytes = 4 * 64 * 4;  // chunk rows 0 and 1 as slabs, then raw tiles
  w.write_chunk_row(0, 0, std::span(values).subspan(0, row_bytes));
  w.write_chunk_row(0, 1, std::span(values).subspan(row_bytes, row_bytes));
  w.append_raw_tiles(0, std::span(stream).subspan(2 * row_bytes, 100));  // inside tile 0 of row 2
  expect_error<tessera::UsageError>(
      [&] { w.write_chunk_row(0, 2, std::span(values).subspan(2 * row_bytes, row_bytes)); },
      "write_chunk_row needs a chunk row boundary; 33 tiles (and 36 bytes of the next)");
  w.append_raw_tiles(0, std::span(stream).subspan(2 * row_bytes + 100, row_bytes - 100));  // the rest of row 2
  w.write_chunk_row(0, 3, std::span(values).subspan(3 * row_bytes, row_bytes));            // a boundary again
  append_in_parts(w, 0, std::span(stream).subspan(4 * row_bytes), {333});
  expect_error<tessera::UsageError>([&] { w.append_raw_tiles(1, b_values); }, "needs a raw-codec dataset");
  w.write_dataset(1, b_values);
  w.commit();
  expect_same_bytes(sink.bytes(), ref_sink.bytes());
}

TEST(TetWriterRawTiles, CallOrderErrors) {
  io::MemorySink sink;
  TetWriter w(sink, reference_options());
  w.add_dataset(spec("a", DType::U8, {5, 2}, {2, 2}));  // tiles of 4, 4 and 2 bytes
  w.add_dataset(spec("b", DType::U8, {3}, {3}));
  const std::vector<std::byte> eleven(11), three(3);
  expect_error<tessera::UsageError>([&] { w.append_raw_tiles(1, three); }, "data is written in dataset order");
  expect_error<tessera::UsageError>([&] { w.append_raw_tiles(0, eleven); },
                                    "append_raw_tiles got 11 bytes but only 10 remain");
  w.append_raw_tiles(0, std::span(eleven).subspan(0, 5));
  expect_error<tessera::UsageError>([&] { w.write_dataset(0, std::vector<std::byte>(10)); },
                                    "write_dataset needs a chunk row boundary");
  expect_error<tessera::UsageError>([&] { w.commit(); }, "dataset 0 (\"a\"): 1 of 3 chunk rows written");
  w.append_raw_tiles(0, std::span(eleven).subspan(0, 0));  // nothing: allowed
  w.append_raw_tiles(0, std::span(eleven).subspan(0, 5));
  expect_error<tessera::UsageError>([&] { w.append_raw_tiles(0, three); }, "all 3 chunk rows are already written");
  w.append_raw_tiles(1, three);
  w.commit();
  const auto file = open_memory(sink.bytes());
  EXPECT_EQ(file.layout().entries.size(), 4u);
}

}  // namespace
