#define TESSERA_NETCDF_API_IMPLEMENTATION
#include "netcdf_api.hpp"

#include "tessera/core/loaded_library.hpp"

namespace tessera::interop {

namespace {

NetCdfApi load_netcdf() {
  const LoadedLibrary library(TESSERA_NETCDF_SONAME, "reading NetCDF files");
  NetCdfApi api{};
#define TESSERA_NETCDF_BIND(name) library.bind(api.name, #name);
  TESSERA_NETCDF_FUNCTIONS(TESSERA_NETCDF_BIND)
#undef TESSERA_NETCDF_BIND
  return api;
}

}  // namespace

const NetCdfApi& netcdf() {
  static const NetCdfApi api = load_netcdf();
  return api;
}

}  // namespace tessera::interop
