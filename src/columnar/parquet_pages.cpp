// Decoding one Parquet column chunk: its pages (DICTIONARY_PAGE, DATA_PAGE v1, DATA_PAGE_V2),
// their definition levels (RLE/bit-packed hybrid, maximum level 1) and values (PLAIN,
// PLAIN_DICTIONARY / RLE_DICTIONARY, RLE booleans), converted to the column's stored type
// (spec §6.8, rule P5).
#include <algorithm>
#include <cstring>

#include "error_context.hpp"
#include "page_compression.hpp"
#include "rle_hybrid.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/text.hpp"
#include "thrift_codec.hpp"

namespace tessera::columnar {
namespace pq = tessera::parquet_thrift;

namespace {

std::size_t physical_width(int physical) {
  switch (static_cast<PhysicalType>(physical)) {
    case PhysicalType::Boolean: return 1;  // one byte per value once decoded
    case PhysicalType::Int32:
    case PhysicalType::Float: return 4;
    case PhysicalType::Int64:
    case PhysicalType::Double: return 8;
    default: return 0;
  }
}

// Values of one page (or the dictionary) before conversion: fixed-width values of the physical
// width (booleans one byte each), or byte arrays viewing the decompressed page.
struct Values {
  std::vector<std::byte> fixed;
  std::vector<std::string_view> strings;
};

class ChunkDecoder {
 public:
  ChunkDecoder(const ParquetColumn& column, const ColumnChunkInfo& info, std::uint64_t num_rows,
               const ReadLimits& limits, const std::string& file, const std::string& where)
      : column_(column),
        info_(info),
        num_rows_(num_rows),
        limits_(limits),
        file_(file),
        where_(where),
        width_(physical_width(column.physical_type)),
        out_(column.type) {}

  Column decode(std::span<const std::byte> chunk) {
    if (num_rows_ > limits_.max_rows_per_row_group)
      throw LimitError(std::to_string(num_rows_) + " rows exceed the limit of " +
                           std::to_string(limits_.max_rows_per_row_group) + " rows per row group",
                       file_, where_);
    if (out_.type != ColumnType::String)
      out_.data.reserve(checked_size(checked_mul(num_rows_, column_type_width(out_.type), "column size")));
    valid_.reserve(checked_size(num_rows_));
    std::size_t pos = 0;
    while (pos < chunk.size()) {
      pq::PageHeader header;
      const std::string page_where = where_ + " page " + std::to_string(page_index_);
      pos += detail::thrift_decode(chunk.subspan(pos), header, file_, page_where + " header");
      if (header.compressed_page_size < 0 || header.uncompressed_page_size < 0) fail(page_where, "negative page size");
      const auto compressed = static_cast<std::uint64_t>(header.compressed_page_size);
      if (compressed > chunk.size() - pos)
        fail(page_where, "compressed_page_size " + std::to_string(compressed) + " extends past the column chunk (P5)");
      if (static_cast<std::uint64_t>(header.uncompressed_page_size) > limits_.max_page_bytes)
        throw LimitError("uncompressed_page_size " + std::to_string(header.uncompressed_page_size) +
                             " exceeds the limit of " + std::to_string(limits_.max_page_bytes),
                         file_, page_where);
      const auto body = chunk.subspan(pos, compressed);
      pos += compressed;
      switch (header.type) {
        case pq::PageType::DICTIONARY_PAGE: dictionary_page(header, body, page_where); break;
        case pq::PageType::DATA_PAGE: data_page_v1(header, body, page_where); break;
        case pq::PageType::DATA_PAGE_V2: data_page_v2(header, body, page_where); break;
        default: break;  // index pages and unknown page types carry nothing tessera reads
      }
      ++page_index_;
    }
    if (rows_ != num_rows_)
      fail(where_, "pages hold " + std::to_string(rows_) + " values, the row group has " + std::to_string(num_rows_) +
                       " rows (P5)");
    if (nulls_ > 0) out_.validity = std::move(valid_);
    out_.length = rows_;
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& rule) const {
    throw FormatError(rule, file_, where);
  }

