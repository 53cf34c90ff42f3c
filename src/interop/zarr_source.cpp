// Zarr v3 directory stores as a convert input, read through tessera's own zarr module: every data
// type and codec chain it reads (bytes, zstd, crc32c, sharding_indexed), missing chunks as the
// fill value (A5). Nodes are walked from the root: a group's children are its subdirectories that
// hold a `zarr.json`, sorted byte-wise. Arrays of data types the converter cannot import
// (variable-length bytes, types the zarr module does not know), 0-d and empty arrays are skipped;
// anything else the zarr module refuses (codec chains above all) fails the conversion, naming the
// array.
#include <algorithm>
#include <filesystem>

#include "import_metadata.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/source.hpp"
#include "tessera/io/store.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/zarr/array.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::interop {
namespace {

namespace json = codec::json;

// Rethrows a zarr module error with the input path and the array in front, keeping its type.
template <typename F>
decltype(auto) naming_array(const std::string& path, const std::string& array, F&& f) {
  auto prefix = [&](const Error& e) { return path + ": array \"" + array + "\": " + e.what(); };
  try {
    return f();
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(prefix(e), path, array);
  } catch (const LimitError& e) {
    throw LimitError(prefix(e), path, array);
  } catch (const IoError& e) {
    throw IoError(prefix(e), path, array);
  } catch (const UsageError& e) {
    throw UsageError(prefix(e), path, array);
  } catch (const Error& e) {
    throw FormatError(prefix(e), path, array);
  }
}

std::optional<std::string> json_attr_text(const json::Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return detail::attribute_number_text(v.get<double>());
  return std::nullopt;  // null, arrays and objects are not imported
}

// A JSON attribute as zarr-python gives it: strings, bools, integers (int64, or uint64 beyond
// it), floats (float64) and flat lists of one of those kinds; null, objects and nested or mixed
// lists are not imported.
std::optional<tet::AttributeValue> typed_json_attribute(const json::Json& v) {
  const bool scalar = !v.is_array();
  const json::Json items = scalar ? json::Json::array({v}) : v;
  if (items.empty()) return std::nullopt;
  auto all = [&](auto&& test) { return std::all_of(items.begin(), items.end(), test); };
  if (all([](const json::Json& x) { return x.is_string(); })) {
    tet::AttributeValue out = tet::AttributeValue::string({});
    out.text.clear();
    for (const auto& x : items) out.text.push_back(x.get<std::string>());
    out.scalar = scalar;
    return out;
  }
  if (all([](const json::Json& x) { return x.is_boolean(); })) {
    std::vector<std::int64_t> values;
    for (const auto& x : items) values.push_back(x.get<bool>() ? 1 : 0);
    return tet::AttributeValue::signed_integer("bool", std::move(values), scalar);
  }
  if (all([](const json::Json& x) {
        return x.is_number_integer() && (!x.is_number_unsigned() || x.get<std::uint64_t>() <= INT64_MAX);
      })) {
    std::vector<std::int64_t> values;
    for (const auto& x : items) values.push_back(x.get<std::int64_t>());
    return tet::AttributeValue::signed_integer("int64", std::move(values), scalar);
  }
  if (all([](const json::Json& x) { return x.is_number_unsigned(); })) {
    std::vector<std::uint64_t> values;
    for (const auto& x : items) values.push_back(x.get<std::uint64_t>());
    return tet::AttributeValue::unsigned_integer("uint64", std::move(values), scalar);
  }
  if (all([](const json::Json& x) { return x.is_number(); })) {
    std::vector<double> values;
    for (const auto& x : items) values.push_back(x.get<double>());
    return tet::AttributeValue::real("float64", std::move(values), scalar);
  }
  return std::nullopt;
}

class ZarrSource final : public ArraySource {
 public:
  explicit ZarrSource(std::string path) : path_(std::move(path)), store_(path_) { walk(""); }

  const std::string& path() const override { return path_; }
  const std::vector<SourceArray>& arrays() const override { return arrays_; }

