// Writing the Arrow IPC file format (spec §6.9): the magic, the schema message, one record batch
// message per call (validity bitmap, values, UTF-8 offsets and data, each buffer 8-aligned and
// zero-padded), the end-of-stream marker, the footer with its Blocks, and the trailer.
#include <algorithm>
#include <cstring>

#include "File_generated.h"
#include "Message_generated.h"
#include "Schema_generated.h"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar {
namespace fb = org::apache::arrow::flatbuf;

namespace {

constexpr std::byte kMagic[8] = {std::byte{'A'}, std::byte{'R'}, std::byte{'R'}, std::byte{'O'},
                                 std::byte{'W'}, std::byte{'1'}, std::byte{0},   std::byte{0}};
constexpr std::uint32_t kContinuation = 0xFFFFFFFFu;

std::pair<fb::Type, flatbuffers::Offset<void>> arrow_type(flatbuffers::FlatBufferBuilder& b, ColumnType t) {
  switch (t) {
    case ColumnType::Float: return {fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::SINGLE).Union()};
    case ColumnType::Double:
      return {fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::DOUBLE).Union()};
    case ColumnType::Bool: return {fb::Type::Bool, fb::CreateBool(b).Union()};
    case ColumnType::String: return {fb::Type::Utf8, fb::CreateUtf8(b).Union()};
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64: {
      const auto bits = static_cast<std::int32_t>(column_type_width(t) * 8);
      return {fb::Type::Int, fb::CreateInt(b, bits, is_signed_integer(t)).Union()};
    }
  }
  throw UsageError("column type tag " + std::to_string(static_cast<int>(t)) + " has no Arrow type");
}

flatbuffers::Offset<fb::Schema> build_schema(flatbuffers::FlatBufferBuilder& b, const std::vector<ArrowField>& fields) {
  std::vector<flatbuffers::Offset<fb::Field>> offsets;
  for (const auto& f : fields) {
    const auto name = b.CreateString(f.name);
    const auto [type_type, type] = arrow_type(b, f.type);
    const auto children = b.CreateVector(std::vector<flatbuffers::Offset<fb::Field>>{});
    offsets.push_back(fb::CreateField(b, name, f.nullable, type_type, type, 0, children));
  }
  return fb::CreateSchema(b, fb::Endianness::Little, b.CreateVector(offsets));
}

void pad_to_8(std::vector<std::byte>& out) { out.resize(align8(out.size()), std::byte{0}); }

}  // namespace

struct ArrowFileWriter::State {
  io::ByteSink& sink;
  std::vector<ArrowField> fields;
  std::vector<fb::Block> blocks;
  bool finished = false;

  // Writes continuation, length and the padded Message flatbuffer; returns the bytes written.
  std::uint64_t write_message(flatbuffers::FlatBufferBuilder& b) {
    std::vector<std::byte> out;
    append_le<std::uint32_t>(out, kContinuation);
    append_le<std::int32_t>(out, 0);
    const auto* p = reinterpret_cast<const std::byte*>(b.GetBufferPointer());
    out.insert(out.end(), p, p + b.GetSize());
    pad_to_8(out);
    store_le<std::int32_t>(out.data() + 4, static_cast<std::int32_t>(out.size() - 8));
    sink.write(out);
    return out.size();
  }
};

ArrowFileWriter::ArrowFileWriter(io::ByteSink& sink, std::vector<ArrowField> fields)
    : state_(new State{sink, std::move(fields), {}, false}) {
  sink.write(kMagic);
  flatbuffers::FlatBufferBuilder b;
  const auto schema = build_schema(b, state_->fields);
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::Schema, schema.Union(), 0));
  state_->write_message(b);
}

ArrowFileWriter::~ArrowFileWriter() = default;

