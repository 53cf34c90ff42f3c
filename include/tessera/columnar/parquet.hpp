// The Parquet subset of the deltacells obs sidecar (spec §6.8): a reader of flat files (footer,
// schema, key-value metadata, row groups, one column chunk at a time) and a writer of exactly the
// profile tessera emits (§6.5). Footers and page headers use the Thrift compact protocol.
//
// Reader contract:
//  - `ParquetFile::open` makes three small ranged reads (the last 8 bytes, the leading magic,
//    then the footer) and checks the magic at both ends, the footer length, the schema (one root
//    group of flat leaves) and that every column chunk lies between the magic and the footer.
//    Columns of types outside the subset (INT96, FIXED_LEN_BYTE_ARRAY, DATE, DECIMAL, …) are
//    listed with `unsupported` set and refused only when read.
//  - `read_column(g, c)` makes exactly one ranged read (the column chunk's bytes) and decodes it
//    into a Column of `num_rows(g)` rows.
//  - Malformed input is a FormatError naming the file, the structure (`row group 3 column 'donor'
//    data page 2`) and the rule; valid features outside the subset are UnsupportedError; sizes
//    above the ReadLimits are LimitError. Nothing is allocated from a file-supplied count before
//    it has been checked.
//
// Writer contract: `ParquetWriter` writes "PAR1", then one row group per `write_row_group` call,
// and `finish()` writes the footer and commits the sink. Every column is OPTIONAL; the output is
// a deterministic function of the columns, options and metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/columnar/column.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::columnar {

// Parquet's enumerations, with the values of parquet.thrift.
enum class PhysicalType : int {
  Boolean = 0,
  Int32 = 1,
  Int64 = 2,
  Int96 = 3,
  Float = 4,
  Double = 5,
  ByteArray = 6,
  FixedLenByteArray = 7
};
enum class Compression : int {
  Uncompressed = 0,
  Snappy = 1,
  Gzip = 2,
  Lzo = 3,
  Brotli = 4,
  Lz4 = 5,
  Zstd = 6,
  Lz4Raw = 7
};
enum class Encoding : int {
  Plain = 0,
  PlainDictionary = 2,
  Rle = 3,
  BitPacked = 4,
  DeltaBinaryPacked = 5,
  DeltaLengthByteArray = 6,
  DeltaByteArray = 7,
  RleDictionary = 8,
  ByteStreamSplit = 9
};

std::string compression_name(int codec);
std::string encoding_name(int encoding);

using KeyValue = std::pair<std::string, std::optional<std::string>>;

// One leaf of the flat schema.
struct ParquetColumn {
  std::string name;
  int physical_type = 0;              // PhysicalType value as stored
  std::optional<int> converted_type;  // ConvertedType value as stored (UTF8 = 0, UINT_8 = 11, …)
  std::optional<int> integer_bits;    // logical type INTEGER(bits, signed)
  std::optional<bool> integer_signed;
  bool string_annotation = false;       // logical STRING or converted UTF8
  bool optional = true;                 // OPTIONAL (max definition level 1) or REQUIRED
  ColumnType type = ColumnType::Int32;  // what read_column returns
  std::string unsupported;              // non-empty: why this column cannot be read
};

struct ColumnChunkInfo {
  std::uint64_t offset = 0;  // dictionary page offset if present, else first data page
  std::uint64_t size = 0;    // total_compressed_size
  int codec = 0;             // Compression value as stored
  std::vector<int> encodings;
  std::int64_t num_values = 0;
};

struct RowGroupInfo {
  std::uint64_t num_rows = 0;
  std::vector<ColumnChunkInfo> columns;
};

struct ReadLimits {
  std::uint64_t max_footer_bytes = std::uint64_t{64} << 20;
  std::uint64_t max_rows_per_row_group = std::uint64_t{1} << 28;
  std::uint64_t max_page_bytes = std::uint64_t{256} << 20;  // uncompressed size of one page
  std::uint64_t max_string_bytes = std::uint64_t{4} << 30;  // decoded string bytes per column chunk
};

// Thread-safety: immutable once opened; `read_column` may be called concurrently. Lifetime:
// refers to its source, which must outlive it and its copies.
class ParquetFile {
 public:
  // `source` must outlive the object.
  static ParquetFile open(const io::ByteSource& source, const ReadLimits& limits = {});

  const std::vector<ParquetColumn>& columns() const noexcept { return columns_; }
  const std::vector<RowGroupInfo>& row_groups() const noexcept { return row_groups_; }
  const std::vector<KeyValue>& key_value_metadata() const noexcept { return key_value_metadata_; }
  std::optional<std::string> metadata(const std::string& key) const;
  const std::string& created_by() const noexcept { return created_by_; }
  std::uint64_t num_rows() const noexcept { return num_rows_; }
  std::uint64_t footer_length() const noexcept { return footer_length_; }
  // Index of the column named `name`, if any.
  std::optional<std::size_t> find_column(const std::string& name) const;

  Column read_column(std::size_t row_group, std::size_t column) const;

 private:
  ParquetFile(const io::ByteSource& source, const ReadLimits& limits) : source_(&source), limits_(limits) {}
  const io::ByteSource* source_;
  ReadLimits limits_;
  std::vector<ParquetColumn> columns_;
  std::vector<RowGroupInfo> row_groups_;
  std::vector<KeyValue> key_value_metadata_;
  std::string created_by_;
  std::uint64_t num_rows_ = 0;
  std::uint64_t footer_length_ = 0;
};

// Decodes one column chunk's bytes (the result of the ranged read `read_column` makes) —
// exposed for fuzzing and for callers that fetch chunk bytes themselves. `where` prefixes messages
// (`row group 3 column 'donor'`); `file` names the file.
Column decode_column_chunk(std::span<const std::byte> chunk, const ParquetColumn& column, const ColumnChunkInfo& info,
                           std::uint64_t num_rows, const ReadLimits& limits, const std::string& file,
                           const std::string& where);

struct ParquetColumnSpec {
  std::string name;
  ColumnType type = ColumnType::Int32;
  // Dictionary-encode this column (obs `string` and `category` columns) when the chunk's PLAIN
  // dictionary fits in `WriterOptions::dictionary_page_limit`.
  bool dictionary = false;
};

struct ParquetWriterOptions {
  int zstd_level = 9;
  std::uint64_t data_page_limit = std::uint64_t{1} << 20;        // uncompressed encoded values per page
  std::uint64_t dictionary_page_limit = std::uint64_t{1} << 20;  // PLAIN size of a dictionary
  std::string created_by;                                        // empty: "tessera <version>"
};

// Thread-safety: one thread at a time. Lifetime: refers to its sink, which must outlive it.
class ParquetWriter {
 public:
  // `sink` must outlive the writer; "PAR1" is written at once.
  ParquetWriter(io::ByteSink& sink, std::vector<ParquetColumnSpec> columns, std::vector<KeyValue> key_value_metadata,
                ParquetWriterOptions options = {});
  ~ParquetWriter();
  ParquetWriter(const ParquetWriter&) = delete;
  ParquetWriter& operator=(const ParquetWriter&) = delete;

  // One row group; `columns` in schema order, all the same length, each of its spec's type.
  void write_row_group(std::span<const Column> columns);
  // Writes the footer and commits the sink.
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::columnar