  void read(std::size_t index, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::byte> out) const override {
    zarr::Box box;
    for (std::size_t d = 0; d < origin.size(); ++d) box.push_back({origin[d], origin[d] + extent[d]});
    const auto values = naming_array(path_, arrays_[index].name, [&] { return readers_[index].read_box(box); });
    if (values.size() != out.size())
      throw FormatError(path_ + ": array \"" + arrays_[index].name + "\": read " + std::to_string(values.size()) +
                            " bytes, expected " + std::to_string(out.size()),
                        path_, arrays_[index].name);
    std::copy(values.begin(), values.end(), out.begin());
  }

 private:
  void walk(const std::string& node) {
    const std::string key = io::join_key(node, zarr::kMetadataName);
    const auto bytes = store_.get(key);
    if (!bytes) throw FormatError(path_ + ": " + key + ": missing", path_, key);
    const std::string name = node.empty() ? root_array_name() : node;
    const auto doc = naming_array(path_, name, [&] {
      return json::parse_strict(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), key);
    });
    const auto node_type = doc.is_object() ? doc.find("node_type") : doc.end();
    if (node_type != doc.end() && *node_type == "group") {
      for (const std::string& child : store_.list_dir(node).prefixes) {  // sorted
        const std::string child_node = io::join_key(node, child);
        if (store_.exists(io::join_key(child_node, zarr::kMetadataName))) walk(child_node);
      }
      return;
    }
    if (importable(doc, key)) add_array(name, node, *bytes, key);
  }

  // The directory's stem names an array stored at the root of the store ("t.zarr" → "t").
  std::string root_array_name() const {
    std::filesystem::path p(path_);
    if (!p.has_filename()) p = p.parent_path();
    std::string stem = p.stem().string();
    return stem.empty() ? std::string("array") : stem;
  }

  // Arrays the converter skips silently: no shape or zero extents, rank above 8, data types it
  // cannot import. Everything else goes to the zarr module, whose refusals are errors.
  static bool importable(const json::Json& doc, const std::string& key) {
    if (!doc.is_object()) return true;  // let decode_array say what is wrong
    const auto shape = doc.find("shape");
    if (shape != doc.end() && shape->is_array()) {
      if (shape->empty() || shape->size() > tet::kMaxRank) return false;
      for (const auto& extent : *shape)
        if (extent == 0) return false;
    }
    const auto data_type = doc.find("data_type");
    if (data_type == doc.end()) return true;
    try {
      return !zarr::decode_data_type(*data_type, key).vlen;
    } catch (const UnsupportedError&) {
      return false;
    } catch (const Error&) {
      return true;  // malformed: decode_array reports it
    }
  }

  void add_array(const std::string& name, const std::string& node, const std::vector<std::byte>& bytes,
                 const std::string& key) {
    if (!detail::valid_footer_string(name)) return;
    zarr::Array reader =
        naming_array(path_, name, [&] { return zarr::Array(store_, node, zarr::decode_array(bytes, key)); });
    const zarr::ArrayMeta& meta = reader.meta();
    SourceArray array;
    array.name = name;
    array.stored = meta.data_type.dtype;
    array.shape = meta.shape;
    array.chunk_shape = reader.read_chunk_shape();
    if (meta.attributes.is_object()) {
      std::vector<std::string> names;
      for (const auto& item : meta.attributes.items()) names.push_back(item.key());
      array.metadata.attrs =
          detail::collect_attrs(names, [&](const std::string& n) { return json_attr_text(meta.attributes.at(n)); });
      for (const auto& item : meta.attributes.items())
        if (auto value = typed_json_attribute(item.value())) array.extension.attrs.emplace_back(item.key(), *value);
    }
    if (meta.dimension_names) {
      std::vector<std::string> dims;
      for (const auto& d : *meta.dimension_names)
        if (d) dims.push_back(*d);
      if (dims.size() == meta.shape.size()) array.metadata.dim_names = detail::limited_dim_names(std::move(dims));
    }
    arrays_.push_back(std::move(array));
    readers_.push_back(std::move(reader));
  }

  std::string path_;
  io::DirectoryStore store_;  // outlives the readers, which point to it
  std::vector<SourceArray> arrays_;
  std::vector<zarr::Array> readers_;
};

}  // namespace

std::unique_ptr<ArraySource> open_zarr_source(const std::string& path) { return std::make_unique<ZarrSource>(path); }

}  // namespace tessera::interop
