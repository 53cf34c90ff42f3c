// A synthetic morton-hive store with one zagg-ragged leaf, for demos and benchmarks (a tessera
// addition; real stores come from zagg or the leaf writer). Deterministic for a given seed on
// every platform: the generator uses its own integer hash, never the standard distributions.
//
// The leaf holds `{cell_order}/{field}` (vlen t-digests, float32 [-1, 2], integer weights) and
// `{cell_order}/morton` (every cell's word), sharded as zagg writes them: one shard spanning the
// leaf, inner chunks of 4^(cell_order − chunk_order) cells, vlen-bytes + zstd level 3, CRC-32C
// index. Cells are populated inside three round "swaths" (so a heatmap shows shapes), with a
// probability proportional to the closeness to a swath centre and scaled so that about
// `populated_fraction` of all cells hold a digest; each digest's values centre on a smooth field
// of (x, y), so tensors and heatmaps show gradients.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/io/store.hpp"

namespace tessera::ragged {

struct SynthLeafOptions {
  int cell_order = 19;
  int shard_order = 9;
  int chunk_order = 13;             // inner chunks of 4^(cell_order − chunk_order) cells
  double populated_fraction = 0.2;  // mean fraction of cells holding a digest
  std::uint32_t min_centroids = 10;
  std::uint32_t max_centroids = 500;
  std::uint64_t seed = 1;
  std::string field = "h_tdigest";
  std::string shard_decimal = "4331421321";  // must have shard_order digits after the base digit
  // Also write the commit stamp a writer's commit writes (spec §4.3): a `coverage.moc` bitmap of
  // the populated cells, so readers take the exact-occupancy path as on a real leaf. Off by
  // default: an unstamped leaf is not a committed leaf (`ragged.leaves` skips it).
  bool stamp = false;
};

struct SynthLeafReport {
  std::string leaf_key;         // the leaf's key below the hive root
  std::uint64_t shard = 0;      // the shard word
  std::uint64_t cells = 0;      // cells on the leaf's axis
  std::uint64_t populated = 0;  // cells holding a digest
  std::uint64_t centroids = 0;
};

// Writes `morton_hive.json` and the leaf into `hive_root` (existing leaf objects are replaced).
// UsageError for inconsistent orders (shard < chunk ≤ cell ≤ 29, depth cell − shard ≤ 13) or
// fractions outside [0, 0.5].
SynthLeafReport synth_hive(io::Store& hive_root, const SynthLeafOptions& options);

}  // namespace tessera::ragged
