// A C library loaded when a process first needs it, not when the process starts.
//
// libhdf5, libnetcdf and libcurl bring in some forty further libraries (TLS stacks, Kerberos,
// LDAP, libxml2, ICU, …). Linked the usual way, the dynamic loader maps and relocates all of them
// at every start of every program, even one that only reads a local .tet file: measured, that
// was more than half of a `tessera` process's start (docs/design.md, "Libraries loaded on first
// use"). The modules that call those libraries reach them instead through a table of function
// pointers filled from a LoadedLibrary on first use (src/interop/hdf5_api.hpp,
// src/interop/netcdf_api.hpp, src/io/curl_api.hpp).
#pragma once

#include <string>
#include <string_view>

namespace tessera {

class LoadedLibrary {
 public:
  // Loads the library by its soname (as the build found it, e.g. "libhdf5_serial.so.103"), with
  // its symbols made global as a link-time dependency's would be (HDF5 filter plugins look
  // libhdf5's functions up there). Throws UnsupportedError naming the library, what it is needed
  // for (`purpose`, e.g. "reading HDF5 files") and the loader's reason when it cannot be loaded.
  LoadedLibrary(std::string soname, std::string_view purpose);

  // The address of the symbol `name`; UnsupportedError naming the library and the symbol when the
  // library has none (a different version of it than the build was made against).
  void* symbol(const char* name) const;

  // The address of the variable `name` as the library's own code uses it. A program that also
  // links the library and reads the variable itself holds a copy of it (a copy relocation), and
  // the library's code then reads and writes that copy, not its own: the lookup goes through the
  // process's global scope first, as the library's own references do, and falls back to the
  // library. UnsupportedError as for symbol() when neither has it.
  void* variable(const char* name) const;

  // Sets `pointer` (a function pointer) to the symbol `name`.
  template <class Pointer>
  void bind(Pointer& pointer, const char* name) const {
    pointer = reinterpret_cast<Pointer>(symbol(name));
  }

  const std::string& soname() const noexcept { return soname_; }

  // The library stays loaded until the process ends: never unloaded, since libcurl's per-thread
  // handles and libhdf5's exit handlers may run after any owner of this object is gone.

 private:
  std::string soname_;
  void* handle_ = nullptr;
};

}  // namespace tessera
