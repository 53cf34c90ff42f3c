// Whole-store verification of a Zarr v3 / zagg-ragged store (spec zagg-ragged.md §8.6), in the
// spec's order: metadata of every node; every shard index and every chunk decode (framing
// included); ragged gates and companion alignment; `morton` placement and nesting; the commit
// stamp and its coverage envelope. Every failure is one finding naming the object and the rule;
// verification goes on after a failure so one run lists everything that is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/io/store.hpp"

namespace tessera::ragged {

struct StoreFinding {
  std::string object;   // store key of the node, object or array the rule is about
  std::string rule;     // metadata | chunk | ragged | alignment | morton | stamp | coverage
  std::string message;  // what is wrong
};

struct StoreVerifyReport {
  std::uint64_t nodes = 0;  // zarr.json documents read
  std::uint64_t arrays = 0;
  std::uint64_t objects = 0;        // stored objects read whole
  std::uint64_t chunks = 0;         // read chunks decoded
  std::uint64_t ragged_fields = 0;  // payload arrays opened with their companions
  std::uint64_t populated_cells = 0;
  std::vector<StoreFinding> failures;
  bool ok() const noexcept { return failures.empty(); }
};

// Reads every stored object of every array once. Never throws for problems in the store (they
// become findings); throws IoError only when the store itself cannot be listed.
StoreVerifyReport verify_store(const io::Store& store);

}  // namespace tessera::ragged
