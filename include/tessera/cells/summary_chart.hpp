// The per-tile picture of a deltacells dataset (`cells info --png`): cells per tile, nonzeros
// per cell and stored bytes per nonzero, tile by tile, from the manifest alone (no tile is read).
#pragma once

#include <string>

#include "tessera/cells/manifest.hpp"
#include "tessera/image/raster.hpp"

namespace tessera::cells {

image::Raster render_summary_chart(const Manifest& manifest, const std::string& name);

}  // namespace tessera::cells
