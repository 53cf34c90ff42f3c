// obs/schema.json (S1–S7), the fingerprint (§6.6) and cache file names (§6.9).
#include "tessera/cells/obs_schema.hpp"

#include <cstdio>
#include <set>

#include "rules.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {
namespace {

using codec::json::Json;
using columnar::ColumnType;
using detail::fail;

constexpr const char* kFormat = "deltacells-obs";

bool type_fits_kind(ObsKind kind, ColumnType type) {
  switch (kind) {
    case ObsKind::Category: return type == ColumnType::Int8 || type == ColumnType::Int16 || type == ColumnType::Int32;
    case ObsKind::Numeric: return type != ColumnType::Bool && type != ColumnType::String;
    case ObsKind::Bool: return type == ColumnType::Bool;
    case ObsKind::String: return type == ColumnType::String;
  }
  return false;
}

std::uint64_t code_capacity(ColumnType type) {
  switch (type) {
    case ColumnType::Int8: return 127;
    case ColumnType::Int16: return 32767;
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64:
    case ColumnType::Float:
    case ColumnType::Double:
    case ColumnType::Bool:
    case ColumnType::String: return 2147483647;  // the int32 code range
  }
  return 2147483647;
}

std::string column_label(std::size_t i, const std::string& name) {
  return "column " + std::to_string(i) + " '" + name + "'";
}

}  // namespace

std::string_view obs_kind_name(ObsKind kind) noexcept {
  switch (kind) {
    case ObsKind::Category: return "category";
    case ObsKind::Numeric: return "numeric";
    case ObsKind::Bool: return "bool";
    case ObsKind::String: return "string";
  }
  return "?";
}

std::optional<ObsKind> obs_kind_from_name(std::string_view name) noexcept {
  for (ObsKind k : {ObsKind::Category, ObsKind::Numeric, ObsKind::Bool, ObsKind::String})
    if (obs_kind_name(k) == name) return k;
  return std::nullopt;
}

ColumnType category_code_type(std::size_t n) noexcept {
  if (n <= 127) return ColumnType::Int8;
  if (n <= 32767) return ColumnType::Int16;
  return ColumnType::Int32;
}

ObsSchema ObsSchema::parse(std::string_view text, std::string_view object) {
  const Json root = codec::json::parse_strict(text, object);
  if (!root.is_object()) fail(object, "", "is not a JSON object", "S1");
  for (const auto& [key, value] : root.items()) {
    (void)value;
    if (key != "format" && key != "version" && key != "columns")
      fail(object, "key " + key, "is not a schema key (format, version, columns)", "S1");
  }
  if (!root.contains("format") || !root["format"].is_string() || root["format"].get<std::string>() != kFormat)
    fail(object, "key format", "must be \"deltacells-obs\"", "S1");
  if (!root.contains("version") || !root["version"].is_number_integer() || root["version"].get<std::int64_t>() != 1)
    fail(object, "key version", "must be the integer 1", "S1");
  if (!root.contains("columns") || !root["columns"].is_array()) fail(object, "key columns", "must be a list", "S2");
  ObsSchema schema;
  std::size_t i = 0;
  for (const Json& c : root["columns"]) {
    const std::string where = "column " + std::to_string(i);
    if (!c.is_object()) fail(object, where, "is not an object", "S2");
    for (const auto& [key, value] : c.items()) {
      (void)value;
      if (key != "name" && key != "kind" && key != "arrow_type" && key != "categories")
        fail(object, where, "has the key '" + key + "' (allowed: name, kind, arrow_type, categories)", "S2");
    }
    for (const char* key : {"name", "kind", "arrow_type"})
      if (!c.contains(key)) fail(object, where, std::string("has no '") + key + "'", "S2");
    if (!c["name"].is_string()) fail(object, where, "name is not a string", "S3");
    ObsColumnSchema col;
    col.name = c["name"].get<std::string>();
    const std::string label = column_label(i, col.name);
    if (!c["kind"].is_string()) fail(object, label, "kind is not a string", "S4");
    const auto kind = obs_kind_from_name(c["kind"].get<std::string>());
    if (!kind)
      fail(object, label, "kind '" + c["kind"].get<std::string>() + "' is not category, numeric, bool or string", "S4");
    col.kind = *kind;
    if (!c["arrow_type"].is_string()) fail(object, label, "arrow_type is not a string", "S5");
    const std::string arrow_type = c["arrow_type"].get<std::string>();
    if (arrow_type == "halffloat")
      fail<UnsupportedError>(
          object, label, "stores halffloat (float16), which tessera does not support; exclude or convert the column",
          "S5");
    const auto type = columnar::column_type_from_name(arrow_type);
    if (!type) fail(object, label, "arrow_type '" + arrow_type + "' is not a supported stored type", "S5");
    col.type = *type;
    const bool has_categories = c.contains("categories") && !c["categories"].is_null();
    if (has_categories != (col.kind == ObsKind::Category))
      fail(object, label,
           col.kind == ObsKind::Category ? "is a category column without categories"
                                         : "has categories but is not a category column",
           "S4");
    if (has_categories) {
      if (!c["categories"].is_array()) fail(object, label, "categories is not a list", "S6");
      for (const Json& v : c["categories"]) {
        if (!v.is_string()) fail(object, label, "a category is not a string", "S6");
        col.categories.push_back(v.get<std::string>());
      }
    }
    schema.columns.push_back(std::move(col));
    ++i;
  }
  schema.validate(object);
  return schema;
}

