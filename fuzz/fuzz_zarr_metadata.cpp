// Fuzz target for zarr.json: decode (either node kind), validate arrays, encode, and check that
// the encoded form decodes to the same metadata and encodes to the same bytes again. A clean
// tessera::Error is an accepted outcome; any other exception, a crash, a sanitizer report or a
// round trip that changes the metadata is a finding.
//
// The corruption sweep (tests/zarr/corruption_test.cpp) includes this file and drives
// `exercise_zarr_metadata` directly.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "tessera/core/error.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::fuzzing {

// Thrown when the library contradicts itself (a bug, not bad input).
struct ZarrInconsistency {
  const char* what;
};

inline bool exercise_zarr_metadata(std::span<const std::byte> bytes) {
  const zarr::NodeMeta node = zarr::decode_node(bytes, "fuzz/zarr.json");
  std::string encoded;
  if (const auto* array = std::get_if<zarr::ArrayMeta>(&node)) {
    zarr::validate(*array, "fuzz/zarr.json");
    encoded = zarr::encode(*array);
  } else {
    encoded = zarr::encode(std::get<zarr::GroupMeta>(node));
  }
  const std::span<const std::byte> again(reinterpret_cast<const std::byte*>(encoded.data()), encoded.size());
  const zarr::NodeMeta back = zarr::decode_node(again, "fuzz/zarr.json");
  if (back.index() != node.index()) throw ZarrInconsistency{"node kind changed in a round trip"};
  const std::string twice = std::visit([](const auto& m) { return zarr::encode(m); }, back);
  if (twice != encoded) throw ZarrInconsistency{"encode(decode(encode(x))) != encode(x)"};
  return true;
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tessera::fuzzing::exercise_zarr_metadata({reinterpret_cast<const std::byte*>(data), size});
  } catch (const tessera::Error&) {
    // Malformed input rejected cleanly: the expected outcome for most inputs.
  }
  return 0;
}
#endif
