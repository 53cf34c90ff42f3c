// Helpers shared by the TetWriter tests (writer_test.cpp, writer_raw_tiles_test.cpp): fixtures,
// writing one dataset into memory, reading a dataset back whole, and error expectations.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"

namespace tessera::tet::writer_testing {

namespace fs = std::filesystem;
namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tessera::testing::conformance_dir;
using tessera::testing::read_file_bytes;
using tessera::testing::TempDir;
using tet::Codec;
using tet::DatasetSpec;
using tet::TetWriter;
using tet::WriterOptions;

using tessera::testing::bytes_of;

template <typename T>
inline std::vector<T> iota_values(std::size_t n, T first) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(first + static_cast<T>(i));
  return v;
}

inline fs::path tet_dir() { return conformance_dir() / "tetration"; }

// The reference writer's output: no tessera footer extension, so no chunk checksums (these
// tests compare with files the reference wrote; footer_extension_test covers the extension).
inline WriterOptions reference_options() {
  WriterOptions options;
  options.chunk_checksums = false;
  return options;
}

// Writes one dataset holding `data` into memory.
inline std::vector<std::byte> write_one(const DatasetSpec& spec, std::span<const std::byte> data,
                                        WriterOptions options = reference_options()) {
  io::MemorySink sink;
  TetWriter writer(sink, std::move(options));
  writer.add_dataset(spec);
  writer.write_dataset(0, data);
  writer.commit();
  EXPECT_TRUE(sink.committed());
  EXPECT_EQ(writer.file_size(), sink.bytes().size());
  return sink.bytes();
}

inline tet::TetFile open_memory(std::vector<std::byte> bytes, std::string name = "<written>") {
  return tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(std::move(bytes), name)));
}

inline std::vector<std::byte> read_all(const tet::TetFile& file, const tet::Dataset& ds) {
  std::vector<std::byte> out(ds.logical_bytes);
  file.read_box(ds, ds.full_box(), out);
  return out;
}

inline void expect_same_bytes(const std::vector<std::byte>& actual, const std::vector<std::byte>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) ASSERT_EQ(actual[i], expected[i]) << "first difference at byte " << i;
}

template <typename E, typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing: " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

inline DatasetSpec spec(std::string name, DType dtype, std::vector<std::uint64_t> shape,
                        std::vector<std::uint64_t> chunks, Codec codec = Codec::Raw) {
  return {std::move(name), dtype, std::move(shape), std::move(chunks), codec, 3};
}

}  // namespace tessera::tet::writer_testing
