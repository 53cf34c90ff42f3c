// How a distributed build splits its rows between tasks (docs/distributed.md): every row is
// geocoded to its shard, and the occupied shards, in ascending NESTED order, are cut into
// contiguous runs of about equal rows. A leaf depends only on its own rows in their input order,
// so each run can be built by a task of its own and give the single build's leaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/ragged/geocode.hpp"

namespace tessera::ragged {

struct ShardPartitions {
  std::vector<std::uint64_t> occupied;  // NESTED ids at the shard order of the shards with rows, ascending
  std::vector<std::uint16_t> part;      // each row's partition
  std::vector<std::size_t> sizes;       // rows per partition (none empty, unless there are no rows)
  std::size_t refused = 0;              // rows the build refuses (non-finite, |lat| > 90): in the last partition
};

inline constexpr std::size_t kMaxPartitions = 1u << 15;

// At most `partitions` (1..kMaxPartitions) runs of shards at `shard_order`; fewer when fewer
// shards are occupied. Geocodes in parallel in the caller's TBB arena.
ShardPartitions partition_by_shard(std::span<const double> lat, std::span<const double> lon, int shard_order,
                                   geo::Latitude convention, std::size_t partitions);

// The first group of each run when groups that start at `group_starts` (ascending row offsets
// into `n_rows` rows) are cut into at most `partitions` runs of about equal rows.
std::vector<std::size_t> cut_into_runs(std::span<const std::size_t> group_starts, std::size_t n_rows,
                                       std::size_t partitions);

}  // namespace tessera::ragged
