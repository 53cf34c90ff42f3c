// Fuzz target for the deltacells obs schema parser (obs/schema.json, S1–S7): any input either
// fails with a tessera::Error or parses into a schema whose canonical text parses back to the same
// schema and text, and whose fingerprint payload can be built.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cells/obs_schema.hpp"
#include "tessera/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto schema = tessera::cells::ObsSchema::parse(text);
    const std::string canonical = schema.serialize();
    if (tessera::cells::ObsSchema::parse(canonical).serialize() != canonical) __builtin_trap();
    try {
      tessera::cells::check_schema_canonical(text);
      if (canonical != text) __builtin_trap();  // S7 accepted a text that is not canonical
    } catch (const tessera::FormatError&) {
      if (canonical == text) __builtin_trap();
    }
    const std::vector<std::string> shards = {std::string(64, 'a')};
    const std::vector<std::uint64_t> tiles = {schema.columns.size()};
    (void)tessera::cells::obs_fingerprint(canonical, shards, tiles);
    for (const auto& c : schema.columns) (void)tessera::cells::quote_column_file_name(c.name);
  } catch (const tessera::Error&) {
  }
  return 0;
}
