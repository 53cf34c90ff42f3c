#define TESSERA_HDF5_API_IMPLEMENTATION
#include "hdf5_api.hpp"

#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/loaded_library.hpp"

namespace tessera::interop {

namespace {

Hdf5Api load_hdf5() {
  const LoadedLibrary library(TESSERA_HDF5_SONAME, "reading HDF5 files");
  Hdf5Api api{};
#define TESSERA_HDF5_BIND(name) library.bind(api.name, #name);
  TESSERA_HDF5_FUNCTIONS(TESSERA_HDF5_BIND)
#undef TESSERA_HDF5_BIND
  unsigned major = 0, minor = 0, release = 0;
  if (api.H5get_libversion(&major, &minor, &release) < 0 || major != H5_VERS_MAJOR || minor != H5_VERS_MINOR)
    throw UnsupportedError("reading HDF5 files needs HDF5 " + std::to_string(H5_VERS_MAJOR) + "." +
                               std::to_string(H5_VERS_MINOR) + ", but " + library.soname() + " is version " +
                               std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release),
                           {}, library.soname());
  if (api.H5open() < 0) {
    throw UnsupportedError("libhdf5 (" + library.soname() + ") failed to initialise", {}, library.soname());
  }
  // The globals hold the ids of the predefined types, which H5open has just registered (in the
  // program's copy of them when it links libhdf5 too: LoadedLibrary::variable).
#define TESSERA_HDF5_READ_GLOBAL(name) api.name = *static_cast<const hid_t*>(library.variable(#name));
  TESSERA_HDF5_GLOBALS(TESSERA_HDF5_READ_GLOBAL)
#undef TESSERA_HDF5_READ_GLOBAL
  return api;
}

}  // namespace

const Hdf5Api& hdf5() {
  static const Hdf5Api api = load_hdf5();
  return api;
}

}  // namespace tessera::interop
