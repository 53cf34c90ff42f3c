// Internal to interop: copying an N-d box between two C-order buffers of different shapes, one
// memcpy per contiguous run (trailing axes that both buffers hold whole are merged into one run).
// The converter scatters tiles into chunk-row slabs with it; export pads edge tiles with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::interop::detail {

// Copies the box of `extent` elements at `src_origin` in `src` (shape `src_shape`) to
// `dst_origin` in `dst` (shape `dst_shape`). All spans have the same rank (≥ 1); the box must lie
// inside both shapes. Nothing is copied for an empty box.
void copy_box(const std::byte* src, std::span<const std::uint64_t> src_shape, std::span<const std::uint64_t> src_origin,
              std::byte* dst, std::span<const std::uint64_t> dst_shape, std::span<const std::uint64_t> dst_origin,
              std::span<const std::uint64_t> extent, std::size_t element_size);

}  // namespace tessera::interop::detail
