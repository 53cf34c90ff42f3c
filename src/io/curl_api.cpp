#define TESSERA_CURL_API_IMPLEMENTATION
#include "curl_api.hpp"

#include "tessera/core/loaded_library.hpp"

namespace tessera::io::detail {

namespace {

CurlApi load_curl() {
  const LoadedLibrary library(TESSERA_CURL_SONAME, "reading and writing over HTTP(S)");
  CurlApi api{};
#define TESSERA_CURL_BIND(name) library.bind(api.name, #name);
  TESSERA_CURL_FUNCTIONS(TESSERA_CURL_BIND)
#undef TESSERA_CURL_BIND
  return api;
}

}  // namespace

const CurlApi& curl() {
  static const CurlApi api = load_curl();
  return api;
}

}  // namespace tessera::io::detail
