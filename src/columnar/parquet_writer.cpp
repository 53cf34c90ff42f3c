// The Parquet writer profile of the obs sidecar (spec §6.5, §6.8 "What tessera writes"): flat
// OPTIONAL columns, one row group per call, data page v1 with RLE definition levels, PLAIN values
// or a PLAIN dictionary page plus RLE_DICTIONARY data pages, pages cut at 1 MiB of encoded values,
// zstd, no statistics. The bytes are a function of the input alone.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "rle_hybrid.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/version.hpp"
#include "thrift_codec.hpp"

namespace tessera::columnar {
namespace pq = tessera::parquet_thrift;

namespace {

constexpr int kCodecZstd = static_cast<int>(Compression::Zstd);

PhysicalType physical_of(ColumnType t) {
  switch (t) {
    case ColumnType::Int64:
    case ColumnType::UInt64: return PhysicalType::Int64;
    case ColumnType::Float: return PhysicalType::Float;
    case ColumnType::Double: return PhysicalType::Double;
    case ColumnType::Bool: return PhysicalType::Boolean;
    case ColumnType::String: return PhysicalType::ByteArray;
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::Int32:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32: return PhysicalType::Int32;
  }
  throw UsageError("column type tag " + std::to_string(static_cast<int>(t)) + " has no Parquet physical type");
}

pq::SchemaElement leaf_element(const ParquetColumnSpec& spec) {
  pq::SchemaElement e;
  e.__set_type(static_cast<int>(physical_of(spec.type)));
  e.__set_repetition_type(pq::FieldRepetitionType::OPTIONAL);
  e.__set_name(spec.name);
  if (is_integer(spec.type)) {
    static constexpr int kBits[] = {8, 16, 32, 64, 8, 16, 32, 64};
    const auto k = static_cast<std::size_t>(spec.type);
    const bool is_signed = is_signed_integer(spec.type);
    // INT_8 = 15 … INT_64 = 18, UINT_8 = 11 … UINT_64 = 14
    e.__set_converted_type((is_signed ? 15 : 11) + static_cast<int>(k % 4));
    pq::IntType it;
    it.bitWidth = static_cast<std::int8_t>(kBits[k]);
    it.isSigned = is_signed;
    pq::LogicalType lt;
    lt.__set_INTEGER(it);
    e.__set_logicalType(lt);
  } else if (spec.type == ColumnType::String) {
    e.__set_converted_type(pq::ConvertedType::UTF8);
    pq::LogicalType lt;
    lt.__set_STRING(pq::StringType());
    e.__set_logicalType(lt);
  }
  return e;
}

// Appends the PLAIN encoding of row `r` (a valid value) of `c`.
void append_plain(const Column& c, std::uint64_t r, std::vector<std::byte>& out) {
  switch (c.type) {
    case ColumnType::Int8: append_le<std::int32_t>(out, c.value<std::int8_t>(r)); break;
    case ColumnType::Int16: append_le<std::int32_t>(out, c.value<std::int16_t>(r)); break;
    case ColumnType::UInt8: append_le<std::int32_t>(out, c.value<std::uint8_t>(r)); break;
    case ColumnType::UInt16: append_le<std::int32_t>(out, c.value<std::uint16_t>(r)); break;
    case ColumnType::String: {
      const auto s = c.string(r);
      if (s.size() > UINT32_MAX) throw LimitError("a string value exceeds 4 GiB");
      append_le<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
      out.insert(out.end(), reinterpret_cast<const std::byte*>(s.data()),
                 reinterpret_cast<const std::byte*>(s.data()) + s.size());
      break;
    }
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt32:
    case ColumnType::UInt64:
    case ColumnType::Float:
    case ColumnType::Double:
    case ColumnType::Bool: {  // same bits as stored
      const std::size_t w = column_type_width(c.type);
      out.insert(out.end(), c.data.begin() + static_cast<std::ptrdiff_t>(r * w),
                 c.data.begin() + static_cast<std::ptrdiff_t>((r + 1) * w));
    }
  }
}

// The PLAIN-encoded bytes of a value as a dictionary key.
std::string_view value_key(const Column& c, std::uint64_t r) {
  if (c.type == ColumnType::String) return c.string(r);
  const std::size_t w = column_type_width(c.type);
  return {reinterpret_cast<const char*>(c.data.data() + r * w), w};
}

}  // namespace

struct ParquetWriter::State {
  io::ByteSink& sink;
  std::vector<ParquetColumnSpec> specs;
  std::vector<KeyValue> key_value_metadata;
  ParquetWriterOptions options;
  std::vector<pq::RowGroup> row_groups;
  std::int64_t num_rows = 0;
  bool finished = false;

  void write(std::span<const std::byte> bytes) { sink.write(bytes); }

