// Listing a leaf's ragged fields (include/tessera/ragged/leaf_fields.hpp).
#include "tessera/ragged/leaf_fields.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged {
namespace {

bool is_numeric(std::string_view name) {
  if (name.starts_with("-")) name.remove_prefix(1);
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<std::string> payload_fields(const io::Store& leaf) {
  std::vector<std::string> ragged;
  std::set<std::string> bound;
  for (const std::string& group : leaf.list_dir("").prefixes) {
    for (const std::string& array : leaf.list_dir(group).prefixes) {
      const std::string path = io::join_key(group, array);
      const auto bytes = leaf.get(io::join_key(path, zarr::kMetadataName));
      if (!bytes) continue;
      codec::json::Json meta;
      try {
        meta = codec::json::parse_strict(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                                         path);
      } catch (const FormatError&) {
        continue;
      }
      if (!meta.is_object() || meta.value("node_type", "") != "array") continue;
      const auto attrs = meta.find("attributes");
      if (attrs == meta.end() || !attrs->is_object()) continue;
      const auto block = attrs->find("ragged");
      if (block == attrs->end() || !block->is_object()) continue;
      ragged.push_back(path);
      if (const auto loc = block->find("locations"); loc != block->end() && loc->is_string())
        bound.insert(io::join_key(group, loc->get<std::string>()));
      if (const auto times = attrs->find("times"); times != attrs->end() && times->is_string())
        bound.insert(io::join_key(group, times->get<std::string>()));
    }
  }
  std::erase_if(ragged, [&](const std::string& p) { return bound.contains(p); });
  return ragged;
}

std::string resolve_field(const io::Store& leaf, const std::string& field) {
  if (field.find('/') != std::string::npos) return field;
  std::vector<std::string> found;
  for (const std::string& group : leaf.list_dir("").prefixes)
    if (is_numeric(group) && leaf.exists(io::join_key(io::join_key(group, field), zarr::kMetadataName)))
      found.push_back(group);
  if (found.size() != 1) {
    std::string where = "no numeric group";
    if (!found.empty()) {
      where = "groups [";
      for (std::size_t i = 0; i < found.size(); ++i) where += (i ? ", '" : "'") + found[i] + "'";
      where += "]";
    }
    throw UsageError(
        leaf.name() + ": field '" + field + "' is in " + where + "; give the array path (e.g. '6/" + field + "')",
        leaf.name());
  }
  return found[0] + "/" + field;
}

}  // namespace tessera::ragged
