// Quicklook pictures: a 2-D array of values as a colour image with a labelled colour bar and a
// title, the picture a user wants before any analysis (`tet cat --png`).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tessera/image/colormap.hpp"
#include "tessera/image/raster.hpp"

namespace tessera::image {

struct QuicklookOptions {
  Colormap colormap = Colormap::Viridis;
  bool log_scale = false;           // colours by log10(value); values <= 0 count as missing
  std::optional<double> low, high;  // the colour bar's ends; default: the finite values' range
  bool origin_top = true;           // row 0 at the top, as numpy and matplotlib's imshow show it
  std::string title;
  // Arrays larger than this along an axis are averaged over blocks; arrays smaller than
  // `min_side` are magnified by a whole factor so each value is a visible square.
  std::uint32_t max_side = 2048;
  std::uint32_t min_side = 512;
};

struct Quicklook {
  Raster picture;
  double low = 0, high = 0;   // the colour bar's ends as drawn
  std::uint64_t missing = 0;  // values drawn transparent: NaN, ±inf (and <= 0 on a log scale)
};

// `values` holds rows × cols values in row-major order. UsageError on an empty array, a range
// with low >= high, or a log scale with low <= 0.
Quicklook render_quicklook(std::span<const double> values, std::uint64_t rows, std::uint64_t cols,
                           const QuicklookOptions& options);

// "%.4g" of a value, as the colour bar labels it.
std::string tick_label(double value);

}  // namespace tessera::image
