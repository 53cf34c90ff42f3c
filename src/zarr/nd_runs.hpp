// Internal: walking an N-d box in C order as contiguous runs along the last axis, so copies
// between a chunk buffer, a box buffer and a shard buffer are one memcpy per run.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::zarr::detail {

// Calls fn(src_index, dst_index, run) for each run of a box of `extent` elements placed at
// `src_origin` in a C-order buffer of shape `src_shape` and at `dst_origin` in one of shape
// `dst_shape`; indices are flat element indices. Nothing is called for an empty box.
template <typename F>
void for_each_run(std::span<const std::uint64_t> extent, std::span<const std::uint64_t> src_origin,
                  std::span<const std::uint64_t> src_shape, std::span<const std::uint64_t> dst_origin,
                  std::span<const std::uint64_t> dst_shape, F&& fn) {
  const std::size_t rank = extent.size();
  for (const auto e : extent)
    if (e == 0) return;
  std::vector<std::uint64_t> idx(rank, 0);
  const std::uint64_t run = extent[rank - 1];
  while (true) {
    std::uint64_t src = 0, dst = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      src = src * src_shape[d] + src_origin[d] + idx[d];
      dst = dst * dst_shape[d] + dst_origin[d] + idx[d];
    }
    fn(src, dst, run);
    std::size_t d = rank - 1;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace tessera::zarr::detail
