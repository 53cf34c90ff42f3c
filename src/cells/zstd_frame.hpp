// Shape checks of one zstd frame that codec/zstd does not answer: where the first frame ends.
// T19 and X1 require each stream to be exactly one standard frame occupying its whole byte range;
// the frame is measured by walking its block headers (RFC 8878 §3.1.1) without decompressing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace tessera::cells::detail {

struct FrameExtent {
  std::uint64_t compressed_size = 0;  // header, blocks and the optional checksum
  std::uint64_t max_content = 0;  // the most its blocks can decode to (raw and RLE sizes, 128 KiB per compressed block)
};

// The extent of the standard zstd frame at the start of `src`, or nullopt when `src` does not start with a complete
// standard frame (wrong magic — skippable and legacy frames included —, reserved bits set, a reserved block type, or
// blocks running past the end).
std::optional<FrameExtent> zstd_frame_extent(std::span<const std::byte> src) noexcept;

}  // namespace tessera::cells::detail
