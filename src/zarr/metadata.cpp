// zarr.json of groups and arrays: strict decode, cross-member validation, zarr-python encode.
#include "tessera/zarr/metadata.hpp"

#include <algorithm>
#include <string>

#include "tessera/codec/json_fields.hpp"
#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {
namespace {

using codec::json::Json;

Json parse_object(std::span<const std::byte> bytes, std::string_view key) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Json doc;
  try {
    doc = codec::json::parse_strict(text, key);
  } catch (const FormatError& e) {
    fail_at<FormatError>(key, "zarr.json", std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail_at<FormatError>(key, "zarr.json", "must be a JSON object");
  return doc;
}

// The Zarr v3 extension rule: an unknown member is ignorable only when its value is an object
// saying `"must_understand": false`.
void check_extension_member(const std::string& name, const Json& value, std::string_view key) {
  if (value.is_object()) {
    const auto mu = value.find("must_understand");
    if (mu != value.end() && *mu == false) return;
  }
  fail_at<UnsupportedError>(key, name,
                            "unknown metadata member \"" + name + "\" (not marked \"must_understand\": false)");
}

const Json& required(const Json& doc, const char* name, std::string_view key) {
  const Json* v = codec::json::member(doc, name);
  if (!v) fail_at<FormatError>(key, "zarr.json", std::string("missing required member \"") + name + "\"");
  return *v;
}

std::vector<std::uint64_t> read_uint_list(const Json& value, const char* where, bool positive, std::string_view key) {
  if (!value.is_array()) fail_at<FormatError>(key, where, "must be an array of integers");
  auto list = codec::json::as_uint64_list(value);
  if (!list || (positive && std::find(list->begin(), list->end(), 0) != list->end()))
    fail_at<FormatError>(key, where,
                         std::string("must be an array of ") + (positive ? "positive" : "non-negative") +
                             " integers, got " + value.dump());
  return std::move(*list);
}

std::vector<std::uint64_t> read_chunk_grid(const Json& value, std::string_view key) {
  if (!value.is_object()) fail_at<FormatError>(key, "chunk_grid", "must be an object");
  const Json* configuration = nullptr;
  for (const auto& [member, v] : value.items()) {
    if (member == "name") {
      if (v != "regular") fail_at<UnsupportedError>(key, "chunk_grid.name", "unsupported chunk grid " + v.dump());
    } else if (member == "configuration") {
      configuration = &v;
    } else {
      fail_at<UnsupportedError>(key, "chunk_grid", "unknown member \"" + member + "\"");
    }
  }
  if (!value.contains("name")) fail_at<FormatError>(key, "chunk_grid", "missing \"name\"");
  if (!configuration || !configuration->is_object() || !configuration->contains("chunk_shape"))
    fail_at<FormatError>(key, "chunk_grid.configuration", "must be an object with \"chunk_shape\"");
  for (const auto& [member, _] : configuration->items())
    if (member != "chunk_shape")
      fail_at<UnsupportedError>(key, "chunk_grid.configuration", "unknown member \"" + member + "\"");
  return read_uint_list((*configuration)["chunk_shape"], "chunk_grid.configuration.chunk_shape", true, key);
}

void require_object(const Json& value, const char* where, std::string_view key) {
  if (!value.is_object()) fail_at<FormatError>(key, where, "must be an object");
}

GroupMeta decode_group_members(const Json& doc, std::string_view key) {
  GroupMeta out;
  for (const auto& [member, v] : doc.items()) {
    if (member == "zarr_format" || member == "node_type") continue;
    if (member == "attributes") {
      require_object(v, "attributes", key);
      out.attributes = v;
    } else if (member == "consolidated_metadata") {
      // zarr-python's consolidated listing: a cache, never authoritative; ignored.
      if (!v.is_null() && !v.is_object())
        fail_at<FormatError>(key, "consolidated_metadata", "must be null or an object");
    } else {
      check_extension_member(member, v, key);
    }
  }
  return out;
}

ArrayMeta decode_array_members(const Json& doc, std::string_view key) {
  ArrayMeta out;
  out.shape = read_uint_list(required(doc, "shape", key), "shape", false, key);
  out.data_type = decode_data_type(required(doc, "data_type", key), key);
  out.chunk_shape = read_chunk_grid(required(doc, "chunk_grid", key), key);
  out.chunk_key_encoding = decode_chunk_key_encoding(required(doc, "chunk_key_encoding", key), key);
  out.fill_value = decode_fill_value(required(doc, "fill_value", key), out.data_type, key);
  CodecList codecs = decode_codecs(required(doc, "codecs", key), key);
  out.codecs = std::move(codecs.chain);
  out.sharding = std::move(codecs.sharding);
  for (const auto& [member, v] : doc.items()) {
    if (member == "shape" || member == "data_type" || member == "chunk_grid" || member == "chunk_key_encoding" ||
        member == "fill_value" || member == "codecs" || member == "zarr_format" || member == "node_type")
      continue;
    if (member == "attributes") {
      require_object(v, "attributes", key);
      out.attributes = v;
    } else if (member == "dimension_names") {
      if (v.is_null()) continue;
      if (!v.is_array()) fail_at<FormatError>(key, "dimension_names", "must be an array of strings or nulls");
      std::vector<std::optional<std::string>> names;
      for (const Json& n : v) {
        if (n.is_null()) names.emplace_back();
        else if (n.is_string()) names.emplace_back(n.get<std::string>());
        else fail_at<FormatError>(key, "dimension_names", "must be an array of strings or nulls, got " + v.dump());
      }
      out.dimension_names = std::move(names);
    } else if (member == "storage_transformers") {
      if (!v.is_array()) fail_at<FormatError>(key, "storage_transformers", "must be an array");
      if (!v.empty()) fail_at<UnsupportedError>(key, "storage_transformers", "storage transformers are not supported");
    } else {
      check_extension_member(member, v, key);
    }
  }
  return out;
}

}  // namespace

NodeMeta decode_node(std::span<const std::byte> bytes, std::string_view key) {
  const Json doc = parse_object(bytes, key);
  const Json& format = required(doc, "zarr_format", key);
  if (!format.is_number_integer() || format.get<std::int64_t>() != 3)
    fail_at<FormatError>(key, "zarr_format", "must be 3, got " + format.dump());
  const Json& node_type = required(doc, "node_type", key);
  if (node_type == "group") return decode_group_members(doc, key);
  if (node_type == "array") return decode_array_members(doc, key);
  fail_at<FormatError>(key, "node_type", "must be \"group\" or \"array\", got " + node_type.dump());
}

ArrayMeta decode_array(std::span<const std::byte> bytes, std::string_view key) {
  NodeMeta node = decode_node(bytes, key);
  if (auto* array = std::get_if<ArrayMeta>(&node)) return std::move(*array);
  fail_at<FormatError>(key, "node_type", "expected an array, found a group");
}

GroupMeta decode_group(std::span<const std::byte> bytes, std::string_view key) {
  NodeMeta node = decode_node(bytes, key);
  if (auto* group = std::get_if<GroupMeta>(&node)) return std::move(*group);
  fail_at<FormatError>(key, "node_type", "expected a group, found an array");
}

void validate(const ArrayMeta& meta, std::string_view key) {
  const std::size_t rank = meta.shape.size();
  if (rank == 0) fail_at<UnsupportedError>(key, "shape", "0-d arrays are not supported");
  const auto rank_text = std::to_string(rank);
  if (meta.chunk_shape.size() != rank)
    fail_at<FormatError>(
        key, "chunk_grid.configuration.chunk_shape",
        "has " + std::to_string(meta.chunk_shape.size()) + " entries for a rank-" + rank_text + " array");
  for (const auto c : meta.chunk_shape)
    if (c == 0) fail_at<FormatError>(key, "chunk_grid.configuration.chunk_shape", "entries must be at least 1");
  if (meta.dimension_names && meta.dimension_names->size() != rank)
    fail_at<FormatError>(
        key, "dimension_names",
        "has " + std::to_string(meta.dimension_names->size()) + " entries for a rank-" + rank_text + " array");
  if (meta.sharding) {
    const auto& inner = meta.sharding->chunk_shape;
    const std::string where = "codecs[0].configuration.chunk_shape";
    if (inner.size() != rank)
      fail_at<FormatError>(key, where,
                           "has " + std::to_string(inner.size()) + " entries for a rank-" + rank_text + " array");
    for (std::size_t d = 0; d < rank; ++d)
      if (inner[d] == 0 || meta.chunk_shape[d] % inner[d] != 0)
        fail_at<FormatError>(key, where,
                             "inner chunk " + std::to_string(inner[d]) + " on axis " + std::to_string(d) +
                                 " does not divide the shard's " + std::to_string(meta.chunk_shape[d]));
  }
  const std::string chain_where = meta.sharding ? "codecs[0].configuration.codecs" : "codecs";
  if (meta.data_type.vlen && !meta.codecs.is_vlen())
    fail_at<FormatError>(key, chain_where,
                         "the bytes codec cannot encode the variable-length type " + meta.data_type.name);
  if (!meta.data_type.vlen && meta.codecs.is_vlen())
    fail_at<FormatError>(key, chain_where, "vlen-bytes cannot encode the fixed-width type " + meta.data_type.name);
  if (const auto* bytes = std::get_if<BytesCodec>(&meta.codecs.array_to_bytes);
      bytes && !bytes->endian && meta.data_type.item_size() > 1)
    fail_at<FormatError>(key, chain_where,
                         "the bytes codec must name its endian for the " + std::to_string(meta.data_type.item_size()) +
                             "-byte type " + meta.data_type.name);
  if (meta.fill_value.element.size() != meta.data_type.item_size())
    fail_at<FormatError>(key, "fill_value",
                         "holds " + std::to_string(meta.fill_value.element.size()) + " bytes; " + meta.data_type.name +
                             " needs " + std::to_string(meta.data_type.item_size()));
}

std::string encode(const ArrayMeta& meta) {
  Json doc = Json::object();
  doc["shape"] = meta.shape;
  doc["data_type"] = meta.data_type.name;
  Json grid = Json::object();
  grid["name"] = "regular";
  grid["configuration"] = Json::object();
  grid["configuration"]["chunk_shape"] = meta.chunk_shape;
  doc["chunk_grid"] = std::move(grid);
  doc["chunk_key_encoding"] = encode_chunk_key_encoding(meta.chunk_key_encoding);
  doc["fill_value"] = encode_fill_value(meta.fill_value, meta.data_type);
  doc["codecs"] = encode_codecs(CodecList{meta.codecs, meta.sharding}, meta.data_type.item_size());
  doc["attributes"] = meta.attributes;
  if (meta.dimension_names) {
    Json names = Json::array();
    for (const auto& n : *meta.dimension_names) names.push_back(n ? Json(*n) : Json(nullptr));
    doc["dimension_names"] = std::move(names);
  }
  doc["zarr_format"] = 3;
  doc["node_type"] = "array";
  doc["storage_transformers"] = Json::array();
  return codec::json::dump(doc, codec::json::DumpOptions::python_pretty());
}

std::string encode(const GroupMeta& meta) {
  Json doc = Json::object();
  doc["attributes"] = meta.attributes;
  doc["zarr_format"] = 3;
  doc["node_type"] = "group";
  return codec::json::dump(doc, codec::json::DumpOptions::python_pretty());
}

}  // namespace tessera::zarr
