// Fuzz target for the deltacells manifest parser (M1–M12): any input either fails with a
// tessera::Error or parses into a manifest whose serialization parses back to the same
// serialization (the writer's output is always a valid manifest).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/cells/manifest.hpp"
#include "tessera/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto m = tessera::cells::Manifest::parse({reinterpret_cast<const char*>(data), size});
    std::string text;
    try {
      text = m.serialize();
    } catch (const tessera::UsageError&) {
      return 0;  // NaN/Infinity in metadata: read, never written
    }
    const auto again = tessera::cells::Manifest::parse(text);
    if (again.serialize() != text) __builtin_trap();
  } catch (const tessera::Error&) {
  }
  return 0;
}
