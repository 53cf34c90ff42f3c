// TetWriter::append_tiles: a zstd dataset given as its tiles in index order, in parts cut anywhere
// (one byte at a time, odd sizes, several tiles at once, whole), on one thread and on several, is
// byte for byte the file write_dataset writes from the same array; a raw dataset through
// append_tiles equals append_raw_tiles; a file mixing both reads back the array; more bytes than
// the dataset has left is a UsageError that leaves the writer usable.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"

namespace {

namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tet::Codec;
using tet::DatasetSpec;
using tet::TetWriter;
using tet::WriterOptions;

// Values whose zstd frames are neither trivial nor incompressible.
std::vector<std::byte> array_bytes(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) * 0.25f + static_cast<float>(i / 500);
  std::vector<std::byte> out(n * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

WriterOptions on_threads(unsigned threads) {
  WriterOptions o;
  o.threads = threads;
  return o;
}

// `parts` (cycled) sizes of the calls that give `stream`; 0 = the whole stream in one call.
template <typename Give>
void give_in_parts(std::span<const std::byte> stream, const std::vector<std::size_t>& parts, Give&& give) {
  std::size_t at = 0;
  for (std::size_t i = 0; at < stream.size(); ++i) {
    const std::size_t n = parts[i % parts.size()] == 0 ? stream.size() : parts[i % parts.size()];
    const std::size_t k = std::min(n, stream.size() - at);
    give(stream.subspan(at, k));
    at += k;
  }
}

class AppendTiles : public ::testing::Test {
 protected:
  // [37, 21, 10] f32 in tiles of [8, 5, 4]: clipped tiles on every axis.
  DatasetSpec spec(Codec codec) const { return {"v", DType::F32, {37, 21, 10}, {8, 5, 4}, codec, 5}; }
  const std::vector<std::byte> values = array_bytes(37 * 21 * 10);

  std::vector<std::byte> write_whole(Codec codec, unsigned threads) const {
    io::MemorySink sink;
    TetWriter w(sink, on_threads(threads));
    w.add_dataset(spec(codec));
    w.write_dataset(0, values);
    w.commit();
    return sink.bytes();
  }
  // The tiles in index order: the payload region of the raw file.
  std::vector<std::byte> tile_stream() const {
    const auto raw = write_whole(Codec::Raw, 1);
    const auto file = tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(raw)));
    const auto& entries = file.layout().entries;
    const auto begin = static_cast<std::ptrdiff_t>(entries.front().payload_offset);
    const auto end = static_cast<std::ptrdiff_t>(entries.back().payload_offset + entries.back().stored_byte_len);
    return {raw.begin() + begin, raw.begin() + end};
  }
};

TEST_F(AppendTiles, ZstdTilesInPartsAreByteIdenticalToWriteDataset) {
  const auto stream = tile_stream();
  ASSERT_EQ(stream.size(), values.size());
  for (const unsigned threads : {1u, 3u}) {
    const auto expected = write_whole(Codec::Zstd, threads);
    for (const auto& parts : std::vector<std::vector<std::size_t>>{{0}, {1}, {7, 640, 1, 3000}, {160}, {20000}}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, first part " << parts.front());
      io::MemorySink sink;
      TetWriter w(sink, on_threads(threads));
      w.add_dataset(spec(Codec::Zstd));
      give_in_parts(stream, parts, [&](std::span<const std::byte> p) { w.append_tiles(0, p); });
      w.commit();
      EXPECT_EQ(sink.bytes(), expected);
    }
  }
}

TEST_F(AppendTiles, RawTilesEqualAppendRawTilesAndMixedFilesReadBack) {
  const auto stream = tile_stream();
  io::MemorySink a, b;
  TetWriter wa(a), wb(b);
  for (TetWriter* w : {&wa, &wb}) {
    w->add_dataset(spec(Codec::Raw));
    w->add_dataset({"z", DType::F32, {37, 21, 10}, {16, 21, 3}, Codec::Zstd, 3});
  }
  give_in_parts(stream, {333}, [&](std::span<const std::byte> p) { wa.append_tiles(0, p); });
  give_in_parts(stream, {333}, [&](std::span<const std::byte> p) { wb.append_raw_tiles(0, p); });
  wb.write_dataset(1, values);
  // Dataset z's tiles differ from v's ([16, 21, 3]): take them from a raw file of that shape.
  io::MemorySink raw_z;
  TetWriter wz(raw_z);
  wz.add_dataset({"z", DType::F32, {37, 21, 10}, {16, 21, 3}, Codec::Raw, 3});
  wz.write_dataset(0, values);
  wz.commit();
  const auto fz = tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(raw_z.bytes())));
  const auto& ez = fz.layout().entries;
  const std::span<const std::byte> z_stream(raw_z.bytes().data() + ez.front().payload_offset, values.size());
  give_in_parts(z_stream, {1000, 17}, [&](std::span<const std::byte> p) { wa.append_tiles(1, p); });
  wa.commit();
  wb.commit();
  EXPECT_EQ(a.bytes(), b.bytes());
  const auto file = tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(a.bytes())));
  for (const char* name : {"v", "z"}) {
    const tet::Dataset* ds = file.find(name);
    ASSERT_NE(ds, nullptr);
    std::vector<std::byte> back(ds->logical_bytes);
    file.read_box(*ds, ds->full_box(), back);
    EXPECT_EQ(back, values) << name;
  }
}

TEST_F(AppendTiles, TooManyBytesIsAUsageErrorAndTheWriterGoesOn) {
  const auto stream = tile_stream();
  io::MemorySink sink;
  TetWriter w(sink);
  w.add_dataset(spec(Codec::Zstd));
  w.append_tiles(0, std::span(stream).subspan(0, 1001));  // ends inside a tile
  std::vector<std::byte> too_many(stream.size());
  EXPECT_THROW(w.append_tiles(0, too_many), tessera::UsageError);
  w.append_tiles(0, std::span(stream).subspan(1001));
  w.commit();
  EXPECT_EQ(sink.bytes(), write_whole(Codec::Zstd, 0));
}

}  // namespace
