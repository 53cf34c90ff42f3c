// History footer JSON: schema checks on read, key-ordered compact serialisation on write,
// MetadataLimitsV1, and the spill decision (spec tet.md §1.8).
#include "tessera/tet/footer.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

#include "tessera/codec/json.hpp"
#include "tessera/codec/json_fields.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;
using nlohmann::json;

// Schema violations inside footer JSON; the caller adds the §1.8 prefix.
struct SchemaError {
  std::string detail;
};

const std::string& expect_string(const json& v, const std::string& where) {
  const std::string* s = codec::json::as_string(v);
  if (!s) throw SchemaError{where + " must be a string"};
  return *s;
}

std::vector<std::string> expect_string_array(const json& v, const std::string& where) {
  auto list = codec::json::as_string_list(v);
  if (!list) throw SchemaError{where + " must be an array of strings"};
  return std::move(*list);
}

std::map<std::string, std::string> expect_string_map(const json& v, const std::string& where) {
  if (!v.is_object()) throw SchemaError{where + " must be an object of strings"};
  std::map<std::string, std::string> out;
  for (const auto& [k, item] : v.items()) out[k] = expect_string(item, where + "." + k);
  return out;
}

HistoryRow parse_row(const json& v, std::size_t i) {
  const std::string where = "history[" + std::to_string(i) + "]";
  HistoryRow row;
  if (v.is_array()) {  // legacy form: [op, source, at]
    if (v.size() != 3) throw SchemaError{where + " legacy row must have 3 strings"};
    row.op = expect_string(v[0], where + "[0]");
    row.source = expect_string(v[1], where + "[1]");
    row.at = expect_string(v[2], where + "[2]");
    return row;
  }
  if (!v.is_object()) throw SchemaError{where + " must be an object"};
  for (const auto& [k, item] : v.items()) {
    if (k == "op") row.op = expect_string(item, where + ".op");
    else if (k == "source") row.source = expect_string(item, where + ".source");
    else if (k == "at") row.at = expect_string(item, where + ".at");
    else if (k == "parents") row.parents = expect_string_array(item, where + ".parents");
    else if (k == "params") row.params = expect_string_map(item, where + ".params");
    else throw SchemaError{where + ": unknown field `" + k + "`"};
  }
  for (const char* required : {"op", "source", "at"})
    if (!v.contains(required)) throw SchemaError{where + ": missing field `" + std::string(required) + "`"};
  return row;
}

Metadata parse_metadata_value(const json& v) {
  if (!v.is_object()) throw SchemaError{"metadata must be an object"};
  Metadata md;
  if (auto it = v.find("file"); it != v.end()) {
    if (!it->is_object()) throw SchemaError{"metadata.file must be an object"};
    FileMetadata file;
    for (const auto& [k, item] : it->items()) {
      if (k == "tool") file.tool = expect_string(item, "metadata.file.tool");
      else if (k == "library_version") file.library_version = expect_string(item, "metadata.file.library_version");
      else if (k == "created_at") file.created_at = expect_string(item, "metadata.file.created_at");
    }
    md.file = std::move(file);
  }
  if (auto it = v.find("datasets"); it != v.end()) {
    if (!it->is_object()) throw SchemaError{"metadata.datasets must be an object"};
    for (const auto& [name, ds] : it->items()) {
      const std::string where = "metadata.datasets." + name;
      if (!ds.is_object()) throw SchemaError{where + " must be an object"};
      DatasetMetadata dm;
      if (auto a = ds.find("attrs"); a != ds.end()) dm.attrs = expect_string_map(*a, where + ".attrs");
      if (auto d = ds.find("dim_names"); d != ds.end()) dm.dim_names = expect_string_array(*d, where + ".dim_names");
      if (auto c = ds.find("coords"); c != ds.end()) {
        if (!c->is_object()) throw SchemaError{where + ".coords must be an object"};
        for (const auto& [axis, coord] : c->items()) {
          if (!coord.is_object() || !coord.contains("labels"))
            throw SchemaError{where + ".coords." + axis + " must be an object with `labels`"};
          dm.coords[axis] = expect_string_array(coord.at("labels"), where + ".coords." + axis + ".labels");
        }
      }
      md.datasets[name] = std::move(dm);
    }
  }
  return md;
}