  // Writes one page (header + zstd body); returns {header + uncompressed, header + compressed} sizes.
  std::pair<std::uint64_t, std::uint64_t> write_page(pq::PageHeader header, std::span<const std::byte> body) {
    const auto compressed = codec::zstd_compress(body, {.level = options.zstd_level});
    if (body.size() > INT32_MAX || compressed.size() > INT32_MAX) throw LimitError("a Parquet page exceeds 2 GiB");
    header.uncompressed_page_size = static_cast<std::int32_t>(body.size());
    header.compressed_page_size = static_cast<std::int32_t>(compressed.size());
    std::vector<std::byte> head;
    detail::thrift_encode(header, head);
    write(head);
    write(compressed);
    return {head.size() + body.size(), head.size() + compressed.size()};
  }

  pq::ColumnChunk write_chunk(const ParquetColumnSpec& spec, const Column& c) {
    const std::uint64_t start = sink.position();
    const std::uint64_t n = c.length;

    // Dictionary: distinct valid values in order of first appearance, if its PLAIN form fits.
    std::vector<std::uint32_t> index_of_row;
    std::vector<std::byte> dictionary;
    std::uint64_t dictionary_size = 0;
    bool use_dictionary = spec.dictionary && (c.type == ColumnType::String || is_integer(c.type));
    if (use_dictionary) {
      std::unordered_map<std::string_view, std::uint32_t> ids;
      index_of_row.assign(n, 0);
      for (std::uint64_t r = 0; r < n && use_dictionary; ++r) {
        if (!c.is_valid(r)) continue;
        const auto [it, added] = ids.try_emplace(value_key(c, r), static_cast<std::uint32_t>(ids.size()));
        if (added) {
          append_plain(c, r, dictionary);
          if (dictionary.size() > options.dictionary_page_limit) use_dictionary = false;
        }
        index_of_row[r] = it->second;
      }
      dictionary_size = ids.size();
      if (dictionary_size == 0) use_dictionary = false;
    }

    std::uint64_t total_uncompressed = 0, total_compressed = 0;
    const auto account = [&](std::pair<std::uint64_t, std::uint64_t> sizes) {
      total_uncompressed += sizes.first;
      total_compressed += sizes.second;
    };
    pq::ColumnMetaData md;
    if (use_dictionary) {
      pq::PageHeader h;
      h.type = pq::PageType::DICTIONARY_PAGE;
      pq::DictionaryPageHeader d;
      d.num_values = static_cast<std::int32_t>(dictionary_size);
      d.encoding = pq::Encoding::PLAIN;
      h.__set_dictionary_page_header(d);
      md.__set_dictionary_page_offset(static_cast<std::int64_t>(start));
      account(write_page(h, dictionary));
    }
    const std::uint64_t data_page_offset = sink.position();
    const unsigned bit_width = use_dictionary ? detail::bit_width_for(dictionary_size - 1) : 0;

    // Data pages: cut once the encoded values reach the page limit.
    std::vector<std::uint32_t> levels, indices;
    std::vector<std::byte> values, body;
    std::uint64_t page_rows = 0, bool_count = 0;
    std::uint8_t bool_bits = 0;
    const auto flush = [&] {
      body.clear();
      std::vector<std::byte> level_bytes;
      detail::encode_rle_hybrid(levels, 1, level_bytes);
      append_le<std::uint32_t>(body, static_cast<std::uint32_t>(level_bytes.size()));
      body.insert(body.end(), level_bytes.begin(), level_bytes.end());
      if (use_dictionary) {
        body.push_back(static_cast<std::byte>(bit_width));
        detail::encode_rle_hybrid(indices, bit_width, body);
      } else {
        if (bool_count % 8 != 0) values.push_back(static_cast<std::byte>(bool_bits));
        body.insert(body.end(), values.begin(), values.end());
      }
      pq::PageHeader h;
      h.type = pq::PageType::DATA_PAGE;
      pq::DataPageHeader d;
      d.num_values = static_cast<std::int32_t>(page_rows);
      d.encoding = use_dictionary ? pq::Encoding::RLE_DICTIONARY : pq::Encoding::PLAIN;
      d.definition_level_encoding = pq::Encoding::RLE;
      d.repetition_level_encoding = pq::Encoding::RLE;
      h.__set_data_page_header(d);
      account(write_page(h, body));
      levels.clear();
      indices.clear();
      values.clear();
      page_rows = bool_count = 0;
      bool_bits = 0;
    };
    for (std::uint64_t r = 0; r < n; ++r) {
      const bool valid = c.is_valid(r);
      levels.push_back(valid ? 1 : 0);
      ++page_rows;
      std::uint64_t encoded = 0;
      if (valid) {
        if (use_dictionary) {
          indices.push_back(index_of_row[r]);
          encoded = (indices.size() * bit_width + 7) / 8;
        } else if (c.type == ColumnType::Bool) {
          if (c.value<std::uint8_t>(r) != 0) bool_bits |= static_cast<std::uint8_t>(1u << (bool_count % 8));
          if (++bool_count % 8 == 0) {
            values.push_back(static_cast<std::byte>(bool_bits));
            bool_bits = 0;
          }
          encoded = (bool_count + 7) / 8;
        } else {
          append_plain(c, r, values);
          encoded = values.size();
        }
      }
      if (encoded >= options.data_page_limit || page_rows == INT32_MAX) flush();
    }
    if (page_rows > 0 || n == 0) flush();

    md.type = static_cast<int>(physical_of(c.type));
    md.encodings = use_dictionary
                       ? std::vector<std::int32_t>{pq::Encoding::PLAIN, pq::Encoding::RLE, pq::Encoding::RLE_DICTIONARY}
                       : std::vector<std::int32_t>{pq::Encoding::PLAIN, pq::Encoding::RLE};
    md.path_in_schema = {spec.name};
    md.codec = kCodecZstd;
    md.num_values = static_cast<std::int64_t>(n);
    md.total_uncompressed_size = static_cast<std::int64_t>(total_uncompressed);
    md.total_compressed_size = static_cast<std::int64_t>(total_compressed);
    md.data_page_offset = static_cast<std::int64_t>(data_page_offset);
    pq::ColumnChunk chunk;
    chunk.file_offset = static_cast<std::int64_t>(start);
    chunk.__set_meta_data(md);
    return chunk;
  }
};

ParquetWriter::ParquetWriter(io::ByteSink& sink, std::vector<ParquetColumnSpec> columns,
                             std::vector<KeyValue> key_value_metadata, ParquetWriterOptions options)
    : state_(new State{sink, std::move(columns), std::move(key_value_metadata), std::move(options), {}, 0, false}) {
  if (state_->options.created_by.empty()) state_->options.created_by = std::string("tessera ") + kVersion;
  if (state_->options.data_page_limit == 0) throw UsageError("Parquet data page limit must be positive");
  static constexpr char kMagic[] = "PAR1";
  sink.write(std::as_bytes(std::span(kMagic, 4)));
}

ParquetWriter::~ParquetWriter() = default;

void ParquetWriter::write_row_group(std::span<const Column> columns) {
  auto& s = *state_;
  if (s.finished) throw UsageError("Parquet writer: row group after finish()");
  if (columns.size() != s.specs.size())
    throw UsageError("Parquet writer: " + std::to_string(columns.size()) + " columns given, the schema has " +
                     std::to_string(s.specs.size()));
  const std::uint64_t rows = columns.empty() ? 0 : columns[0].length;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].type != s.specs[i].type)
      throw UsageError("Parquet writer: column '" + s.specs[i].name + "' is " +
                       std::string(column_type_name(columns[i].type)) + ", the schema says " +
                       std::string(column_type_name(s.specs[i].type)));
    if (columns[i].length != rows) throw UsageError("Parquet writer: columns of one row group differ in length");
    columns[i].check_shape();
  }
  if (rows > static_cast<std::uint64_t>(INT64_MAX - s.num_rows)) throw LimitError("Parquet writer: too many rows");
  pq::RowGroup rg;
  const std::uint64_t first = s.sink.position();
  std::int64_t uncompressed = 0, compressed = 0;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    rg.columns.push_back(s.write_chunk(s.specs[i], columns[i]));
    uncompressed += rg.columns.back().meta_data.total_uncompressed_size;
    compressed += rg.columns.back().meta_data.total_compressed_size;
  }
  rg.total_byte_size = uncompressed;
  rg.num_rows = static_cast<std::int64_t>(rows);
  rg.__set_file_offset(static_cast<std::int64_t>(first));
  rg.__set_total_compressed_size(compressed);
  if (s.row_groups.size() <= INT16_MAX) rg.__set_ordinal(static_cast<std::int16_t>(s.row_groups.size()));
  s.row_groups.push_back(std::move(rg));
  s.num_rows += static_cast<std::int64_t>(rows);
}