  void dictionary_page(const pq::PageHeader& h, std::span<const std::byte> body, const std::string& where) {
    if (!h.__isset.dictionary_page_header) fail(where, "DICTIONARY_PAGE without dictionary_page_header");
    if (have_dictionary_ || data_pages_ > 0) fail(where, "dictionary page is not the first page of the chunk");
    const auto& d = h.dictionary_page_header;
    if (d.encoding != static_cast<int>(Encoding::Plain) && d.encoding != static_cast<int>(Encoding::PlainDictionary))
      throw UnsupportedError("dictionary page encoding " + encoding_name(d.encoding) + " is not supported", file_,
                             where);
    if (d.num_values < 0) fail(where, "negative dictionary num_values");
    detail::decompress_page(info_.codec, body, static_cast<std::uint64_t>(h.uncompressed_page_size), dictionary_page_,
                            file_, where);
    decode_plain(dictionary_page_, static_cast<std::uint64_t>(d.num_values), dictionary_, where + " dictionary");
    if (out_.type == ColumnType::String)
      for (const auto s : dictionary_.strings)
        if (!is_valid_utf8(s)) fail(where, "dictionary string is not valid UTF-8 (P5)");
    have_dictionary_ = true;
  }

  void data_page_v1(const pq::PageHeader& h, std::span<const std::byte> body, const std::string& where) {
    if (!h.__isset.data_page_header) fail(where, "DATA_PAGE without data_page_header");
    const auto& d = h.data_page_header;
    const std::uint64_t count = page_values(d.num_values, where);
    detail::decompress_page(info_.codec, body, static_cast<std::uint64_t>(h.uncompressed_page_size), page_, file_,
                            where);
    std::span<const std::byte> rest(page_);
    if (column_.optional) {
      if (d.definition_level_encoding == static_cast<int>(Encoding::BitPacked))
        throw UnsupportedError("BIT_PACKED definition levels are not supported", file_, where);
      if (d.definition_level_encoding != static_cast<int>(Encoding::Rle))
        fail(where, "definition level encoding " + encoding_name(d.definition_level_encoding) + " is not RLE");
      if (rest.size() < 4) fail(where, "page ends before the definition levels' length");
      const std::uint64_t len = load_le<std::uint32_t>(rest.data());
      if (len > rest.size() - 4) fail(where, "definition levels' length " + std::to_string(len) + " exceeds the page");
      levels(rest.subspan(4, len), count, where);
      rest = rest.subspan(4 + len);
    }
    values(d.encoding, rest, count, where);
  }

  void data_page_v2(const pq::PageHeader& h, std::span<const std::byte> body, const std::string& where) {
    if (!h.__isset.data_page_header_v2) fail(where, "DATA_PAGE_V2 without data_page_header_v2");
    const auto& d = h.data_page_header_v2;
    const std::uint64_t count = page_values(d.num_values, where);
    if (d.num_rows != d.num_values) fail(where, "num_rows differs from num_values in a flat column");
    if (d.repetition_levels_byte_length != 0)
      throw UnsupportedError("repetition levels (nested columns) are not supported", file_, where);
    if (d.definition_levels_byte_length < 0) fail(where, "negative definition_levels_byte_length");
    const auto def_len = static_cast<std::uint64_t>(d.definition_levels_byte_length);
    if (def_len > body.size() || def_len > static_cast<std::uint64_t>(h.uncompressed_page_size))
      fail(where, "definition_levels_byte_length " + std::to_string(def_len) + " exceeds the page");
    const auto level_bytes = body.first(def_len);
    const auto value_body = body.subspan(def_len);
    const std::uint64_t value_size = static_cast<std::uint64_t>(h.uncompressed_page_size) - def_len;
    const int codec = d.is_compressed ? info_.codec : static_cast<int>(Compression::Uncompressed);
    detail::decompress_page(codec, value_body, value_size, page_, file_, where);
    if (column_.optional) {
      levels(level_bytes, count, where);
      std::uint64_t nulls = 0;
      for (const auto l : defs_) nulls += l == 0;
      if (d.num_nulls < 0 || nulls != static_cast<std::uint64_t>(d.num_nulls))
        fail(where, "num_nulls " + std::to_string(d.num_nulls) + " differs from the definition levels' " +
                        std::to_string(nulls));
    } else if (d.num_nulls != 0) {
      fail(where, "num_nulls is not 0 in a REQUIRED column");
    }
    values(d.encoding, page_, count, where);
  }

  std::uint64_t page_values(std::int32_t num_values, const std::string& where) {
    if (num_values < 0) fail(where, "negative num_values");
    const auto count = static_cast<std::uint64_t>(num_values);
    if (count > num_rows_ - rows_)
      fail(where, "num_values " + std::to_string(count) + " exceeds the " + std::to_string(num_rows_ - rows_) +
                      " rows left in the row group (P5)");
    ++data_pages_;
    return count;
  }

  void levels(std::span<const std::byte> bytes, std::uint64_t count, const std::string& where) {
    detail::decode_rle_hybrid(bytes, 1, checked_size(count), defs_, file_, where + " definition levels");
  }

