// Reading the Arrow IPC file format (spec §6.9, rules C7 and C8): magic at both ends, the footer
// and each record batch Message verified with the flatbuffers Verifier, the schema's flat fields
// mapped to stored types, and every buffer of every batch checked against the file before a view
// is handed out.
#include <algorithm>
#include <cstring>

#include "error_context.hpp"
#include "File_generated.h"
#include "Message_generated.h"
#include "Schema_generated.h"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar {
namespace fb = org::apache::arrow::flatbuf;

namespace {

constexpr std::uint64_t kLeadingMagic = 8;  // "ARROW1" 00 00
constexpr std::uint64_t kTrailer = 10;      // int32 footer length, "ARROW1"

std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

ArrowField field_of(const fb::Field* f, std::size_t index, const std::string& file) {
  const std::string where = "footer schema field " + std::to_string(index);
  if (f == nullptr || f->name() == nullptr) throw FormatError("field has no name (C7)", file, where);
  ArrowField out;
  out.name = f->name()->str();
  out.nullable = f->nullable();
  const std::string fw = "footer schema field " + in_quotes(out.name);
  if (f->dictionary() != nullptr) throw UnsupportedError("dictionary-encoded fields are not supported", file, fw);
  if (f->children() != nullptr && f->children()->size() != 0)
    throw UnsupportedError("nested fields are not supported", file, fw);
  switch (f->type_type()) {
    case fb::Type::Int: {
      const auto* t = f->type_as_Int();
      if (t == nullptr) throw FormatError("Int type table is missing (C7)", file, fw);
      const int bits = t->bitWidth();
      const int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : -1;
      if (k < 0) throw FormatError("Int bitWidth " + std::to_string(bits) + " is not 8, 16, 32 or 64 (C7)", file, fw);
      out.type = static_cast<ColumnType>((t->is_signed() ? 0 : 4) + k);
      return out;
    }
    case fb::Type::FloatingPoint: {
      const auto* t = f->type_as_FloatingPoint();
      if (t == nullptr) throw FormatError("FloatingPoint type table is missing (C7)", file, fw);
      if (t->precision() == fb::Precision::SINGLE) out.type = ColumnType::Float;
      else if (t->precision() == fb::Precision::DOUBLE) out.type = ColumnType::Double;
      else throw UnsupportedError("halffloat (float16) fields are not supported", file, fw);
      return out;
    }
    case fb::Type::Bool: out.type = ColumnType::Bool; return out;
    case fb::Type::Utf8: out.type = ColumnType::String; return out;
    case fb::Type::LargeUtf8: throw UnsupportedError("LargeUtf8 fields are not supported", file, fw);
    default:
      throw UnsupportedError("Arrow type #" + std::to_string(static_cast<int>(f->type_type())) + " is not supported",
                             file, fw);
  }
}

// A struct element of a flatbuffers vector, copied out: the Verifier checks the vector's own
// alignment (4) but not its elements' (8), so they are never read in place.
template <typename T>
T struct_at(const flatbuffers::Vector<const T*>* vector, flatbuffers::uoffset_t i) {
  T out;
  std::memcpy(static_cast<void*>(&out), vector->Data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
  return out;
}

bool supported_version(fb::MetadataVersion v) { return v == fb::MetadataVersion::V4 || v == fb::MetadataVersion::V5; }

}  // namespace

Column ArrowArrayView::to_column() const {
  Column c(type);
  for (std::uint64_t i = 0; i < length; ++i) {
    const bool valid = is_valid(i);
    if (type == ColumnType::String) {
      c.append_string(valid ? std::optional<std::string_view>(string(i)) : std::nullopt);
    } else if (type == ColumnType::Bool) {
      c.append<std::uint8_t>(valid ? std::optional<std::uint8_t>(bool_value(i) ? 1 : 0) : std::nullopt);
    } else {
      const std::size_t w = column_type_width(type);
      const auto old = c.data.size();
      c.data.resize(old + w);
      if (valid) std::memcpy(c.data.data() + old, values.data() + i * w, w);
      c.push_validity(valid);
    }
  }
  return c;
}

ArrowFile ArrowFile::open(const io::ByteSource& source) {
  return detail::with_context(source.name(), [&]() -> ArrowFile {
    ArrowFile out;
    const std::string& file = source.name();
    const std::uint64_t size = source.size();
    if (size < kLeadingMagic + kTrailer)
      throw FormatError("file of " + std::to_string(size) + " bytes is too short for Arrow IPC (C7)", file, "file");
    const std::byte* base = source.view(0, size);
    if (base == nullptr) {
      out.owned_ = std::make_shared<const std::vector<std::byte>>(source.read_vector(0, size));
      base = out.owned_->data();
    }
    if (std::memcmp(base, "ARROW1\0\0", kLeadingMagic) != 0)
      throw FormatError("leading magic is not \"ARROW1\" (C7)", file, "file");
    if (std::memcmp(base + size - 6, "ARROW1", 6) != 0)
      throw FormatError("trailing magic is not \"ARROW1\" (C7)", file, "footer");
    const std::int64_t footer_length = load_le<std::int32_t>(base + size - kTrailer);
    if (footer_length <= 0 || static_cast<std::uint64_t>(footer_length) > size - kLeadingMagic - kTrailer)
      throw FormatError("footer length " + std::to_string(footer_length) + " does not fit in the file (C7)", file,
                        "footer");
    const std::uint64_t footer_offset = size - kTrailer - static_cast<std::uint64_t>(footer_length);
    // Flatbuffers are read in place only when aligned; a copy (small) otherwise.
    const std::vector<std::byte> footer(base + footer_offset, base + footer_offset + footer_length);
    flatbuffers::Verifier footer_verifier(reinterpret_cast<const std::uint8_t*>(footer.data()), footer.size());
    if (!fb::VerifyFooterBuffer(footer_verifier))
      throw FormatError("footer does not verify as an Arrow Footer flatbuffer (C7)", file, "footer");
    const fb::Footer* f = fb::GetFooter(footer.data());
    if (!supported_version(f->version()))
      throw UnsupportedError(
          "metadata version V" + std::to_string(static_cast<int>(f->version()) + 1) + " is not supported (V4 or V5)",
          file, "footer");
    if (f->schema() == nullptr) throw FormatError("footer has no schema (C7)", file, "footer");
    if (f->schema()->endianness() != fb::Endianness::Little)
      throw UnsupportedError("big-endian Arrow files are not supported", file, "footer schema");
    if (f->schema()->fields() != nullptr)
      for (flatbuffers::uoffset_t i = 0; i < f->schema()->fields()->size(); ++i)
        out.fields_.push_back(field_of(f->schema()->fields()->Get(i), i, file));
    if (f->dictionaries() != nullptr && f->dictionaries()->size() != 0)
      throw UnsupportedError("dictionary batches are not supported", file, "footer");
    if (f->recordBatches() == nullptr) return out;

    for (flatbuffers::uoffset_t bi = 0; bi < f->recordBatches()->size(); ++bi) {
      const fb::Block block = struct_at(f->recordBatches(), bi);
      const std::string where = "record batch " + std::to_string(bi);
      const auto fail = [&](const std::string& rule) -> void { throw FormatError(rule + " (C8)", file, where); };
      if (block.offset() < static_cast<std::int64_t>(kLeadingMagic) || block.metaDataLength() < 8 ||
          block.bodyLength() < 0)
        fail("block offset, metaDataLength or bodyLength out of range");
      const auto offset = static_cast<std::uint64_t>(block.offset());
      const auto meta_length = static_cast<std::uint64_t>(block.metaDataLength());
      const auto body_length = static_cast<std::uint64_t>(block.bodyLength());
      const std::uint64_t body_offset = checked_add(offset, meta_length, "record batch body offset");
      if (body_offset > footer_offset || body_length > footer_offset - body_offset)
        fail("message [" + std::to_string(offset) + ", +" + std::to_string(meta_length + body_length) +
             ") does not lie before the footer");
      // Prefix: continuation marker and int32 length (pre-1.0 files: the length alone).
      std::uint64_t fb_offset = offset + 4;
      std::int64_t fb_length = load_le<std::int32_t>(base + offset);
      if (load_le<std::uint32_t>(base + offset) == 0xFFFFFFFFu) {
        fb_offset = offset + 8;
        fb_length = load_le<std::int32_t>(base + offset + 4);
      }
      if (fb_length <= 0 || static_cast<std::uint64_t>(fb_length) > body_offset - fb_offset)
        fail("message metadata length " + std::to_string(fb_length) + " does not fit in the block's metaDataLength");
      // Messages start 8-aligned and their prefix plus metadata is padded to the next multiple of 8
      // and no further, so a damaged offset or metaDataLength cannot shift the body unnoticed.
      const std::uint64_t padded = (fb_offset - offset + static_cast<std::uint64_t>(fb_length) + 7) / 8 * 8;
      if (offset % 8 != 0 || meta_length != padded)
        fail("block offset " + std::to_string(offset) + " / metaDataLength " + std::to_string(meta_length) +
             " is not the 8-aligned message of " + std::to_string(fb_length) + " metadata bytes");
      const std::vector<std::byte> meta(base + fb_offset, base + fb_offset + fb_length);
      flatbuffers::Verifier verifier(reinterpret_cast<const std::uint8_t*>(meta.data()), meta.size());
      if (!fb::VerifyMessageBuffer(verifier)) fail("metadata does not verify as an Arrow Message flatbuffer");
      const fb::Message* m = fb::GetMessage(meta.data());
      if (!supported_version(m->version()))
        throw UnsupportedError("message metadata version is not V4 or V5", file, where);
      const fb::RecordBatch* rb = m->header_as_RecordBatch();
      if (rb == nullptr) fail("message is not a RecordBatch");
      if (m->bodyLength() != block.bodyLength()) fail("message bodyLength differs from the footer block's");
      if (rb->compression() != nullptr)
        throw UnsupportedError("compressed record batch bodies are not supported", file, where);
      if (rb->length() < 0) fail("negative batch length");
      const auto length = static_cast<std::uint64_t>(rb->length());
      const std::size_t nfields = out.fields_.size();
      if ((rb->nodes() ? rb->nodes()->size() : 0) != nfields) fail("field node count differs from the schema's fields");
      std::size_t want_buffers = 0;
      for (const auto& fld : out.fields_) want_buffers += fld.type == ColumnType::String ? 3 : 2;
      if ((rb->buffers() ? rb->buffers()->size() : 0) != want_buffers) fail("buffer count does not match the schema");
      const std::byte* body = base + body_offset;
      Batch batch;
      batch.length = length;
      std::size_t next_buffer = 0;
      for (std::size_t fi = 0; fi < nfields; ++fi) {
        const auto& fld = out.fields_[fi];
        const std::string fw = where + " field " + in_quotes(fld.name);
        const auto ffail = [&](const std::string& rule) -> void { throw FormatError(rule + " (C8)", file, fw); };
        const fb::FieldNode node = struct_at(rb->nodes(), static_cast<flatbuffers::uoffset_t>(fi));
        if (node.length() < 0 || static_cast<std::uint64_t>(node.length()) != length)
          ffail("field node length differs from the batch length");
        if (node.null_count() < 0 || static_cast<std::uint64_t>(node.null_count()) > length)
          ffail("null_count out of range");
        const auto buffer = [&](const char* what) {
          const fb::Buffer b = struct_at(rb->buffers(), static_cast<flatbuffers::uoffset_t>(next_buffer++));
          if (b.offset() < 0 || b.length() < 0 || static_cast<std::uint64_t>(b.offset()) > body_length ||
              static_cast<std::uint64_t>(b.length()) > body_length - static_cast<std::uint64_t>(b.offset()))
            ffail(std::string(what) + " buffer does not lie inside the body");
          return std::span<const std::byte>(body + b.offset(), static_cast<std::size_t>(b.length()));
        };
        ArrowArrayView v;
        v.type = fld.type;
        v.length = length;
        v.null_count = static_cast<std::uint64_t>(node.null_count());
        const auto validity = buffer("validity");
        const std::uint64_t bitmap_bytes = (length + 7) / 8;
        if (v.null_count > 0) {
          if (validity.size() < bitmap_bytes) ffail("validity bitmap is shorter than the batch");
          v.validity = validity.first(bitmap_bytes);
        }
        v.values = buffer("values");
        if (fld.type == ColumnType::Bool) {
          if (v.values.size() < bitmap_bytes) ffail("boolean bitmap is shorter than the batch");
        } else if (fld.type == ColumnType::String) {
          v.data = buffer("data");
          if (v.values.size() / 4 < length + 1) ffail("string offsets are fewer than length + 1");
          if (v.value<std::int32_t>(0) != 0) ffail("string offsets do not start at 0");
          for (std::uint64_t i = 0; i < length; ++i)
            if (v.value<std::int32_t>(i + 1) < v.value<std::int32_t>(i)) ffail("string offsets decrease");
          if (static_cast<std::uint64_t>(v.value<std::int32_t>(length)) > v.data.size())
            ffail("string offsets end beyond the data buffer");
        } else if (v.values.size() / column_type_width(fld.type) < length) {
          ffail("values buffer is shorter than the batch");
        }
        batch.columns.push_back(v);
      }
      out.batches_.push_back(std::move(batch));
    }
    return out;
  });
}

}  // namespace tessera::columnar
