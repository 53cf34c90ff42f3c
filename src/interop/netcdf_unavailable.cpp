// Built instead of netcdf.cpp when TESSERA_WITH_NETCDF is OFF (cmake/TesseraFeatures.cmake): a
// NetCDF input of tet convert is still recognised (interop/detect), and opening it is refused.
#include "tessera/core/feature.hpp"
#include "tessera/interop/source.hpp"

namespace tessera::interop {

std::unique_ptr<ArraySource> open_netcdf_source(const std::string& path) {
  throw FeatureUnavailable(Feature::NetCdf, "reading the NetCDF file " + path, path);
}

}  // namespace tessera::interop
