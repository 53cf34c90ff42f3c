// ICESat-2 granules (ATL03 / ATL06 HDF5 files) as point inputs of `ragged build`, read the way a
// zagg config's data_source describes them (ragged/zagg_config.hpp): for each beam group present
// in the file, the coordinate, value and σ datasets in slabs of rows (memory bounded by the slab,
// not the granule), rows failing the quality filter or a row filter left out, and rows whose value
// or σ equals that dataset's `_FillValue` left out; both counted by reason (`quality_filter`,
// `filtered`, `fill_value`). A beam the granule lacks is skipped (granules often carry fewer than
// six); datasets of one beam with different lengths are a FormatError naming the file and paths.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/ragged/build.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::interop {

// False (nothing read) when `path` is not an HDF5 file, so the build's own readers take it.
bool read_granule(const std::string& path, const ragged::zagg::GranulePlan& plan, std::size_t file,
                  std::size_t block_rows, const ragged::build::PointSink& sink);

}  // namespace tessera::interop
