#include "tessera/image/raster.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"

namespace tessera::image {

Raster::Raster(std::uint32_t width, std::uint32_t height, Rgba background) : width_(width), height_(height) {
  // A picture larger than this is a mistake in the caller's sizing, not something to allocate.
  constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 28;
  if (width == 0 || height == 0 || std::uint64_t{width} * height > kMaxPixels)
    throw LimitError("image of " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels is empty or larger than 2^28 pixels");
  pixels_.resize(std::size_t{width} * height * 4);
  fill_rect(0, 0, width, height, background);
}

Rgba Raster::at(std::uint32_t x, std::uint32_t y) const noexcept {
  if (x >= width_ || y >= height_) return kTransparent;
  const std::uint8_t* p = &pixels_[(std::size_t{y} * width_ + x) * 4];
  return {p[0], p[1], p[2], p[3]};
}

void Raster::set(std::int64_t x, std::int64_t y, Rgba color) noexcept {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  std::uint8_t* p = &pixels_[(static_cast<std::size_t>(y) * width_ + static_cast<std::size_t>(x)) * 4];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
  p[3] = color.a;
}

void Raster::fill_rect(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h, Rgba color) noexcept {
  const std::int64_t x0 = std::max<std::int64_t>(x, 0), y0 = std::max<std::int64_t>(y, 0);
  const std::int64_t x1 = std::min<std::int64_t>(x + w, width_), y1 = std::min<std::int64_t>(y + h, height_);
  for (std::int64_t yy = y0; yy < y1; ++yy)
    for (std::int64_t xx = x0; xx < x1; ++xx) set(xx, yy, color);
}

void Raster::outline_rect(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h, Rgba color) noexcept {
  fill_rect(x, y, w, 1, color);
  fill_rect(x, y + h - 1, w, 1, color);
  fill_rect(x, y, 1, h, color);
  fill_rect(x + w - 1, y, 1, h, color);
}

void Raster::draw_text(std::int64_t x, std::int64_t y, std::string_view text, Rgba color, int scale) noexcept {
  scale = std::max(scale, 1);
  for (const char c : text) {
    const auto rows = glyph_rows(c);
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (rows[static_cast<std::size_t>(row)] & (0x10 >> col))
          fill_rect(x + std::int64_t{col} * scale, y + std::int64_t{row} * scale, scale, scale, color);
    x += std::int64_t{kGlyphWidth + 1} * scale;
  }
}

std::int64_t text_width(std::string_view text, int scale) noexcept {
  if (text.empty()) return 0;
  scale = std::max(scale, 1);
  return (static_cast<std::int64_t>(text.size()) * (kGlyphWidth + 1) - 1) * scale;
}

}  // namespace tessera::image
