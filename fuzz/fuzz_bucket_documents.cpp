// Fuzz target for the two documents the bucket backends parse (io/bucket.hpp): the first byte
// picks the parser (even: a ListObjectsV2 answer, odd: an AWS config/credentials file), the rest is
// the document. A clean tessera::Error is an accepted outcome; a listing that parses must be
// self-consistent (a truncated page carries its continuation token).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] % 2 == 0) {
      const auto page = tessera::io::parse_list_objects_page(doc, "fuzz");
      if (page.truncated && page.next_token.empty()) __builtin_trap();
    } else {
      (void)tessera::io::parse_aws_ini(doc, "fuzz");
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
