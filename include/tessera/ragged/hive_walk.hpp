// Finding the leaves of a morton-hive tree by walking it (spec zagg-ragged.md §4.7 step 4), for
// stores without a usable root coverage MOC and for `ragged info --list-leaves`. The one walk:
// the CLI and the Python package (`tessera.ragged.leaves(method="walk")`) both call it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/io/store.hpp"

namespace tessera::ragged::hive {

struct WalkedLeaf {
  std::string path;                    // key of the leaf directory below the hive root
  std::optional<std::uint64_t> shard;  // the shard its basename names
  bool committed = false;              // its root group carries a stamp with complete: true
};

// Sign+base children of the root (`1`…`6`, `-1`…`-6`), then digit children of any length made of
// 1–4 (one directory per `path_grouping` digits); `*.zarr` entries are leaves except
// `*.pyramid.zarr` columns and stores whose root attributes carry `role`. A leaf whose root
// `zarr.json` or stamp cannot be parsed is listed, uncommitted. In listing order.
std::vector<WalkedLeaf> find_leaves(const io::Store& hive_root);

}  // namespace tessera::ragged::hive
