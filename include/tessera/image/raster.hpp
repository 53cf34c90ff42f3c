// A small RGBA canvas for the pictures tessera draws itself (quicklooks, colour bars, summary
// charts): rectangles, lines and text in a built-in 5×7 pixel font, so no font library or
// plotting package is needed and the output is the same byte for byte on every machine.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::image {

struct Rgba {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  bool operator==(const Rgba&) const = default;
};

inline constexpr Rgba kWhite{255, 255, 255, 255};
inline constexpr Rgba kBlack{0, 0, 0, 255};
inline constexpr Rgba kTransparent{0, 0, 0, 0};

// Glyph cell of the built-in font: 5×7 pixels, drawn with one pixel of space after each glyph and
// two pixels between lines, times the text scale.
inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;

// The look every picture shares: labels at twice the font's size, a 10-pixel margin.
inline constexpr int kLabelScale = 2;
inline constexpr std::int64_t kMargin = 10;

// Thread-safety: a value; concurrent reads are fine, writes need one thread at a time.
class Raster {
 public:
  Raster(std::uint32_t width, std::uint32_t height, Rgba background = kWhite);

  std::uint32_t width() const noexcept { return width_; }
  std::uint32_t height() const noexcept { return height_; }
  // Row-major RGBA8 bytes from the top row, as encode_png_rgba takes them.
  std::span<const std::uint8_t> pixels() const noexcept { return pixels_; }
  Rgba at(std::uint32_t x, std::uint32_t y) const noexcept;

  // Drawing clips to the canvas: coordinates outside it are ignored, never an error.
  void set(std::int64_t x, std::int64_t y, Rgba color) noexcept;
  void fill_rect(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h, Rgba color) noexcept;
  void outline_rect(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h, Rgba color) noexcept;
  // Printable ASCII; any other byte draws as '?'. (x, y) is the top-left corner of the first glyph.
  void draw_text(std::int64_t x, std::int64_t y, std::string_view text, Rgba color, int scale = 1) noexcept;

 private:
  std::uint32_t width_, height_;
  std::vector<std::uint8_t> pixels_;
};

// Width and height in pixels of `text` drawn at `scale` (one line; no trailing space).
std::int64_t text_width(std::string_view text, int scale = 1) noexcept;
inline std::int64_t text_height(int scale = 1) noexcept { return std::int64_t{kGlyphHeight} * scale; }

// The 7 rows of a glyph, bit 4 the leftmost pixel; '?' for anything outside printable ASCII.
std::span<const std::uint8_t, kGlyphHeight> glyph_rows(char c) noexcept;

}  // namespace tessera::image
