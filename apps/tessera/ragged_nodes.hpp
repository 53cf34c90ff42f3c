// The leaves of a morton-hive tree for `tessera ragged info --list-leaves` (spec §4.7's walk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/io/store.hpp"

namespace tessera::cli::ragged_cli {

struct Leaf {
  std::string path;                    // key of the leaf directory below the hive root
  std::optional<std::uint64_t> shard;  // the shard its basename names
  bool committed = false;              // carries a stamp with complete: true
};

// The leaves of a hive root (spec §4.7 step 4): sign+base children of the root, then digit
// children 1–4; `*.zarr` entries are leaves except `*.pyramid.zarr` columns and stores whose root
// attributes carry `role`.
std::vector<Leaf> find_leaves(const io::Store& hive_root);

}  // namespace tessera::cli::ragged_cli