  // Decodes the page's values and appends rows (nulls where the definition level is 0).
  void values(int encoding, std::span<const std::byte> bytes, std::uint64_t count, const std::string& where) {
    std::uint64_t present = count;
    if (column_.optional) present = static_cast<std::uint64_t>(std::count(defs_.begin(), defs_.end(), 1u));
    const Values* source = &page_values_;
    std::vector<std::uint32_t> indices;
    switch (static_cast<Encoding>(encoding)) {
      case Encoding::Plain:
        decode_plain(bytes, present, page_values_, where);
        if (out_.type == ColumnType::String)
          for (const auto s : page_values_.strings)
            if (!is_valid_utf8(s)) fail(where, "string is not valid UTF-8 (P5)");
        break;
      case Encoding::PlainDictionary:
      case Encoding::RleDictionary: {
        if (!have_dictionary_) fail(where, "dictionary-encoded page without a dictionary page");
        if (bytes.empty()) {
          if (present > 0) fail(where, "dictionary indices are missing their bit width");
        } else {
          const auto bit_width = static_cast<unsigned>(bytes[0]);
          detail::decode_rle_hybrid(bytes.subspan(1), bit_width, checked_size(present), indices, file_,
                                    where + " dictionary indices");
        }
        const std::uint64_t dict_size =
            out_.type == ColumnType::String ? dictionary_.strings.size() : dictionary_.fixed.size() / width_;
        for (const auto i : indices)
          if (i >= dict_size)
            fail(where, "dictionary index " + std::to_string(i) + " is not below the dictionary size " +
                            std::to_string(dict_size) + " (P5)");
        source = &dictionary_;
        break;
      }
      case Encoding::Rle: {
        if (static_cast<PhysicalType>(column_.physical_type) != PhysicalType::Boolean)
          fail(where, "RLE value encoding on a non-BOOLEAN column");
        if (bytes.size() < 4) fail(where, "RLE boolean values lack their length prefix");
        const std::uint64_t len = load_le<std::uint32_t>(bytes.data());
        if (len > bytes.size() - 4) fail(where, "RLE boolean values' length exceeds the page");
        detail::decode_rle_hybrid(bytes.subspan(4, len), 1, checked_size(present), indices, file_, where + " values");
        page_values_.fixed.resize(indices.size());
        for (std::size_t i = 0; i < indices.size(); ++i) page_values_.fixed[i] = static_cast<std::byte>(indices[i]);
        indices.clear();
        break;
      }
      case Encoding::DeltaBinaryPacked:
      case Encoding::DeltaLengthByteArray:
      case Encoding::DeltaByteArray:
      case Encoding::ByteStreamSplit:
        throw UnsupportedError(
            "encoding " + encoding_name(encoding) + " is not supported (column '" + column_.name + "')", file_, where);
      default: throw UnsupportedError("value encoding " + encoding_name(encoding) + " is not supported", file_, where);
    }
    const bool by_index = source == &dictionary_;
    std::uint64_t next = 0;
    for (std::uint64_t r = 0; r < count; ++r) {
      const bool valid = !column_.optional || defs_[r] == 1;
      if (column_.optional && defs_[r] > 1)
        fail(where, "definition level " + std::to_string(defs_[r]) + " exceeds the maximum 1");
      valid_.push_back(valid ? 1 : 0);
      if (!valid) {
        ++nulls_;
        append_null();
        continue;
      }
      const std::uint64_t k = by_index ? indices[next] : next;
      ++next;
      append_value(*source, k, where);
    }
    rows_ += count;
  }

  void decode_plain(std::span<const std::byte> bytes, std::uint64_t count, Values& out, const std::string& where) {
    out.fixed.clear();
    out.strings.clear();
    const auto physical = static_cast<PhysicalType>(column_.physical_type);
    if (physical == PhysicalType::Boolean) {
      if ((count + 7) / 8 > bytes.size()) fail(where, "PLAIN booleans extend past the end of the page");
      out.fixed.resize(checked_size(count));
      for (std::uint64_t i = 0; i < count; ++i)
        out.fixed[i] = static_cast<std::byte>((static_cast<std::uint8_t>(bytes[i / 8]) >> (i % 8)) & 1);
    } else if (physical == PhysicalType::ByteArray) {
      if (count > bytes.size() / 4) fail(where, "PLAIN byte arrays extend past the end of the page");
      out.strings.reserve(checked_size(count));
      std::size_t pos = 0;
      for (std::uint64_t i = 0; i < count; ++i) {
        if (bytes.size() - pos < 4) fail(where, "PLAIN byte array " + std::to_string(i) + " is truncated");
        const std::uint64_t len = load_le<std::uint32_t>(bytes.data() + pos);
        pos += 4;
        if (len > bytes.size() - pos)
          fail(where, "PLAIN byte array " + std::to_string(i) + " of length " + std::to_string(len) +
                          " extends past the end of the page");
        out.strings.emplace_back(reinterpret_cast<const char*>(bytes.data() + pos), len);
        pos += len;
      }
    } else {
      const std::uint64_t size = checked_mul(count, width_, "PLAIN values size");
      if (size > bytes.size())
        fail(where, std::to_string(count) + " PLAIN values need " + std::to_string(size) + " bytes, the page has " +
                        std::to_string(bytes.size()));
      out.fixed.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
    }
  }

