// Which importer reads a `tessera tet convert` input (spec tet.md §6.6 "Detection"): a directory
// whose `zarr.json` says `zarr_format` 3 is a Zarr store; otherwise the extension decides (after
// peeling compression suffixes such as `.gz`), then the file's first bytes (the HDF5 and
// NetCDF-3 signatures). Inputs that only a compression suffix made recognisable (`data.h5.gz`)
// are refused: the libraries read uncompressed files only.
#pragma once

#include <string>
#include <string_view>

namespace tessera::interop {

enum class InputFormat { Hdf5, NetCdf, Zarr, Tet };

// The `source` of the convert history row: "h5", "nc", "zarr" or "tet".
std::string_view history_source(InputFormat format) noexcept;

// Detects the format of `path`. Throws UnsupportedError with the spec's text
// (``unsupported convert input `{path}`: extension `{ext}` (supported extensions: …)``) when
// nothing matches, UnsupportedError for compressed inputs, and IoError when the path cannot be
// read at all.
InputFormat detect_convert_input(const std::string& path);

// Whether `path` is a regular file starting with the HDF5 signature.
bool is_hdf5_file(const std::string& path);

}  // namespace tessera::interop
