// The Arrow IPC *file* format as the obs cache uses it (spec §6.9): "ARROW1\0\0", a schema
// message, record batches, the end-of-stream marker, a footer and "ARROW1". Flat fields of the
// stored types only (Int, FloatingPoint SINGLE/DOUBLE, Bool, Utf8), uncompressed bodies, no
// dictionaries; metadata version V5 written, V4 and V5 read.
//
// Reader contract: `ArrowFile::open` verifies the footer and every record batch's Message with the
// flatbuffers Verifier, checks the schema and every buffer against the file (rule C7/C8: buffers
// inside the file, enough bytes for `length` values, string offsets starting at 0, not decreasing
// and ending within the data) and then hands out zero-copy views into the source (a memory map or
// memory buffer; a source without views is read into memory once). Malformed files are
// FormatError naming the file, the structure (`record batch 3 field 'age'`) and the rule;
// compressed bodies, dictionary-encoded fields, LargeUtf8 and other types are UnsupportedError.
//
// Writer contract: `ArrowFileWriter` writes the magic and schema at construction, one record
// batch per `write_batch`, and `finish()` writes the marker, footer and trailer and commits the
// sink. Each body buffer starts at a multiple of 8 and is zero-padded; the validity buffer is
// empty when a batch has no nulls. Output is deterministic.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/columnar/column.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::columnar {

struct ArrowField {
  std::string name;
  ColumnType type = ColumnType::Int32;
  bool nullable = true;
};

// One field of one record batch, viewing the file's bytes.
struct ArrowArrayView {
  ColumnType type = ColumnType::Int32;
  std::uint64_t length = 0;
  std::uint64_t null_count = 0;
  std::span<const std::byte> validity;  // bitmap (1 = valid, LSB first); empty when null_count == 0
  std::span<const std::byte> values;    // fixed width: length values; bool: bitmap; string: int32 offsets
  std::span<const std::byte> data;      // string: UTF-8 bytes

  bool is_valid(std::uint64_t i) const noexcept {
    return validity.empty() || ((static_cast<unsigned>(validity[i / 8]) >> (i % 8)) & 1u);
  }
  template <typename T>
  T value(std::uint64_t i) const noexcept {
    T v;
    std::memcpy(&v, values.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  bool bool_value(std::uint64_t i) const noexcept { return (static_cast<unsigned>(values[i / 8]) >> (i % 8)) & 1u; }
  std::string_view string(std::uint64_t i) const noexcept {
    const auto begin = value<std::int32_t>(i), end = value<std::int32_t>(i + 1);
    return {reinterpret_cast<const char*>(data.data()) + begin, static_cast<std::size_t>(end - begin)};
  }
  // A copy in the in-memory column layout.
  Column to_column() const;
};

// Thread-safety: immutable once opened; every member may be called concurrently. Lifetime: refers
// to its source, which must outlive it and its copies.
class ArrowFile {
 public:
  // `source` must outlive the object (views point into it).
  static ArrowFile open(const io::ByteSource& source);

  const std::vector<ArrowField>& fields() const noexcept { return fields_; }
  std::size_t num_batches() const noexcept { return batches_.size(); }
  std::uint64_t batch_length(std::size_t batch) const { return batches_.at(batch).length; }
  const ArrowArrayView& column(std::size_t batch, std::size_t field) const {
    return batches_.at(batch).columns.at(field);
  }

 private:
  struct Batch {
    std::uint64_t length = 0;
    std::vector<ArrowArrayView> columns;
  };
  std::shared_ptr<const std::vector<std::byte>> owned_;  // the file when the source has no views
  std::vector<ArrowField> fields_;
  std::vector<Batch> batches_;
};

// Thread-safety: one thread at a time. Lifetime: refers to its sink, which must outlive it.
class ArrowFileWriter {
 public:
  // `sink` must outlive the writer; the magic and schema message are written at once.
  ArrowFileWriter(io::ByteSink& sink, std::vector<ArrowField> fields);
  ~ArrowFileWriter();
  ArrowFileWriter(const ArrowFileWriter&) = delete;
  ArrowFileWriter& operator=(const ArrowFileWriter&) = delete;

  // One record batch; `columns` in field order, all the same length, each of its field's type.
  void write_batch(std::span<const Column> columns);
  // End-of-stream marker, footer, trailer; commits the sink.
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::columnar