MetadataRef parse_ref(const json& v, const std::string& key) {
  if (!v.is_object() || v.size() != 2 || !v.contains("offset") || !v.contains("len"))
    throw SchemaError{key + " must be exactly {\"offset\", \"len\"}"};
  const auto offset = codec::json::as_uint64(v.at("offset"));
  const auto len = codec::json::as_uint64(v.at("len"));
  if (!offset || !len) throw SchemaError{key + " offset and len must be non-negative integers"};
  return {*offset, *len};
}

MetadataRef parse_metadata_ref(const json& v) { return parse_ref(v, "metadata_ref"); }

std::optional<MetadataRef> probe_ref(std::string_view text, const char* key) noexcept {
  try {
    if (codec::json::nesting_depth(text) > codec::json::kMaxNestingDepth) return std::nullopt;
    const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!root.is_object()) return std::nullopt;
    auto it = root.find(key);
    if (it == root.end()) return std::nullopt;
    return parse_ref(*it, key);
  } catch (...) {
    return std::nullopt;
  }
}

// Over-deep JSON is one more way for the footer to be invalid, reported with the footer texts.
json parse_json_or(std::string_view text, const std::string& prefix) {
  try {
    codec::json::check_nesting(text, "history footer");
    return json::parse(text.begin(), text.end());
  } catch (const LimitError& e) {
    throw FormatError(prefix + e.what(), {}, "history footer");
  } catch (const json::exception& e) {
    throw FormatError(prefix + e.what(), {}, "history footer");
  }
}

// ---- serialisation --------------------------------------------------------------------------

Json metadata_to_json(const Metadata& md) {
  Json out = Json::object();
  if (md.file) {
    Json file = Json::object();
    if (md.file->tool) file["tool"] = *md.file->tool;
    if (md.file->library_version) file["library_version"] = *md.file->library_version;
    if (md.file->created_at) file["created_at"] = *md.file->created_at;
    out["file"] = std::move(file);
  }
  if (!md.datasets.empty()) {
    Json datasets = Json::object();
    for (const auto& [name, dm] : md.datasets) {  // std::map: names sorted
      Json d = Json::object();
      if (!dm.attrs.empty()) d["attrs"] = dm.attrs;
      if (dm.dim_names) d["dim_names"] = *dm.dim_names;
      if (!dm.coords.empty()) {
        Json coords = Json::object();
        for (const auto& [axis, labels] : dm.coords) coords[axis] = Json{{"labels", labels}};
        d["coords"] = std::move(coords);
      }
      datasets[name] = std::move(d);
    }
    out["datasets"] = std::move(datasets);
  }
  return out;
}

