// The optional components of a tessera build (docs/install.md, "Minimal builds"). Each is a CMake
// option, on by default; with one off, the code that needs its third-party library is not
// compiled, and the public entry points that would need it remain and throw FeatureUnavailable.
// The stand-ins live in one translation unit per feature (`*_unavailable.cpp`), which CMake
// builds instead of the real ones (cmake/TesseraFeatures.cmake).
#pragma once

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera {

enum class Feature {
  Hdf5,     // libhdf5: HDF5 inputs of tet convert, h5ad and 10x HDF5 inputs, ICESat-2 granules
  NetCdf,   // libnetcdf: NetCDF inputs of tet convert
  Parquet,  // libthrift + Snappy: Parquet files (the deltacells obs sidecar and var table, ragged build input)
  Png,      // libpng: the pictures tessera draws (quicklooks, tile charts, heatmaps)
};

// "HDF5", "NetCDF", "Parquet", "PNG".
std::string_view feature_name(Feature feature) noexcept;
// The CMake option that builds it: "TESSERA_WITH_HDF5", …
std::string_view feature_option(Feature feature) noexcept;
// Whether this build of the library has it.
bool feature_enabled(Feature feature) noexcept;

// Thrown by the entry points of a feature the build left out. `what` says what was asked
// ("reading the HDF5 file a.h5ad"); the text adds the feature and the option, e.g. "reading the
// HDF5 file a.h5ad needs HDF5 support; this build was configured with -DTESSERA_WITH_HDF5=OFF".
// A distinct type so callers that turn errors into verdicts about a file (cells verify) can tell
// "this build cannot read it" from "the file is bad".
class FeatureUnavailable : public UnsupportedError {
 public:
  FeatureUnavailable(Feature feature, std::string_view what, std::string path = {});
  Feature feature() const noexcept { return feature_; }

 private:
  Feature feature_;
};

}  // namespace tessera
