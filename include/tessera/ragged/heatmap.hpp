// PNG heatmaps of read_tensors blocks (spec zagg-ragged.md §8.3 `--png`): one pixel square per
// cell, grayscale for cells with a digest, a fixed color for observed-empty cells, transparent
// for the rest. Encoded by image::encode_png_rgba, so the bytes depend only on the block and the
// options.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/ragged/ragged_field.hpp"

namespace tessera::ragged {

struct HeatmapOptions {
  enum class Value : std::uint8_t { Sum, Max, Bin };
  enum class Scale : std::uint8_t { Linear, Log };
  Value value = Value::Sum;  // sum: total weight in the window; max: largest bin; bin: bin `bin`
  std::uint32_t bin = 0;
  Scale scale = Scale::Linear;
  std::uint32_t cell_px = 4;  // pixels per cell side (1..64)
  bool origin_top = false;    // false: image row 0 shows tensor row side − 1 (north-west up)
};

// Parses `sum`, `max` or `bin:K` into `options` (UsageError otherwise).
void parse_heatmap_value(std::string_view text, HeatmapOptions& options);

inline constexpr std::uint8_t kObservedEmptyRgb[3] = {40, 80, 160};

// RGBA8 pixels, row-major, (side·cell_px)² of them. UsageError when `bin` ≥ the block's n_bins.
std::vector<std::uint8_t> render_heatmap(const TensorBlock& block, const HeatmapOptions& options);

}  // namespace tessera::ragged