  void append_null() {
    if (out_.type == ColumnType::String) {
      out_.offsets.push_back(out_.data.size());
    } else {
      out_.data.resize(out_.data.size() + column_type_width(out_.type));
    }
  }

  template <typename T>
  void append_bits(T v) {
    const auto old = out_.data.size();
    out_.data.resize(old + sizeof(T));
    std::memcpy(out_.data.data() + old, &v, sizeof(T));
  }

  void append_value(const Values& src, std::uint64_t k, const std::string& where) {
    if (out_.type == ColumnType::String) {
      const auto s = src.strings[k];
      if (s.size() > limits_.max_string_bytes - std::min<std::uint64_t>(out_.data.size(), limits_.max_string_bytes))
        throw LimitError("decoded strings exceed the limit of " + std::to_string(limits_.max_string_bytes) +
                             " bytes per column chunk",
                         file_, where);
      out_.data.insert(out_.data.end(), reinterpret_cast<const std::byte*>(s.data()),
                       reinterpret_cast<const std::byte*>(s.data()) + s.size());
      out_.offsets.push_back(out_.data.size());
      return;
    }
    const std::byte* p = src.fixed.data() + k * width_;
    const auto range = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      if (v < lo || v > hi)
        fail(where, "value " + std::to_string(v) + " is out of range for " + std::string(column_type_name(out_.type)));
    };
    switch (out_.type) {
      case ColumnType::Int8: {
        const auto v = load_le<std::int32_t>(p);
        range(v, INT8_MIN, INT8_MAX);
        append_bits<std::int8_t>(static_cast<std::int8_t>(v));
        break;
      }
      case ColumnType::Int16: {
        const auto v = load_le<std::int32_t>(p);
        range(v, INT16_MIN, INT16_MAX);
        append_bits<std::int16_t>(static_cast<std::int16_t>(v));
        break;
      }
      case ColumnType::UInt8: {
        const auto v = load_le<std::int32_t>(p);
        range(v, 0, UINT8_MAX);
        append_bits<std::uint8_t>(static_cast<std::uint8_t>(v));
        break;
      }
      case ColumnType::UInt16: {
        const auto v = load_le<std::int32_t>(p);
        range(v, 0, UINT16_MAX);
        append_bits<std::uint16_t>(static_cast<std::uint16_t>(v));
        break;
      }
      case ColumnType::Bool: append_bits<std::uint8_t>(static_cast<std::uint8_t>(p[0])); break;
      case ColumnType::Int32:
      case ColumnType::Int64:
      case ColumnType::UInt32:
      case ColumnType::UInt64:
      case ColumnType::Float:
      case ColumnType::Double: out_.data.insert(out_.data.end(), p, p + width_); break;  // same width and bits
      case ColumnType::String: fail(where, "string values have no fixed width"); break;
    }
  }

  const ParquetColumn& column_;
  const ColumnChunkInfo& info_;
  const std::uint64_t num_rows_;
  const ReadLimits& limits_;
  const std::string& file_;
  const std::string& where_;
  const std::size_t width_;
  Column out_;
  std::vector<std::uint8_t> valid_;
  std::vector<std::uint32_t> defs_;
  std::vector<std::byte> page_, dictionary_page_;
  Values page_values_, dictionary_;
  bool have_dictionary_ = false;
  std::uint64_t rows_ = 0, nulls_ = 0, data_pages_ = 0, page_index_ = 0;
};

}  // namespace

Column decode_column_chunk(std::span<const std::byte> chunk, const ParquetColumn& column, const ColumnChunkInfo& info,
                           std::uint64_t num_rows, const ReadLimits& limits, const std::string& file,
                           const std::string& where) {
  return detail::with_context(file, [&]() -> Column {
    if (!column.unsupported.empty()) throw UnsupportedError(column.unsupported + " is not supported", file, where);
    ChunkDecoder decoder(column, info, num_rows, limits, file, where);
    return decoder.decode(chunk);
  });
}

}  // namespace tessera::columnar
