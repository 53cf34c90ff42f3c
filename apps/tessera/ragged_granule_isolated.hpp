// HDF5 granules of `ragged build --config`, read in a child process (ragged_granule_isolated.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "tessera/ragged/build.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::cli {

// interop::read_granule in a child: false, before anything is read, when `path` is not HDF5;
// FormatError naming the granule when libhdf5 crashes on it or the child stops sending rows.
bool read_granule_isolated(const std::string& path, const ragged::zagg::GranulePlan& plan, std::size_t file,
                           std::size_t block_rows, const ragged::build::PointSink& sink);

}  // namespace tessera::cli
