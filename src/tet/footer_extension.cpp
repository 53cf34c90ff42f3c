// The tessera footer extension's JSON: typed attributes, the applied CF encoding and chunk
// CRC-32C (docs/tet-footer-extension.md).
#include "tessera/tet/footer_extension.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;
using nlohmann::json;

constexpr std::uint64_t kVersion = 1;

struct Invalid {
  std::string detail;
};

struct IntegerRange {
  std::string_view type;
  bool is_signed;
  std::int64_t min;
  std::uint64_t max;
};
constexpr IntegerRange kIntegerTypes[] = {
    {"bool", true, 0, 1},
    {"int8", true, INT8_MIN, INT8_MAX},
    {"int16", true, INT16_MIN, INT16_MAX},
    {"int32", true, INT32_MIN, INT32_MAX},
    {"int64", true, INT64_MIN, INT64_MAX},
    {"uint8", false, 0, UINT8_MAX},
    {"uint16", false, 0, UINT16_MAX},
    {"uint32", false, 0, UINT32_MAX},
    {"uint64", false, 0, UINT64_MAX},
};

// Whether a JSON integer lies in the type's range, compared without a round trip through double.
bool fits(const json& item, const IntegerRange& range) {
  if (item.is_number_unsigned()) return item.get<std::uint64_t>() <= range.max;
  return item.is_number_integer() && item.get<std::int64_t>() >= range.min;
}

const IntegerRange* integer_type(std::string_view type) {
  for (const auto& t : kIntegerTypes)
    if (t.type == type) return &t;
  return nullptr;
}

bool real_type(std::string_view type) { return type == "float32" || type == "float64"; }

// ---- serialisation --------------------------------------------------------------------------

Json real_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

template <typename T, typename F>
Json values_json(const std::vector<T>& values, bool scalar, F&& one) {
  if (scalar && values.size() == 1) return one(values[0]);
  Json out = Json::array();
  for (const T& v : values) out.push_back(one(v));
  return out;
}

Json value_json(const AttributeValue& v) {
  if (v.type == "str" && v.scalar && v.text.size() == 1) return v.text[0];
  Json out = Json::object();
  out["type"] = v.type;
  if (v.type == "str") out["value"] = values_json(v.text, v.scalar, [](const std::string& s) { return Json(s); });
  else if (real_type(v.type)) out["value"] = values_json(v.real_values, v.scalar, real_json);
  else if (!v.unsigned_values.empty())
    out["value"] = values_json(v.unsigned_values, v.scalar, [](std::uint64_t x) { return Json(x); });
  else out["value"] = values_json(v.signed_values, v.scalar, [](std::int64_t x) { return Json(x); });
  return out;
}

Json attrs_json(const TypedAttributes& attrs) {
  Json out = Json::array();
  for (const auto& [name, value] : attrs) out.push_back(Json::array({name, value_json(value)}));
  return out;
}

// ---- parsing ---------------------------------------------------------------------------------

double parse_real(const json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw Invalid{where + " must be a number, \"NaN\", \"inf\" or \"-inf\""};
}

AttributeValue parse_value(const json& v, const std::string& where) {
  if (v.is_string()) return AttributeValue::string(v.get<std::string>());
  if (!v.is_object() || !v.contains("type") || !v.contains("value") || !v.at("type").is_string())
    throw Invalid{where + " must be a string or {\"type\", \"value\"}"};
  AttributeValue out;
  out.type = v.at("type").get<std::string>();
  const json& raw = v.at("value");
  out.scalar = !raw.is_array();
  const json items = out.scalar ? json::array({raw}) : raw;
  if (items.size() > FooterExtensionLimits::kValuesPerAttr)
    throw Invalid{where + " has " + std::to_string(items.size()) + " values (limit 1048576)"};
  const IntegerRange* integer = integer_type(out.type);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const json& item = items[i];
    const std::string at = where + (out.scalar ? "" : "[" + std::to_string(i) + "]");
    if (out.type == "str") {
      if (!item.is_string()) throw Invalid{at + " must be a string"};
      out.text.push_back(item.get<std::string>());
    } else if (real_type(out.type)) {
      out.real_values.push_back(parse_real(item, at));
    } else if (integer) {
      if (!fits(item, *integer)) throw Invalid{at + " must be an integer within " + std::string(out.type)};
      if (integer->is_signed) out.signed_values.push_back(item.get<std::int64_t>());
      else out.unsigned_values.push_back(item.get<std::uint64_t>());
    } else {
      throw Invalid{where + ": unknown type `" + out.type + "`"};
    }
  }
  return out;
}

TypedAttributes parse_attrs(const json& v, const std::string& where) {
  if (!v.is_array()) throw Invalid{where + " must be an array of [name, value] pairs"};
  if (v.size() > FooterExtensionLimits::kAttrs)
    throw Invalid{where + " has " + std::to_string(v.size()) + " attributes (limit 4096)"};
  TypedAttributes out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& pair = v[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string())
      throw Invalid{at + " must be a [name, value] pair"};
    out.emplace_back(pair[0].get<std::string>(), parse_value(pair[1], at + "." + pair[0].get<std::string>()));
  }
  return out;
}

