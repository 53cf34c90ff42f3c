// Walking a Zarr v3 hierarchy: every node (group or array) reachable from a root through groups,
// found by its `zarr.json`. Used by whole-store tools (info, verify, content hashes) — the readers
// themselves open arrays by name and never enumerate.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace tessera::zarr {

struct Node {
  std::string path;  // store key of the node ("" for the store root)
  bool is_array = false;
  codec::json::Json document;  // the zarr.json as stored, already accepted by decode_node
};

// The nodes below `root` (the root itself first when it has a zarr.json), parents before children,
// siblings in key order. Children are the sub-prefixes holding a zarr.json; an array's own prefix
// is not searched (its chunk keys live there). FormatError / UnsupportedError as decode_node when a
// zarr.json does not decode — unless `on_error` is given: then a node that does not decode is
// reported to it (with its zarr.json key) and skipped, and the walk goes on.
using NodeErrorSink = std::function<void(const std::string& key, const Error& error)>;
std::vector<Node> walk_nodes(const io::Store& store, std::string_view root = "", const NodeErrorSink& on_error = {});

}  // namespace tessera::zarr
