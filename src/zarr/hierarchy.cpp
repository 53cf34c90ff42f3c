#include "tessera/zarr/hierarchy.hpp"

#include <optional>

#include "tessera/zarr/metadata.hpp"

namespace tessera::zarr {
namespace {

std::optional<codec::json::Json> read_node(const io::Store& store, const std::string& path,
                                           const NodeErrorSink& on_error) {
  const std::string key = io::join_key(path, kMetadataName);
  const auto bytes = store.get(key);
  if (!bytes) return std::nullopt;
  try {
    (void)decode_node(*bytes, key);  // refuses exactly what the readers would refuse
    return codec::json::parse_strict(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                                     key);
  } catch (const Error& e) {
    if (!on_error) throw;
    on_error(key, e);
    return std::nullopt;
  }
}

void walk(const io::Store& store, const std::string& path, std::vector<Node>& out, const NodeErrorSink& on_error) {
  for (const auto& child : store.list_dir(path).prefixes) {
    const std::string key = io::join_key(path, child);
    auto doc = read_node(store, key, on_error);
    if (!doc) continue;
    const bool is_array = doc->value("node_type", "") == "array";
    out.push_back({key, is_array, std::move(*doc)});
    if (!is_array) walk(store, key, out, on_error);
  }
}

}  // namespace

std::vector<Node> walk_nodes(const io::Store& store, std::string_view root, const NodeErrorSink& on_error) {
  std::vector<Node> out;
  const std::string start(root);
  if (auto node = read_node(store, start, on_error)) {
    const bool is_array = node->value("node_type", "") == "array";
    out.push_back({start, is_array, std::move(*node)});
    if (is_array) return out;
  }
  walk(store, start, out, on_error);
  return out;
}

}  // namespace tessera::zarr