void ArrowFileWriter::write_batch(std::span<const Column> columns) {
  auto& s = *state_;
  if (s.finished) throw UsageError("Arrow IPC writer: record batch after finish()");
  if (columns.size() != s.fields.size())
    throw UsageError("Arrow IPC writer: " + std::to_string(columns.size()) + " columns given, the schema has " +
                     std::to_string(s.fields.size()));
  const std::uint64_t length = columns.empty() ? 0 : columns[0].length;
  std::vector<std::byte> body;
  std::vector<fb::FieldNode> nodes;
  std::vector<fb::Buffer> buffers;
  const auto add_buffer = [&](std::span<const std::byte> bytes) {
    buffers.emplace_back(static_cast<std::int64_t>(body.size()), static_cast<std::int64_t>(bytes.size()));
    body.insert(body.end(), bytes.begin(), bytes.end());
    pad_to_8(body);
  };
  const auto bitmap = [&](auto&& bit) {
    std::vector<std::byte> out((length + 7) / 8, std::byte{0});
    for (std::uint64_t i = 0; i < length; ++i)
      if (bit(i)) out[i / 8] |= static_cast<std::byte>(1u << (i % 8));
    return out;
  };
  for (std::size_t f = 0; f < columns.size(); ++f) {
    const Column& c = columns[f];
    if (c.type != s.fields[f].type)
      throw UsageError("Arrow IPC writer: column '" + s.fields[f].name + "' is " +
                       std::string(column_type_name(c.type)) + ", the schema says " +
                       std::string(column_type_name(s.fields[f].type)));
    if (c.length != length) throw UsageError("Arrow IPC writer: columns of one batch differ in length");
    c.check_shape();
    const std::uint64_t nulls = c.null_count();
    if (nulls > 0 && !s.fields[f].nullable)
      throw UsageError("Arrow IPC writer: nulls in non-nullable field '" + s.fields[f].name + "'");
    nodes.emplace_back(static_cast<std::int64_t>(length), static_cast<std::int64_t>(nulls));
    if (nulls == 0) add_buffer({});
    else add_buffer(bitmap([&](std::uint64_t i) { return c.validity[i] != 0; }));
    if (c.type == ColumnType::Bool) {
      add_buffer(bitmap([&](std::uint64_t i) { return c.data[i] != std::byte{0}; }));
    } else if (c.type == ColumnType::String) {
      if (c.data.size() > static_cast<std::uint64_t>(INT32_MAX))
        throw LimitError("Arrow IPC writer: string data of field '" + s.fields[f].name +
                         "' exceeds the 2 GiB of int32 offsets");
      std::vector<std::byte> offsets;
      offsets.reserve((length + 1) * 4);
      for (const auto o : c.offsets) append_le<std::int32_t>(offsets, static_cast<std::int32_t>(o));
      add_buffer(offsets);
      add_buffer(c.data);
    } else {
      add_buffer(c.data);
    }
  }
  flatbuffers::FlatBufferBuilder b;
  // Built one statement at a time: the order of function arguments is unspecified, and it decides
  // where the builder places each vector (gcc and clang differ), so the bytes would depend on the
  // compiler.
  const auto node_vector = b.CreateVectorOfStructs(nodes);
  const auto buffer_vector = b.CreateVectorOfStructs(buffers);
  const auto batch = fb::CreateRecordBatch(b, static_cast<std::int64_t>(length), node_vector, buffer_vector);
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::RecordBatch, batch.Union(),
                             static_cast<std::int64_t>(body.size())));
  const std::uint64_t offset = s.sink.position();
  const std::uint64_t metadata = s.write_message(b);
  s.sink.write(body);
  s.blocks.emplace_back(static_cast<std::int64_t>(offset), static_cast<std::int32_t>(metadata),
                        static_cast<std::int64_t>(body.size()));
}

void ArrowFileWriter::finish() {
  auto& s = *state_;
  if (s.finished) throw UsageError("Arrow IPC writer: finish() called twice");
  std::vector<std::byte> out;
  append_le<std::uint32_t>(out, kContinuation);
  append_le<std::uint32_t>(out, 0);
  flatbuffers::FlatBufferBuilder b;
  const auto schema = build_schema(b, s.fields);
  const auto dictionaries = b.CreateVectorOfStructs(std::vector<fb::Block>{});
  const auto batches = b.CreateVectorOfStructs(s.blocks);
  b.Finish(fb::CreateFooter(b, fb::MetadataVersion::V5, schema, dictionaries, batches));
  const auto* p = reinterpret_cast<const std::byte*>(b.GetBufferPointer());
  out.insert(out.end(), p, p + b.GetSize());
  append_le<std::int32_t>(out, static_cast<std::int32_t>(b.GetSize()));
  out.insert(out.end(), kMagic, kMagic + 6);
  s.sink.write(out);
  s.sink.commit();
  s.finished = true;
}

}  // namespace tessera::columnar
