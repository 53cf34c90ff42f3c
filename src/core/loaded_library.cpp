#include "tessera/core/loaded_library.hpp"

#include <dlfcn.h>

#include <utility>

#include "tessera/core/error.hpp"

namespace tessera {

namespace {

// dlerror's text, or a generic one when the loader left none.
std::string loader_reason() {
  const char* reason = ::dlerror();
  return reason ? reason : "no reason given by the dynamic loader";
}

}  // namespace

LoadedLibrary::LoadedLibrary(std::string soname, std::string_view purpose) : soname_(std::move(soname)) {
  handle_ = ::dlopen(soname_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle_)
    throw UnsupportedError(std::string(purpose) + " needs the shared library " + soname_ +
                               ", which could not be loaded: " + loader_reason(),
                           {}, soname_);
}

void* LoadedLibrary::symbol(const char* name) const {
  ::dlerror();  // clear a stale error, so a null from dlsym is told apart from a symbol at 0
  void* address = ::dlsym(handle_, name);
  if (!address)
    throw UnsupportedError("the shared library " + soname_ + " has no symbol " + name + " (" + loader_reason() +
                               "); it is not the version this build of tessera was made against",
                           {}, soname_);
  return address;
}

void* LoadedLibrary::variable(const char* name) const {
  // The library was opened RTLD_GLOBAL, so the global scope has it when nothing comes first.
  if (void* address = ::dlsym(RTLD_DEFAULT, name)) return address;
  return symbol(name);
}

}  // namespace tessera