DatasetExtension parse_dataset(const json& v, const std::string& where) {
  if (!v.is_object()) throw Invalid{where + " must be an object"};
  DatasetExtension out;
  if (auto it = v.find("attrs"); it != v.end()) out.attrs = parse_attrs(*it, where + ".attrs");
  if (auto it = v.find("source_dtype"); it != v.end()) {
    if (!it->is_string()) throw Invalid{where + ".source_dtype must be a string"};
    out.source_dtype = it->get<std::string>();
  }
  if (auto it = v.find("applied"); it != v.end()) {
    if (!it->is_array()) throw Invalid{where + ".applied must be an array"};
    for (const json& name : *it) {
      bool known = false;
      for (const auto cf : kCfEncodingAttributes) known = known || (name.is_string() && name.get<std::string>() == cf);
      if (!known) throw Invalid{where + ".applied names only _FillValue, missing_value, scale_factor, add_offset"};
      out.applied.push_back(name.get<std::string>());
    }
  }
  return out;
}

}  // namespace

AttributeValue AttributeValue::string(std::string s) {
  AttributeValue v;
  v.text.push_back(std::move(s));
  return v;
}

namespace {

// A numeric value whose elements go into `member`; one element given as a scalar stays a scalar.
template <typename T>
AttributeValue numeric(std::string type, std::vector<T> values, bool scalar, std::vector<T> AttributeValue::*member) {
  AttributeValue v;
  v.type = std::move(type);
  v.scalar = scalar && values.size() == 1;
  v.*member = std::move(values);
  return v;
}

}  // namespace

AttributeValue AttributeValue::real(std::string type, std::vector<double> values, bool scalar) {
  return numeric(std::move(type), std::move(values), scalar, &AttributeValue::real_values);
}

AttributeValue AttributeValue::signed_integer(std::string type, std::vector<std::int64_t> values, bool scalar) {
  return numeric(std::move(type), std::move(values), scalar, &AttributeValue::signed_values);
}

AttributeValue AttributeValue::unsigned_integer(std::string type, std::vector<std::uint64_t> values, bool scalar) {
  return numeric(std::move(type), std::move(values), scalar, &AttributeValue::unsigned_values);
}

std::size_t AttributeValue::size() const noexcept {
  return text.size() + signed_values.size() + unsigned_values.size() + real_values.size();
}

std::vector<double> AttributeValue::numbers() const {
  std::vector<double> out(real_values);
  for (const auto x : signed_values) out.push_back(static_cast<double>(x));
  for (const auto x : unsigned_values) out.push_back(static_cast<double>(x));
  return out;
}

std::string serialize_footer_extension(const FooterExtension& ext) {
  Json root = Json::object();
  root["version"] = kVersion;
  if (!ext.attrs.empty()) root["attrs"] = attrs_json(ext.attrs);
  if (!ext.datasets.empty()) {
    Json datasets = Json::object();
    for (const auto& [name, d] : ext.datasets) {
      Json entry = Json::object();
      if (!d.attrs.empty()) entry["attrs"] = attrs_json(d.attrs);
      if (!d.source_dtype.empty()) entry["source_dtype"] = d.source_dtype;
      if (!d.applied.empty()) entry["applied"] = d.applied;
      datasets[name] = std::move(entry);
    }
    root["datasets"] = std::move(datasets);
  }
  if (!ext.chunk_crc32c.empty()) root["chunk_crc32c"] = ext.chunk_crc32c;
  return codec::json::dump(root, codec::json::DumpOptions{});
}

std::optional<FooterExtension> parse_footer_extension(std::string_view text) {
  static const std::string kPrefix = "history footer tessera extension is invalid: ";
  try {
    codec::json::check_nesting(text, "history footer");
    const json root = json::parse(text.begin(), text.end());
    if (!root.is_object()) throw Invalid{"must be a JSON object"};
    const auto version = root.find("version");
    if (version == root.end() || !version->is_number_unsigned()) throw Invalid{"version must be a positive integer"};
    if (version->get<std::uint64_t>() != kVersion) return std::nullopt;
    FooterExtension out;
    if (auto it = root.find("attrs"); it != root.end()) out.attrs = parse_attrs(*it, "attrs");
    if (auto it = root.find("datasets"); it != root.end()) {
      if (!it->is_object()) throw Invalid{"datasets must be an object"};
      for (const auto& [name, d] : it->items()) out.datasets[name] = parse_dataset(d, "datasets." + name);
    }
    if (auto it = root.find("chunk_crc32c"); it != root.end()) {
      if (!it->is_array()) throw Invalid{"chunk_crc32c must be an array"};
      out.chunk_crc32c.reserve(it->size());
      for (const json& c : *it) {
        if (!c.is_number_unsigned() || c.get<std::uint64_t>() > 0xffffffffu)
          throw Invalid{"chunk_crc32c entries must be 32-bit unsigned integers"};
        out.chunk_crc32c.push_back(static_cast<std::uint32_t>(c.get<std::uint64_t>()));
      }
    }
    return out;
  } catch (const Invalid& e) {
    throw FormatError(kPrefix + e.detail, {}, "history footer");
  } catch (const LimitError& e) {
    throw FormatError(kPrefix + e.what(), {}, "history footer");
  } catch (const json::exception& e) {
    throw FormatError(kPrefix + e.what(), {}, "history footer");
  }
}

}  // namespace tessera::tet
