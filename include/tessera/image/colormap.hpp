// Colour maps for quicklooks: perceptually uniform viridis (matplotlib's default), grey, and the
// diverging blue-white-red of ColorBrewer's RdBu for anomalies. Each is a list of evenly spaced
// anchor colours interpolated linearly in sRGB.
#pragma once

#include <optional>
#include <string_view>

#include "tessera/image/raster.hpp"

namespace tessera::image {

enum class Colormap : std::uint8_t { Viridis, Gray, RdBu };

// "viridis", "gray" (or "grey"), "rdbu"; nullopt otherwise.
std::optional<Colormap> colormap_from_name(std::string_view name) noexcept;
std::string_view colormap_names() noexcept;  // for usage messages: "viridis, gray, rdbu"

// The colour at t in [0, 1] (clamped; NaN gives the low end).
Rgba colormap_at(Colormap map, double t) noexcept;

}  // namespace tessera::image
