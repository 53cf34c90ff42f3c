// PNG encoding of RGBA8 pixels with libpng: 8-bit, non-interlaced, zlib level 6, filter none and
// no time chunk, so the bytes depend only on the pixels (tests compare images byte for byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera::image {

// `rgba` holds width × height × 4 bytes, row-major from the top row. UsageError on a size mismatch.
std::vector<std::byte> encode_png_rgba(std::uint32_t width, std::uint32_t height, std::span<const std::uint8_t> rgba);

}  // namespace tessera::image
