// Fuzz target for YAML documents and zagg pipeline configs: the input is parsed as YAML (with
// small node and depth limits, so hostile aliases stop early) and, when it parses, interpreted
// as a zagg config. A clean tessera::Error is an accepted outcome; the tree must dump to JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/codec/yaml.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::fuzzing {

inline void exercise_zagg_config(std::string_view text) {
  codec::json::Json doc;
  try {
    doc = codec::yaml::parse(text, "fuzz.yaml", {.max_depth = 64, .max_nodes = 100'000});
  } catch (const Error&) {
    return;
  }
  (void)doc.dump(-1, ' ', false, codec::json::Json::error_handler_t::replace);
  try {
    (void)ragged::zagg::read_config(doc, "fuzz.yaml");
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_zagg_config({reinterpret_cast<const char*>(data), size});
  return 0;
}
#endif