void ObsSchema::validate(std::string_view object) const {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const ObsColumnSchema& c = columns[i];
    const std::string label = column_label(i, c.name);
    if (!names.insert(c.name).second) fail(object, label, "repeats the name of an earlier column", "S3");
    if (!type_fits_kind(c.kind, c.type))
      fail(object, label,
           "kind " + std::string(obs_kind_name(c.kind)) + " cannot be stored as " +
               std::string(columnar::column_type_name(c.type)),
           "S5");
    if (c.kind != ObsKind::Category) {
      if (!c.categories.empty()) fail(object, label, "has categories but is not a category column", "S4");
      continue;
    }
    if (c.categories.size() > code_capacity(c.type))
      fail(object, label,
           std::to_string(c.categories.size()) + " categories do not fit codes of type " +
               std::string(columnar::column_type_name(c.type)),
           "S5");
    std::set<std::string_view> seen;
    for (const auto& v : c.categories)
      if (!seen.insert(v).second) fail(object, label, "repeats the category '" + v + "'", "S6");
  }
}

std::string ObsSchema::serialize() const {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::python_default());
  w.begin_object();
  w.key("format").value(kFormat);
  w.key("version").value(1);
  w.key("columns").begin_array();
  for (const auto& c : columns) {
    w.begin_object();
    w.key("name").value(c.name);
    w.key("kind").value(obs_kind_name(c.kind));
    w.key("arrow_type").value(columnar::column_type_name(c.type));
    w.key("categories");
    if (c.kind == ObsKind::Category) {
      w.begin_array();
      for (const auto& v : c.categories) w.value(v);
      w.end_array();
    } else {
      w.value(nullptr);
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

std::optional<std::size_t> ObsSchema::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  return std::nullopt;
}

std::vector<std::string> ObsSchema::names() const {
  std::vector<std::string> out;
  out.reserve(columns.size());
  for (const auto& c : columns) out.push_back(c.name);
  return out;
}

const ObsColumnSchema& ObsSchema::column(std::string_view name) const {
  if (const auto i = find(name)) return columns[*i];
  std::string available;
  for (const auto& c : columns) available += (available.empty() ? "" : ", ") + c.name;
  throw UsageError("no obs column '" + std::string(name) + "'; available: " + available);
}

void check_schema_canonical(std::string_view text, std::string_view object) {
  if (ObsSchema::parse(text, object).serialize() != text)
    fail(object, "", "is not in the canonical form (json.dumps with default separators, no trailing newline)", "S7");
}

std::string obs_fingerprint_payload(std::string_view schema_text, std::span<const std::string> shard_sha256,
                                    std::span<const std::uint64_t> tile_cells) {
  // Keys already in sorted order: schema < shards < tile_cells.
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::python_sorted());
  w.begin_object();
  w.key("schema").value(schema_text);
  w.key("shards").begin_array();
  for (const auto& h : shard_sha256) w.value(h);
  w.end_array();
  w.key("tile_cells").begin_array();
  for (const auto n : tile_cells) w.value(n);
  w.end_array();
  w.end_object();
  return out;
}

std::string obs_fingerprint(std::string_view schema_text, std::span<const std::string> shard_sha256,
                            std::span<const std::uint64_t> tile_cells) {
  return codec::sha256_hex(codec::as_bytes(obs_fingerprint_payload(schema_text, shard_sha256, tile_cells)))
      .substr(0, 24);
}

std::string obs_shard_key(std::uint64_t shard) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%04llu", static_cast<unsigned long long>(shard));
  return std::string("obs/obs_") + digits + ".parquet";
}

std::string quote_column_file_name(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (const char ch : name) {
    const auto b = static_cast<unsigned char>(ch);
    const bool keep = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '_' ||
                      b == '.' || b == '-' || b == '~';
    if (keep) {
      out += ch;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

}  // namespace tessera::cells
