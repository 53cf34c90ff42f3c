// libcurl, reached through a table filled on first use (tessera/core/loaded_library.hpp says
// why). http_request.cpp includes this header instead of curl/curl.h and is written as ordinary
// libcurl code: below, each function it uses is redefined as the matching member of the table.
// The build does not link libcurl, so a call to a function missing from the list fails to link.
#pragma once

#include <curl/curl.h>

// clang-format off
#define TESSERA_CURL_FUNCTIONS(X) X(curl_easy_cleanup) X(curl_easy_getinfo) X(curl_easy_init)           \
  X(curl_easy_perform) X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_strerror) X(curl_global_init) \
  X(curl_slist_append) X(curl_slist_free_all)
// clang-format on

namespace tessera::io::detail {

struct CurlApi {
#define TESSERA_CURL_FUNCTION(name) decltype(&::name) name;
  TESSERA_CURL_FUNCTIONS(TESSERA_CURL_FUNCTION)
#undef TESSERA_CURL_FUNCTION
};

// The table, loaded on the first call; UnsupportedError when libcurl cannot be loaded.
const CurlApi& curl();

}  // namespace tessera::io::detail

// curl_api.cpp fills the table and sees the library's own names. (curl.h defines setopt and
// getinfo as macros too, with GCC's type checks around the call; those go.)
#ifndef TESSERA_CURL_API_IMPLEMENTATION
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_cleanup ::tessera::io::detail::curl().curl_easy_cleanup
#define curl_easy_getinfo ::tessera::io::detail::curl().curl_easy_getinfo
#define curl_easy_init ::tessera::io::detail::curl().curl_easy_init
#define curl_easy_perform ::tessera::io::detail::curl().curl_easy_perform
#define curl_easy_reset ::tessera::io::detail::curl().curl_easy_reset
#define curl_easy_setopt ::tessera::io::detail::curl().curl_easy_setopt
#define curl_easy_strerror ::tessera::io::detail::curl().curl_easy_strerror
#define curl_global_init ::tessera::io::detail::curl().curl_global_init
#define curl_slist_append ::tessera::io::detail::curl().curl_slist_append
#define curl_slist_free_all ::tessera::io::detail::curl().curl_slist_free_all
#endif  // TESSERA_CURL_API_IMPLEMENTATION
