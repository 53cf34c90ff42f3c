#include "tessera/image/colormap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

namespace tessera::image {
namespace {

struct Rgb {
  double r, g, b;
};

// viridis (matplotlib's default map, public domain) sampled at t = 0, 1/32, …, 1: linear
// interpolation between these stays within 3 levels of its 256-entry table.
constexpr std::array<Rgb, 33> kViridis = {{
    {68, 1, 84},    {71, 13, 96},   {72, 24, 106},  {72, 35, 116},  {71, 45, 123},  {69, 55, 129},  {66, 64, 134},
    {62, 73, 137},  {59, 82, 139},  {55, 91, 141},  {51, 99, 141},  {47, 107, 142}, {44, 114, 142}, {41, 122, 142},
    {38, 130, 142}, {35, 137, 142}, {33, 145, 140}, {31, 152, 139}, {31, 160, 136}, {34, 167, 133}, {40, 174, 128},
    {50, 182, 122}, {63, 188, 115}, {78, 195, 107}, {94, 201, 98},  {112, 207, 87}, {132, 212, 75}, {152, 216, 62},
    {173, 220, 48}, {194, 223, 35}, {216, 226, 25}, {236, 229, 27}, {253, 231, 37},
}};
constexpr std::array<Rgb, 2> kGray = {{{0, 0, 0}, {255, 255, 255}}};
// ColorBrewer RdBu (11 classes) from blue (low) to red (high).
constexpr std::array<Rgb, 11> kRdBu = {{{0x05, 0x30, 0x61},
                                        {0x21, 0x66, 0xac},
                                        {0x43, 0x93, 0xc3},
                                        {0x92, 0xc5, 0xde},
                                        {0xd1, 0xe5, 0xf0},
                                        {0xf7, 0xf7, 0xf7},
                                        {0xfd, 0xdb, 0xc7},
                                        {0xf4, 0xa5, 0x82},
                                        {0xd6, 0x60, 0x4d},
                                        {0xb2, 0x18, 0x2b},
                                        {0x67, 0x00, 0x1f}}};

std::span<const Rgb> anchors(Colormap map) noexcept {
  switch (map) {
    case Colormap::Viridis: return kViridis;
    case Colormap::Gray: return kGray;
    case Colormap::RdBu: return kRdBu;
  }
  return kViridis;
}

std::uint8_t channel(double v) noexcept { return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 255.0))); }

}  // namespace

std::optional<Colormap> colormap_from_name(std::string_view name) noexcept {
  if (name == "viridis") return Colormap::Viridis;
  if (name == "gray" || name == "grey") return Colormap::Gray;
  if (name == "rdbu") return Colormap::RdBu;
  return std::nullopt;
}

std::string_view colormap_names() noexcept { return "viridis, gray, rdbu"; }

Rgba colormap_at(Colormap map, double t) noexcept {
  const std::span<const Rgb> a = anchors(map);
  if (!(t > 0)) t = 0;  // also NaN
  if (t > 1) t = 1;
  const double position = t * static_cast<double>(a.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(position), a.size() - 2);
  const double f = position - static_cast<double>(i);
  return {channel(a[i].r + (a[i + 1].r - a[i].r) * f), channel(a[i].g + (a[i + 1].g - a[i].g) * f),
          channel(a[i].b + (a[i + 1].b - a[i].b) * f), 255};
}

}  // namespace tessera::image
