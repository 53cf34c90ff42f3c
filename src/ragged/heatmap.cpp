#include "tessera/ragged/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::ragged {
namespace {

// Bin `bin` of cell (row, col) as a double, whatever the tensor dtype.
double bin_value(const TensorBlock& b, std::size_t cell, std::uint32_t bin) {
  const std::size_t i = cell * b.n_bins + bin;
  switch (b.dtype) {
    case TensorDType::U16: return load_le<std::uint16_t>(b.tensor.data() + 2 * i);
    case TensorDType::U32: return load_le<std::uint32_t>(b.tensor.data() + 4 * i);
    case TensorDType::F32: return load_le<float>(b.tensor.data() + 4 * i);
  }
  return 0;
}

double cell_value(const TensorBlock& b, std::size_t cell, const HeatmapOptions& o) {
  if (o.value == HeatmapOptions::Value::Bin) return bin_value(b, cell, o.bin);
  double acc = 0;
  for (std::uint32_t k = 0; k < b.n_bins; ++k) {
    const double v = bin_value(b, cell, k);
    acc = o.value == HeatmapOptions::Value::Sum ? acc + v : std::max(acc, v);
  }
  return acc;
}

}  // namespace

void parse_heatmap_value(std::string_view text, HeatmapOptions& options) {
  if (text == "sum") {
    options.value = HeatmapOptions::Value::Sum;
  } else if (text == "max") {
    options.value = HeatmapOptions::Value::Max;
  } else if (text.starts_with("bin:") && text.size() > 4 && text.size() <= 14 &&
             text.substr(4).find_first_not_of("0123456789") == std::string_view::npos) {
    options.value = HeatmapOptions::Value::Bin;
    options.bin = static_cast<std::uint32_t>(std::stoull(std::string(text.substr(4))));
  } else {
    throw UsageError("--png-value must be sum, max or bin:K (got '" + std::string(text) + "')");
  }
}

std::vector<std::uint8_t> render_heatmap(const TensorBlock& block, const HeatmapOptions& o) {
  if (o.cell_px < 1 || o.cell_px > 64) throw UsageError("--png-cell-px must be between 1 and 64");
  if (o.value == HeatmapOptions::Value::Bin && o.bin >= block.n_bins)
    throw UsageError("--png-value bin:" + std::to_string(o.bin) + " is outside the block's " +
                     std::to_string(block.n_bins) + " bins");
  const std::size_t side = block.side, cells = side * side;
  std::vector<double> values(cells, 0.0);
  double top = 0;
  for (std::size_t c = 0; c < cells; ++c) {
    if (block.mask[c] != 2) continue;
    values[c] = cell_value(block, c, o);
    top = std::max(top, values[c]);
  }
  const std::size_t px = o.cell_px, width = side * px;
  std::vector<std::uint8_t> rgba(width * width * 4, 0);
  for (std::size_t row = 0; row < side; ++row) {
    // Image row 0 shows tensor row side − 1 unless the origin is at the top.
    const std::size_t image_row = o.origin_top ? row : side - 1 - row;
    for (std::size_t col = 0; col < side; ++col) {
      const std::size_t c = row * side + col;
      std::uint8_t pixel[4] = {0, 0, 0, 0};
      if (block.mask[c] == 1) {
        std::memcpy(pixel, kObservedEmptyRgb, 3);
        pixel[3] = 255;
      } else if (block.mask[c] == 2) {
        double t = 0;
        if (top > 0)
          t = o.scale == HeatmapOptions::Scale::Log ? std::log1p(values[c]) / std::log1p(top) : values[c] / top;
        const auto gray = static_cast<std::uint8_t>(std::lround(std::clamp(t, 0.0, 1.0) * 255.0));
        pixel[0] = pixel[1] = pixel[2] = gray;
        pixel[3] = 255;
      }
      for (std::size_t y = 0; y < px; ++y)
        for (std::size_t x = 0; x < px; ++x)
          std::memcpy(&rgba[((image_row * px + y) * width + col * px + x) * 4], pixel, 4);
    }
  }
  return rgba;
}

}  // namespace tessera::ragged