Json history_to_json(const std::vector<HistoryRow>& history) {
  Json rows = Json::array();
  for (const auto& r : history) {
    Json row = Json::object();
    row["op"] = r.op;
    row["source"] = r.source;
    row["at"] = r.at;
    if (!r.parents.empty()) row["parents"] = r.parents;
    if (!r.params.empty()) {
      Json params = Json::object();
      for (const auto& [k, v] : r.params) params[k] = v;
      row["params"] = std::move(params);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string compact(const Json& j) { return codec::json::dump(j, codec::json::DumpOptions{}); }

std::optional<std::string> check_string(std::string_view s, const std::string& where) {
  if (s.empty() || s.size() > MetadataLimits::kStringBytes)
    return where + " has " + std::to_string(s.size()) + " bytes (strings must be 1..1024 bytes)";
  return std::nullopt;
}

}  // namespace

void FooterTail::encode_to(std::byte* out) const noexcept {
  store_le<std::uint64_t>(out, history_json_len);
  store_le<std::uint32_t>(out + 8, history_version);
  std::memcpy(out + 12, "THST", 4);
}

FooterJson parse_footer_json(std::string_view text) {
  static const std::string kPrefix = "history footer JSON is invalid: ";
  const json root = parse_json_or(text, kPrefix);
  try {
    if (!root.is_object()) throw SchemaError{"footer must be a JSON object"};
    FooterJson out;
    if (auto it = root.find("history"); it != root.end()) {
      if (!it->is_array()) throw SchemaError{"history must be an array"};
      for (std::size_t i = 0; i < it->size(); ++i) out.history.push_back(parse_row((*it)[i], i));
    }
    const bool has_md = root.contains("metadata");
    const bool has_ref = root.contains("metadata_ref");
    if (has_md && has_ref) throw SchemaError{"metadata and metadata_ref are mutually exclusive"};
    if (has_md) out.metadata = parse_metadata_value(root.at("metadata"));
    if (has_ref) out.metadata_ref = parse_metadata_ref(root.at("metadata_ref"));
    const bool has_ext = root.contains("tessera");
    if (has_ext && root.contains("tessera_ref")) throw SchemaError{"tessera and tessera_ref are mutually exclusive"};
    if (has_ext) out.extension = parse_footer_extension(root.at("tessera").dump());
    if (root.contains("tessera_ref")) out.extension_ref = parse_ref(root.at("tessera_ref"), "tessera_ref");
    return out;
  } catch (const SchemaError& e) {
    throw FormatError(kPrefix + e.detail, {}, "history footer");
  }
}

Metadata parse_spilled_metadata(std::string_view text) {
  static const std::string kPrefix = "history footer metadata spill JSON is invalid: ";
  const json root = parse_json_or(text, kPrefix);
  try {
    return parse_metadata_value(root);
  } catch (const SchemaError& e) {
    throw FormatError(kPrefix + e.detail, {}, "history footer metadata spill");
  }
}

std::optional<MetadataRef> probe_metadata_ref(std::string_view text) noexcept {
  return probe_ref(text, "metadata_ref");
}

std::optional<MetadataRef> probe_extension_ref(std::string_view text) noexcept {
  return probe_ref(text, "tessera_ref");
}

std::optional<std::string> check_limits(const std::vector<HistoryRow>& history, const Metadata& md) {
  using L = MetadataLimits;
  if (history.size() > L::kHistoryRows) return "history has " + std::to_string(history.size()) + " events (limit 4096)";
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto& r = history[i];
    const std::string where = "history[" + std::to_string(i) + "]";
    if (r.parents.size() > L::kParentsPerRow)
      return where + " has " + std::to_string(r.parents.size()) + " parents (limit 16)";
    if (r.params.size() > L::kParamsPerRow)
      return where + " has " + std::to_string(r.params.size()) + " params (limit 32)";
    for (const auto* s : {&r.op, &r.source, &r.at})
      if (auto e = check_string(*s, where + " field")) return e;
    for (const auto& p : r.parents)
      if (auto e = check_string(p, where + " parent")) return e;
    for (const auto& [k, v] : r.params) {
      if (auto e = check_string(k, where + " param key")) return e;
      if (auto e = check_string(v, where + " param " + k)) return e;
    }
  }
  if (md.file) {
    for (const auto* s : {&md.file->tool, &md.file->library_version, &md.file->created_at})
      if (*s)
        if (auto e = check_string(**s, "metadata.file field")) return e;
  }
  if (md.datasets.size() > L::kDatasets)
    return "metadata has " + std::to_string(md.datasets.size()) + " datasets (limit 256)";
  for (const auto& [name, dm] : md.datasets) {
    const std::string where = "metadata.datasets." + name;
    if (auto e = check_string(name, "metadata dataset name")) return e;
    if (dm.attrs.size() > L::kAttrsPerDataset)
      return where + " has " + std::to_string(dm.attrs.size()) + " attrs (limit 64)";
    for (const auto& [k, v] : dm.attrs) {
      if (auto e = check_string(k, where + " attr key")) return e;
      if (auto e = check_string(v, where + " attr " + k)) return e;
    }
    if (dm.dim_names) {
      if (dm.dim_names->size() > L::kDimNames)
        return where + " has " + std::to_string(dm.dim_names->size()) + " dim_names (limit 8)";
      for (const auto& d : *dm.dim_names)
        if (auto e = check_string(d, where + " dim_name")) return e;
    }
    if (dm.coords.size() > L::kCoordAxes)
      return where + " has " + std::to_string(dm.coords.size()) + " coords axes (limit 8)";
    for (const auto& [axis, labels] : dm.coords) {
      if (auto e = check_string(axis, where + " coords axis key")) return e;
      if (labels.size() > L::kLabelsPerAxis)
        return where + " coords " + axis + " has " + std::to_string(labels.size()) + " labels (limit 64)";
      for (const auto& l : labels)
        if (auto e = check_string(l, where + " coords " + axis + " label")) return e;
    }
  }
  return std::nullopt;
}

std::string serialize_metadata(const Metadata& metadata) { return compact(metadata_to_json(metadata)); }

std::string serialize_footer_json(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                  const std::optional<MetadataRef>& ref) {
  return serialize_footer_json(history, metadata, ref, {}, std::nullopt);
}

std::string serialize_footer_json(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                  const std::optional<MetadataRef>& ref, std::string_view extension_json,
                                  const std::optional<MetadataRef>& extension_ref) {
  Json root = Json::object();
  root["history"] = history_to_json(history);
  if (ref) root["metadata_ref"] = Json{{"offset", ref->offset}, {"len", ref->len}};
  else root["metadata"] = metadata_to_json(metadata);
  std::string out = compact(root);
  if (extension_json.empty() && !extension_ref) return out;
  // The extension is appended as text, so the reference's part stays byte for byte what it is
  // without it.
  out.pop_back();  // the closing brace
  if (extension_ref)
    out += R"(,"tessera_ref":{"offset":)" + std::to_string(extension_ref->offset) + R"(,"len":)" +
           std::to_string(extension_ref->len) + "}}";
  else out += std::string(R"(,"tessera":)") + std::string(extension_json) + "}";
  return out;
}

std::vector<std::byte> encode_footer(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                     std::uint64_t payload_end) {
  return encode_footer(history, metadata, FooterExtension{}, payload_end);
}

std::vector<std::byte> encode_footer(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                     const FooterExtension& extension, std::uint64_t payload_end) {
  if (history.empty() && !metadata.has_content() && extension.empty()) return {};
  if (auto broken = check_limits(history, metadata))
    throw LimitError("history footer metadata exceeds limits: " + *broken, {}, "history footer");
  std::string spill;
  std::string footer = serialize_footer_json(history, metadata, std::nullopt);
  if (footer.size() > MetadataLimits::kInlineFooterBytes) {
    spill = serialize_metadata(metadata);
    if (spill.size() > MetadataLimits::kSpillBytes)
      throw LimitError("history footer metadata exceeds limits: spill of " + std::to_string(spill.size()) +
                           " bytes (limit 16777216)",
                       {}, "history footer");
    footer = serialize_footer_json(history, metadata, MetadataRef{payload_end, spill.size()});
    if (footer.size() > MetadataLimits::kInlineFooterBytes)
      throw LimitError("history footer JSON of " + std::to_string(footer.size()) +
                           " bytes exceeds 65536 even with the metadata spilled",
                       {}, "history footer");
  }
  std::string blob;
  if (!extension.empty()) {
    const std::optional<MetadataRef> ref =
        spill.empty() ? std::nullopt : std::optional<MetadataRef>(MetadataRef{payload_end, spill.size()});
    std::string ext = serialize_footer_extension(extension);
    std::string with_ext = serialize_footer_json(history, metadata, ref, ext, std::nullopt);
    if (with_ext.size() > MetadataLimits::kInlineFooterBytes) {
      if (ext.size() > FooterExtensionLimits::kBlobBytes)
        throw LimitError("history footer tessera extension of " + std::to_string(ext.size()) +
                             " bytes exceeds its limit of 268435456",
                         {}, "history footer");
      blob = std::move(ext);
      const std::optional<MetadataRef> moved =
          ref ? std::optional<MetadataRef>(MetadataRef{payload_end + blob.size(), ref->len}) : std::nullopt;
      with_ext = serialize_footer_json(history, metadata, moved, {}, MetadataRef{payload_end, blob.size()});
      if (with_ext.size() > MetadataLimits::kInlineFooterBytes)
        throw LimitError("history footer JSON of " + std::to_string(with_ext.size()) +
                             " bytes exceeds 65536 even with the metadata and extension spilled",
                         {}, "history footer");
    }
    footer = std::move(with_ext);
  }
  std::vector<std::byte> out(blob.size() + spill.size() + footer.size() + FooterTail::kSize);
  std::byte* at = out.data();
  for (const std::string* part : {&blob, &spill, &footer}) {
    std::memcpy(at, part->data(), part->size());
    at += part->size();
  }
  FooterTail{footer.size(), 1}.encode_to(at);
  return out;
}

}  // namespace tessera::tet
