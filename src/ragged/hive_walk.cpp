#include "tessera/ragged/hive_walk.hpp"

#include <functional>

#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged::hive {
namespace {

bool is_base_component(const std::string& name) {
  const std::string digits = name.starts_with("-") ? name.substr(1) : name;
  return digits.size() == 1 && digits[0] >= '1' && digits[0] <= '6';
}

bool is_digit_component(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (c < '1' || c > '4') return false;
  return true;
}

// The attributes of the leaf's root group (empty when it has no zarr.json).
codec::json::Json root_attributes(const io::Store& store, const std::string& leaf) {
  const std::string key = io::join_key(leaf, zarr::kMetadataName);
  const auto bytes = store.get(key);
  if (!bytes) return codec::json::Json::object();
  return zarr::decode_group(*bytes, key).attributes;
}

}  // namespace

std::vector<WalkedLeaf> find_leaves(const io::Store& hive_root) {
  std::vector<WalkedLeaf> leaves;
  std::function<void(const std::string&)> visit = [&](const std::string& path) {
    for (const auto& child : hive_root.list_dir(path).prefixes) {
      const std::string key = io::join_key(path, child);
      if (child.ends_with(".zarr")) {
        if (path.empty() || child.ends_with(".pyramid.zarr")) continue;  // leaves sit below the base
        WalkedLeaf leaf{key, shard_of_basename(child), false};
        try {
          const auto attributes = root_attributes(hive_root, key);
          if (attributes.contains("role")) continue;
          if (attributes.contains("morton_hive_commit") && attributes.at("morton_hive_commit").is_object())
            leaf.committed =
                parse_commit_stamp(attributes.at("morton_hive_commit"), io::join_key(key, "zarr.json")).complete;
        } catch (const Error&) {
          // A leaf whose root zarr.json or stamp does not parse is still a leaf (uncommitted):
          // verify reports what is wrong with it instead of the walk stopping there.
        }
        leaves.push_back(std::move(leaf));
      } else if (path.empty() ? is_base_component(child) : is_digit_component(child)) {
        visit(key);
      }
    }
  };
  visit("");
  return leaves;
}

}  // namespace tessera::ragged::hive
