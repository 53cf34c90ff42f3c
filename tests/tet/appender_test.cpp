// TetAppender: existing payloads are copied verbatim (offsets shifted), new datasets, history
// and metadata land in the rewritten file, the result equals what a fresh TetWriter produces,
// and a failed or abandoned append leaves the original untouched with no temporary file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tessera::testing::conformance_dir;
using tessera::testing::read_file_bytes;
using tessera::testing::TempDir;
using tessera::testing::write_file_bytes;
using tet::Codec;
using tet::DatasetSpec;
using tet::TetAppender;

using tessera::testing::bytes_of;

fs::path fixture(const std::string& name) { return tessera::testing::tet_fixture(name); }

// A writable copy of a conformance file in `dir`.
fs::path copy_fixture(const TempDir& dir, const std::string& name) {
  const fs::path dest = dir / fs::path(name).filename();
  write_file_bytes(dest, read_file_bytes(fixture(name)));
  return dest;
}

std::vector<std::byte> read_all(const tet::TetFile& file, const tet::Dataset& ds) {
  std::vector<std::byte> out(ds.logical_bytes);
  file.read_box(ds, ds.full_box(), out);
  return out;
}

std::vector<std::byte> payload_of(const tet::TetFile& file, std::uint32_t entry) {
  const auto& e = file.entry(entry);
  return file.source().read_vector(e.payload_offset, e.stored_byte_len);
}

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(TetAppender, AppendingADatasetEqualsWritingBothFresh) {
  TempDir dir;
  const auto path = copy_fixture(dir, "sample.tet");
  const std::vector<std::int32_t> extra{-1, -2, -3, -4, -5};
  {
    TetAppender app(path.string());
    EXPECT_EQ(app.original().datasets().size(), 1u);
    EXPECT_EQ(app.add_dataset({"extra", DType::I32, {5}, {2}, Codec::Raw, 3}), 1u);
    app.write_dataset(1, bytes_of(extra));
    app.append_history({"write", "unit", "1700000000", {}, {}});
    app.commit();
    EXPECT_EQ(app.file_size(), fs::file_size(path));
  }
  // The same file from scratch (without checksums: the appended file had none, so it gets none).
  io::MemorySink sink;
  tet::WriterOptions options;
  options.chunk_checksums = false;
  options.history.push_back({"write", "unit", "1700000000", {}, {}});
  tet::TetWriter writer(sink, options);
  writer.add_dataset({"temperature", DType::F32, {2, 3}, {2, 2}, Codec::Raw, 3});
  writer.add_dataset({"extra", DType::I32, {5}, {2}, Codec::Raw, 3});
  writer.write_dataset(0, bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6}));
  writer.write_dataset(1, bytes_of(extra));
  writer.commit();
  EXPECT_EQ(read_file_bytes(path), sink.bytes());
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(TetAppender, ExistingPayloadsAreCopiedVerbatimIncludingZstd) {
  TempDir dir;
  const auto path = copy_fixture(dir, "generated/multi_dataset.tet");
  const auto before_bytes = read_file_bytes(path);
  const auto before = tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(before_bytes)));
  {
    TetAppender app(path.string());
    const auto id = app.add_dataset({"more", DType::F64, {3, 3}, {2, 2}, Codec::Zstd, 5});
    EXPECT_EQ(id, 5u);
    app.write_dataset(id, bytes_of(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    app.commit();
  }
  const auto after = tet::TetFile::open(path.string());
  ASSERT_EQ(after.datasets().size(), 6u);
  ASSERT_EQ(after.layout().entries.size(), before.layout().entries.size() + 4);
  // TIDX settings are kept.
  EXPECT_EQ(after.layout().index_header.memory_budget_percent_bps, 4000);
  EXPECT_EQ(after.layout().index_header.memory_budget_bytes, 1048576u);
  const std::uint64_t shift =
      after.layout().superblock.chunk_index_offset + after.layout().superblock.chunk_index_length -
      (before.layout().superblock.chunk_index_offset + before.layout().superblock.chunk_index_length);
  for (std::uint32_t i = 0; i < before.layout().entries.size(); ++i) {
    const auto& a = after.entry(i);
    const auto& b = before.entry(i);
    EXPECT_EQ(a.payload_offset, b.payload_offset + shift) << i;
    EXPECT_EQ(a.stored_byte_len, b.stored_byte_len);
    EXPECT_EQ(a.codec, b.codec);
    EXPECT_EQ(payload_of(after, i), payload_of(before, i)) << "entry " << i << " payload bytes";
  }
  for (const auto& ds : before.datasets()) EXPECT_EQ(read_all(after, after.datasets()[ds.id]), read_all(before, ds));
  EXPECT_EQ(read_all(after, *after.find("more")), bytes_of(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(TetAppender, HistoryAndMetadataCarryOverAndMerge) {
  TempDir dir;
  const auto path = copy_fixture(dir, "generated/labeled.tet");
  {
    TetAppender app(path.string());
    ASSERT_EQ(app.history().size(), 1u);
    app.append_history({"transform", "unit", "1800000000", {"labeled.tet"}, {{"op", "scale"}}});
    tet::Metadata update;
    update.file = tet::FileMetadata{"tessera test", std::nullopt, std::nullopt};
    update.datasets["temperature"].attrs["long_name"] = "air temperature";
    update.datasets["temperature"].attrs["units"] = "degC";
    update.datasets["extra"].attrs["units"] = "m";
    app.merge_metadata(update);
    app.commit();
  }
  const auto file = tet::TetFile::open(path.string());
  const auto& footer = *file.layout().footer;
  ASSERT_EQ(footer.history.size(), 2u);
  EXPECT_EQ(footer.history[0].source, "gen_extra");
  EXPECT_EQ(footer.history[1].op, "transform");
  EXPECT_EQ(footer.history[1].parents, std::vector<std::string>{"labeled.tet"});
  EXPECT_EQ(footer.metadata.file->tool, "tessera test");
  EXPECT_EQ(footer.metadata.file->library_version, "0.1.9");  // kept: the update did not set it
  const auto& temp = footer.metadata.datasets.at("temperature");
  EXPECT_EQ(temp.attrs.at("units"), "degC");
  EXPECT_EQ(temp.attrs.at("_FillValue"), "5");
  EXPECT_EQ(temp.attrs.at("long_name"), "air temperature");
  EXPECT_EQ(temp.dim_names, (std::vector<std::string>{"time", "station"}));
  EXPECT_EQ(temp.coords.at("station"), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(footer.metadata.datasets.at("extra").attrs.at("units"), "m");
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(values));
}

TEST(TetAppender, SetMetadataReplacesAndSpillIsRecomputed) {
  TempDir dir;
  const auto path = copy_fixture(dir, "generated/meta_spill.tet");
  const auto before = read_file_bytes(path);
  {
    // Rewriting without changes reproduces the file byte for byte (spill offset unchanged).
    TetAppender app(path.string());
    ASSERT_EQ(app.metadata().datasets.at("d0").attrs.size(), 64u);
    app.commit();
  }
  EXPECT_EQ(read_file_bytes(path), before);
  {
    // A new dataset moves the payload end, so the spill moves with it.
    TetAppender app(path.string());
    app.add_dataset({"d2", DType::U8, {4}, {4}, Codec::Raw, 3});
    app.write_dataset(2, bytes_of(std::vector<std::uint8_t>{7, 8, 9, 10}));
    app.commit();
  }
  {
    const auto file = tet::TetFile::open(path.string());
    ASSERT_TRUE(file.layout().footer->metadata_ref);
    EXPECT_EQ(file.layout().footer->metadata_ref->offset, file.layout().payload_end);
    EXPECT_GT(file.layout().payload_end, 392u);
    EXPECT_EQ(file.layout().footer->metadata.datasets.at("d1").attrs.size(), 64u);
    EXPECT_EQ(read_all(file, *file.find("d1")), bytes_of(std::vector<float>{10, 11, 12, 13}));
  }
  {
    // Replacing the metadata with a small one brings the footer back inline.
    TetAppender app(path.string());
    tet::Metadata small;
    small.datasets["d2"].attrs["note"] = "small";
    app.set_metadata(small);
    app.commit();
  }
  const auto file = tet::TetFile::open(path.string());
  EXPECT_FALSE(file.layout().footer->metadata_ref);
  EXPECT_EQ(file.layout().footer->metadata.datasets.size(), 1u);
  EXPECT_EQ(file.layout().footer->history.size(), 1u);
}

TEST(TetAppender, AppendToEmptyFileAndOverrideSettings) {
  TempDir dir;
  const auto path = copy_fixture(dir, "generated/empty.tet");
  {
    tet::AppendOptions options;
    options.memory_budget_percent_bps = 1234;
    TetAppender app(path.string(), options);
    app.add_dataset({"a", DType::U16, {3, 2}, {2, 2}, Codec::Zstd, 3});
    app.write_chunk_row(0, 0, bytes_of(std::vector<std::uint16_t>{1, 2, 3, 4}));
    app.write_chunk_row(0, 1, bytes_of(std::vector<std::uint16_t>{5, 6}));
    app.commit();
  }
  const auto file = tet::TetFile::open(path.string());
  EXPECT_EQ(file.layout().index_header.memory_budget_percent_bps, 1234);
  EXPECT_EQ(file.layout().index_header.memory_budget_bytes, 0u);
  EXPECT_FALSE(file.layout().footer);
  EXPECT_EQ(read_all(file, file.datasets()[0]), bytes_of(std::vector<std::uint16_t>{1, 2, 3, 4, 5, 6}));
}

TEST(TetAppender, PayloadsOutOfOrderInTheSourceAreRepackedInIndexOrder) {
  // sample.tet with its two payloads swapped on disk: tile (0,1) first, then tile (0,0).
  auto bytes = read_file_bytes(fixture("sample.tet"));
  std::vector<std::byte> swapped(bytes.begin(), bytes.begin() + 344);
  swapped.insert(swapped.end(), bytes.begin() + 360, bytes.begin() + 368);
  swapped.insert(swapped.end(), bytes.begin() + 344, bytes.begin() + 360);
  for (std::size_t i = 0; i < 2; ++i) {
    std::byte* raw = swapped.data() + 136 + i * tet::ChunkEntry::kSize;
    auto e = tet::ChunkEntry::decode({raw, tet::ChunkEntry::kSize});
    e.payload_offset = i == 0 ? 352 : 344;
    e.encode_to(raw);
  }
  TempDir dir;
  const auto path = dir / "swapped.tet";
  write_file_bytes(path, swapped);
  {
    TetAppender app(path.string());
    app.commit();
  }
  EXPECT_EQ(read_file_bytes(path), bytes);
}

TEST(TetAppender, UsageErrors) {
  TempDir dir;
  const auto path = copy_fixture(dir, "sample.tet");
  TetAppender app(path.string());
  EXPECT_THROW(app.add_dataset({"temperature", DType::U8, {1}, {1}, Codec::Raw, 3}), tessera::UsageError);
  try {
    app.write_dataset(0, std::vector<std::byte>(24));
    ADD_FAILURE() << "writing an existing dataset must fail";
  } catch (const tessera::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("already stored in the file being appended to"), std::string::npos)
        << e.what();
  }
  app.add_dataset({"new", DType::U8, {2}, {1}, Codec::Raw, 3});
  EXPECT_THROW(app.commit(), tessera::UsageError);  // "new" has no data
}

TEST(TetAppender, InvalidFileIsRejectedWithoutTouchingIt) {
  TempDir dir;
  const auto path = copy_fixture(dir, "plan.tet");
  const auto before = read_file_bytes(path);
  EXPECT_THROW(TetAppender app(path.string()), tessera::FormatError);
  EXPECT_EQ(read_file_bytes(path), before);
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(TetAppender, InterruptedAppendLeavesOriginalUntouchedAndNoTempFile) {
  TempDir dir;
  const auto path = copy_fixture(dir, "large.tet");
  const auto before = read_file_bytes(path);
  std::string temp_seen;
  try {
    TetAppender app(path.string());
    app.add_dataset({"streamed", DType::F32, {8, 100}, {2, 30}, Codec::Zstd, 3});
    const std::vector<std::byte> row(2 * 100 * 4);
    app.write_chunk_row(1, 0, row);
    app.write_chunk_row(1, 1, row);
    // The rewrite is in progress in a temporary file next to the original.
    EXPECT_EQ(files_in(dir.path()), 2u);
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path() != path) temp_seen = e.path().filename().string();
    throw std::runtime_error("interrupted");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "interrupted");
  }
  EXPECT_FALSE(temp_seen.empty());
  EXPECT_EQ(read_file_bytes(path), before);
  EXPECT_EQ(files_in(dir.path()), 1u);

  // A failure inside commit (footer over the limits) behaves the same way.
  {
    TetAppender app(path.string());
    app.append_history({"write", std::string(2000, 's'), "1", {}, {}});
    EXPECT_THROW(app.commit(), tessera::LimitError);
  }
  EXPECT_EQ(read_file_bytes(path), before);
  EXPECT_EQ(files_in(dir.path()), 1u);
}

}  // namespace
