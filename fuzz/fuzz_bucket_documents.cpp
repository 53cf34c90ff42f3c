// Fuzz target for the documents the bucket backends parse (io/bucket.hpp, io/publish.hpp): the
// first byte picks the parser (modulo 6: a ListObjectsV2 answer, an AWS config/credentials file,
// a CreateMultipartUpload, ListMultipartUploads or CompleteMultipartUpload answer, a write
// journal), the rest is the document. A clean tessera::Error is an accepted outcome; a listing
// that parses must be self-consistent (a truncated page carries its continuation token).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"
#include "tessera/io/publish.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view doc(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 6) {
      case 0: {
        const auto page = tessera::io::parse_list_objects_page(doc, "fuzz");
        if (page.truncated && page.next_token.empty()) __builtin_trap();
        break;
      }
      case 1: (void)tessera::io::parse_aws_ini(doc, "fuzz"); break;
      case 2: (void)tessera::io::parse_initiate_multipart(doc, "fuzz"); break;
      case 3: {
        const auto page = tessera::io::parse_list_uploads_page(doc, "fuzz");
        if (page.truncated && page.next_key_marker.empty()) __builtin_trap();
        break;
      }
      case 4: (void)tessera::io::parse_complete_multipart(doc, "fuzz"); break;
      default: (void)tessera::io::parse_journal(doc, "fuzz"); break;
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
