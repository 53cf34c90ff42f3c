#include "tessera/image/png.hpp"

#include <png.h>

#include <string>

#include "tessera/core/error.hpp"

namespace tessera::image {
namespace {

struct PngWriteState {
  std::vector<std::byte>* out;
};

void append_png_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* state = static_cast<PngWriteState*>(png_get_io_ptr(png));
  const auto* p = reinterpret_cast<const std::byte*>(data);
  state->out->insert(state->out->end(), p, p + length);
}

void flush_nothing(png_structp) {}

// libpng reports errors through this callback; throwing unwinds through libpng's C frames, which
// Debian builds with unwind tables, and the catch below frees its structures.
[[noreturn]] void png_error_handler(png_structp, png_const_charp message) {
  throw Error(std::string("PNG encoder: ") + message);
}

void png_warning_handler(png_structp, png_const_charp) {}

}  // namespace

std::vector<std::byte> encode_png_rgba(std::uint32_t width, std::uint32_t height, std::span<const std::uint8_t> rgba) {
  if (rgba.size() != std::size_t{width} * height * 4) throw UsageError("PNG encoder: pixel buffer size mismatch");
  std::vector<std::byte> out;
  PngWriteState state{&out};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_error_handler, png_warning_handler);
  if (!png) throw Error("PNG encoder: out of memory");
  png_infop info = png_create_info_struct(png);
  try {
    if (!info) throw Error("PNG encoder: out of memory");
    png_set_write_fn(png, &state, append_png_bytes, flush_nothing);
    png_set_compression_level(png, 6);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (std::uint32_t y = 0; y < height; ++y)
      png_write_row(png, const_cast<png_bytep>(rgba.data() + std::size_t{y} * width * 4));
    png_write_end(png, nullptr);
  } catch (...) {
    png_destroy_write_struct(&png, &info);
    throw;
  }
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace tessera::image
