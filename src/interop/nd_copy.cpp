// N-d box copies between C-order buffers (see nd_copy.hpp).
#include "nd_copy.hpp"

#include <cstring>
#include <vector>

namespace tessera::interop::detail {

void copy_box(const std::byte* src, std::span<const std::uint64_t> src_shape, std::span<const std::uint64_t> src_origin,
              std::byte* dst, std::span<const std::uint64_t> dst_shape, std::span<const std::uint64_t> dst_origin,
              std::span<const std::uint64_t> extent, std::size_t element_size) {
  const std::size_t rank = extent.size();
  for (const auto e : extent)
    if (e == 0) return;
  // Merge trailing axes that the box covers whole in both buffers: they form one run.
  std::size_t outer = rank;  // axes [0, outer) are walked; [outer - 1, rank) form the run
  std::uint64_t run = 1;
  while (outer > 0) {
    const std::size_t d = outer - 1;
    run *= extent[d];
    const bool whole = extent[d] == src_shape[d] && extent[d] == dst_shape[d];
    if (!whole || d == 0) break;
    --outer;
  }
  const std::size_t walked = outer - 1;  // axes [0, walked) are iterated, axis `walked` starts the run
  const std::size_t run_bytes = static_cast<std::size_t>(run) * element_size;
  // Element strides of both buffers.
  std::vector<std::uint64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (std::size_t d = rank - 1; d-- > 0;) {
    src_stride[d] = src_stride[d + 1] * src_shape[d + 1];
    dst_stride[d] = dst_stride[d + 1] * dst_shape[d + 1];
  }
  std::uint64_t src_base = 0, dst_base = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    src_base += src_origin[d] * src_stride[d];
    dst_base += dst_origin[d] * dst_stride[d];
  }
  std::vector<std::uint64_t> idx(walked, 0);
  while (true) {
    std::uint64_t s = src_base, t = dst_base;
    for (std::size_t d = 0; d < walked; ++d) {
      s += idx[d] * src_stride[d];
      t += idx[d] * dst_stride[d];
    }
    std::memcpy(dst + t * element_size, src + s * element_size, run_bytes);
    std::size_t d = walked;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace tessera::interop::detail