void ParquetWriter::finish() {
  auto& s = *state_;
  if (s.finished) throw UsageError("Parquet writer: finish() called twice");
  pq::FileMetaData meta;
  meta.version = 2;
  pq::SchemaElement root;
  root.name = "schema";
  root.__set_num_children(static_cast<std::int32_t>(s.specs.size()));
  meta.schema.push_back(root);
  for (const auto& spec : s.specs) meta.schema.push_back(leaf_element(spec));
  meta.num_rows = s.num_rows;
  meta.row_groups = s.row_groups;
  if (!s.key_value_metadata.empty()) {
    std::vector<pq::KeyValue> kvs;
    for (const auto& [k, v] : s.key_value_metadata) {
      pq::KeyValue kv;
      kv.key = k;
      if (v) kv.__set_value(*v);
      kvs.push_back(kv);
    }
    meta.__set_key_value_metadata(kvs);
  }
  meta.__set_created_by(s.options.created_by);
  std::vector<std::byte> footer;
  detail::thrift_encode(meta, footer);
  if (footer.size() > UINT32_MAX) throw LimitError("Parquet footer exceeds 4 GiB");
  append_le<std::uint32_t>(footer, static_cast<std::uint32_t>(footer.size()));
  for (const char ch : {'P', 'A', 'R', '1'}) footer.push_back(static_cast<std::byte>(ch));
  s.sink.write(footer);
  s.sink.commit();
  s.finished = true;
}

}  // namespace tessera::columnar
