// Parquet file structure for the reader: the "PAR1" magic, the footer (FileMetaData), the flat
// schema and the row groups' column chunk locations (spec §6.8, rules P2 and P5's "chunk lies in
// the file"). Page decoding lives in parquet_pages.cpp.
#include <algorithm>
#include <cstring>

#include "error_context.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "thrift_codec.hpp"

namespace tessera::columnar {
namespace pq = tessera::parquet_thrift;

namespace {

constexpr std::uint64_t kMagicBytes = 4;
constexpr std::uint64_t kTailBytes = 8;  // footer length (u32 LE) + "PAR1"

bool is_magic(const std::byte* p, const char* magic) { return std::memcmp(p, magic, kMagicBytes) == 0; }

std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

std::string converted_name(int converted) {
  static const char* const kNames[] = {"UTF8",
                                       "MAP",
                                       "MAP_KEY_VALUE",
                                       "LIST",
                                       "ENUM",
                                       "DECIMAL",
                                       "DATE",
                                       "TIME_MILLIS",
                                       "TIME_MICROS",
                                       "TIMESTAMP_MILLIS",
                                       "TIMESTAMP_MICROS",
                                       "UINT_8",
                                       "UINT_16",
                                       "UINT_32",
                                       "UINT_64",
                                       "INT_8",
                                       "INT_16",
                                       "INT_32",
                                       "INT_64",
                                       "JSON",
                                       "BSON",
                                       "INTERVAL"};
  return converted >= 0 && converted < 22 ? kNames[converted] : "#" + std::to_string(converted);
}

// Decides the stored column type from the physical type and annotations, or why it is refused.
void classify(ParquetColumn& c) {
  const auto unsupported = [&](const std::string& why) { c.unsupported = why; };
  const int conv = c.converted_type.value_or(-1);
  const bool has_int = c.integer_bits.has_value();
  switch (static_cast<PhysicalType>(c.physical_type)) {
    case PhysicalType::Boolean: c.type = ColumnType::Bool; return;
    case PhysicalType::Float: c.type = ColumnType::Float; return;
    case PhysicalType::Double: c.type = ColumnType::Double; return;
    case PhysicalType::Int32: {
      int bits = 32;
      bool is_signed = true;
      if (has_int) {
        bits = *c.integer_bits;
        is_signed = c.integer_signed.value_or(true);
      } else if (conv >= 11 && conv <= 13) {  // UINT_8, UINT_16, UINT_32
        bits = 8 << (conv - 11);
        is_signed = false;
      } else if (conv >= 15 && conv <= 17) {  // INT_8, INT_16, INT_32
        bits = 8 << (conv - 15);
      } else if (conv != -1) {
        return unsupported("INT32 with converted type " + converted_name(conv));
      }
      if (bits != 8 && bits != 16 && bits != 32) return unsupported("INT32 with INTEGER(" + std::to_string(bits) + ")");
      const int k = bits == 8 ? 0 : bits == 16 ? 1 : 2;
      c.type = static_cast<ColumnType>((is_signed ? 0 : 4) + k);
      return;
    }
    case PhysicalType::Int64: {
      bool is_signed = true;
      if (has_int) {
        if (*c.integer_bits != 64) return unsupported("INT64 with INTEGER(" + std::to_string(*c.integer_bits) + ")");
        is_signed = c.integer_signed.value_or(true);
      } else if (conv == 14) {
        is_signed = false;
      } else if (conv != -1 && conv != 18) {
        return unsupported("INT64 with converted type " + converted_name(conv));
      }
      c.type = is_signed ? ColumnType::Int64 : ColumnType::UInt64;
      return;
    }
    case PhysicalType::ByteArray:
      if (conv != -1 && conv != 0) return unsupported("BYTE_ARRAY with converted type " + converted_name(conv));
      c.type = ColumnType::String;
      return;
    case PhysicalType::Int96: return unsupported("physical type INT96");
    case PhysicalType::FixedLenByteArray: return unsupported("physical type FIXED_LEN_BYTE_ARRAY");
  }
  unsupported("physical type " + std::to_string(c.physical_type));
}

ParquetColumn leaf_column(const pq::SchemaElement& e, const std::string& file) {
  ParquetColumn c;
  c.name = e.name;
  const std::string where = "schema column " + in_quotes(e.name);
  if (!e.__isset.type) throw FormatError("leaf has no physical type", file, where);
  c.physical_type = e.type;
  if (e.__isset.converted_type) c.converted_type = e.converted_type;
  const int rep = e.__isset.repetition_type ? e.repetition_type : 0;
  if (rep == 2) throw UnsupportedError("repeated column (nested schemas are not supported)", file, where);
  if (rep != 0 && rep != 1)
    throw FormatError("repetition type " + std::to_string(rep) + " is not defined", file, where);
  c.optional = rep == 1;
  std::string other;
  if (e.__isset.logicalType) {
    const auto& lt = e.logicalType;
    if (lt.__isset.STRING) c.string_annotation = true;
    if (lt.__isset.INTEGER) {
      c.integer_bits = lt.INTEGER.bitWidth;
      c.integer_signed = lt.INTEGER.isSigned;
    }
    if (lt.__isset.MAP || lt.__isset.LIST) other = "nested logical type";
    if (lt.__isset.ENUM || lt.__isset.JSON || lt.__isset.BSON) other = "logical type ENUM/JSON/BSON";
    if (lt.__isset.DECIMAL) other = "logical type DECIMAL";
    if (lt.__isset.DATE || lt.__isset.TIME || lt.__isset.TIMESTAMP) other = "logical type DATE/TIME/TIMESTAMP";
    if (lt.__isset.UUID || lt.__isset.FLOAT16) other = "logical type UUID/FLOAT16";
    if (lt.__isset.UNKNOWN) other = "logical type UNKNOWN (null)";
  }
  if (c.converted_type == 0) c.string_annotation = true;
  classify(c);
  if (!other.empty()) c.unsupported = other;
  if (c.string_annotation && c.type != ColumnType::String)
    c.unsupported = "STRING annotation on a non-BYTE_ARRAY column";
  return c;
}

}  // namespace

ParquetFile ParquetFile::open(const io::ByteSource& source, const ReadLimits& limits) {
  return detail::with_context(source.name(), [&]() -> ParquetFile {
    ParquetFile f(source, limits);
    const std::string& file = source.name();
    const std::uint64_t size = source.size();
    if (size < kMagicBytes + kTailBytes)
      throw FormatError("file of " + std::to_string(size) + " bytes is shorter than the 12-byte minimum (P2)", file,
                        "file");
    std::byte tail[kTailBytes];
    source.read_at(size - kTailBytes, tail);
    if (is_magic(tail + 4, "PARE"))
      throw UnsupportedError("encrypted Parquet footers (PARE) are not supported", file, "footer");
    if (!is_magic(tail + 4, "PAR1")) throw FormatError("trailing magic is not \"PAR1\" (P2)", file, "footer");
    const std::uint64_t footer_length = load_le<std::uint32_t>(tail);
    if (footer_length > size - kMagicBytes - kTailBytes)
      throw FormatError("footer length " + std::to_string(footer_length) + " exceeds the file size " +
                            std::to_string(size) + " - 12 (P2)",
                        file, "footer");
    if (footer_length > limits.max_footer_bytes)
      throw LimitError("footer length " + std::to_string(footer_length) + " exceeds the limit of " +
                           std::to_string(limits.max_footer_bytes) + " bytes",
                       file, "footer");
    std::byte head[kMagicBytes];
    source.read_at(0, head);
    if (!is_magic(head, "PAR1")) throw FormatError("leading magic is not \"PAR1\" (P2)", file, "file");
    const std::uint64_t footer_offset = size - kTailBytes - footer_length;
    const auto footer = source.read_vector(footer_offset, footer_length);
    f.footer_length_ = footer_length;

    pq::FileMetaData meta;
    detail::thrift_decode(std::span<const std::byte>(footer), meta, file, "footer (FileMetaData, P2)");

    // Schema: one root group whose children are all flat leaves.
    if (meta.schema.empty()) throw FormatError("schema is empty", file, "footer schema");
    const auto& root = meta.schema.front();
    const std::int64_t children = root.__isset.num_children ? root.num_children : 0;
    if (children < 0 || static_cast<std::uint64_t>(children) != meta.schema.size() - 1) {
      for (std::size_t i = 1; i < meta.schema.size(); ++i)
        if (meta.schema[i].__isset.num_children && meta.schema[i].num_children > 0)
          throw UnsupportedError("nested schemas are not supported (group " + in_quotes(meta.schema[i].name) + ")",
                                 file, "footer schema");
      throw FormatError("root has " + std::to_string(children) + " children but the schema lists " +
                            std::to_string(meta.schema.size() - 1) + " leaves",
                        file, "footer schema");
    }
    for (std::size_t i = 1; i < meta.schema.size(); ++i) {
      const auto& e = meta.schema[i];
      if (e.__isset.num_children && e.num_children != 0)
        throw UnsupportedError("nested schemas are not supported (group " + in_quotes(e.name) + ")", file,
                               "footer schema");
      f.columns_.push_back(leaf_column(e, file));
    }

    for (const auto& kv : meta.key_value_metadata)
      f.key_value_metadata_.emplace_back(kv.key,
                                         kv.__isset.value ? std::optional<std::string>(kv.value) : std::nullopt);
    f.created_by_ = meta.created_by;
    if (meta.num_rows < 0) throw FormatError("num_rows is negative", file, "footer");

    // Row groups: column chunks located inside the data region [4, footer_offset).
    std::uint64_t total_rows = 0;
    for (std::size_t g = 0; g < meta.row_groups.size(); ++g) {
      const auto& rg = meta.row_groups[g];
      const std::string where = "row group " + std::to_string(g);
      if (rg.num_rows < 0) throw FormatError("num_rows is negative", file, where);
      if (rg.columns.size() != f.columns_.size())
        throw FormatError("has " + std::to_string(rg.columns.size()) + " column chunks, the schema " +
                              std::to_string(f.columns_.size()) + " columns",
                          file, where);
      RowGroupInfo info;
      info.num_rows = static_cast<std::uint64_t>(rg.num_rows);
      total_rows = checked_add(total_rows, info.num_rows, "total rows");
      for (std::size_t c = 0; c < rg.columns.size(); ++c) {
        const auto& chunk = rg.columns[c];
        const std::string cw = where + " column " + in_quotes(f.columns_[c].name);
        if (chunk.__isset.file_path) throw UnsupportedError("column chunks in other files are not supported", file, cw);
        if (!chunk.__isset.meta_data) throw FormatError("column chunk has no ColumnMetaData", file, cw);
        const auto& md = chunk.meta_data;
        if (md.type != f.columns_[c].physical_type)
          throw FormatError("chunk physical type " + std::to_string(md.type) + " differs from the schema's " +
                                std::to_string(f.columns_[c].physical_type),
                            file, cw);
        if (md.path_in_schema.size() != 1 || md.path_in_schema[0] != f.columns_[c].name)
          throw FormatError("path_in_schema does not name the schema column", file, cw);
        if (md.data_page_offset < 0 || md.total_compressed_size < 0 || md.num_values < 0)
          throw FormatError("negative data_page_offset, total_compressed_size or num_values", file, cw);
        std::uint64_t start = static_cast<std::uint64_t>(md.data_page_offset);
        if (md.__isset.dictionary_page_offset && md.dictionary_page_offset > 0 &&
            static_cast<std::uint64_t>(md.dictionary_page_offset) < start)
          start = static_cast<std::uint64_t>(md.dictionary_page_offset);
        const std::uint64_t length = static_cast<std::uint64_t>(md.total_compressed_size);
        if (start < kMagicBytes || checked_add(start, length, "column chunk end") > footer_offset)
          throw FormatError("column chunk [" + std::to_string(start) + ", +" + std::to_string(length) +
                                ") does not lie between the leading magic and the footer (P5)",
                            file, cw);
        ColumnChunkInfo ci;
        ci.offset = start;
        ci.size = length;
        ci.codec = md.codec;
        ci.encodings = md.encodings;
        ci.num_values = md.num_values;
        info.columns.push_back(std::move(ci));
      }
      f.row_groups_.push_back(std::move(info));
    }
    if (total_rows != static_cast<std::uint64_t>(meta.num_rows))
      throw FormatError("num_rows " + std::to_string(meta.num_rows) + " differs from the row groups' total " +
                            std::to_string(total_rows),
                        file, "footer");
    f.num_rows_ = total_rows;
    return f;
  });
}

Column ParquetFile::read_column(std::size_t row_group, std::size_t column) const {
  return detail::with_context(source_->name(), [&]() -> Column {
    const std::string& file = source_->name();
    if (row_group >= row_groups_.size() || column >= columns_.size())
      throw UsageError(
          "row group " + std::to_string(row_group) + " column " + std::to_string(column) + " is out of range", file);
    const auto& col = columns_[column];
    const auto& rg = row_groups_[row_group];
    const std::string where = "row group " + std::to_string(row_group) + " column " + in_quotes(col.name);
    if (!col.unsupported.empty()) throw UnsupportedError(col.unsupported + " is not supported", file, where);
    if (rg.num_rows > limits_.max_rows_per_row_group)
      throw LimitError(std::to_string(rg.num_rows) + " rows exceed the limit of " +
                           std::to_string(limits_.max_rows_per_row_group) + " rows per row group",
                       file, where);
    const auto& info = rg.columns[column];
    const auto bytes = source_->read_vector(info.offset, info.size);
    return decode_column_chunk(bytes, col, info, rg.num_rows, limits_, file, where);
  });
}

}  // namespace tessera::columnar
