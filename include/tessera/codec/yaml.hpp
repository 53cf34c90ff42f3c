// YAML documents (zagg's pipeline configs) read into the JSON tree every other tessera document
// uses, resolving plain scalars as PyYAML's safe_load does (YAML 1.1): `~`/`null`/empty → null,
// `true`/`false`/`yes`/`no`/`on`/`off` (any case form PyYAML accepts) → bool, decimal, `0x`, `0o`
// and `_`-grouped integers → integer, numbers with a `.` (and `.inf`, `.nan`) → float,
// everything else and every quoted scalar → string. Mapping keys become strings. Aliases are
// expanded (bounded, so a "billion laughs" document is a LimitError); explicit tags other than
// the core ones (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq`) and
// duplicate keys are FormatErrors naming the file, line and column.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tessera/codec/json.hpp"

namespace tessera::codec::yaml {

struct Limits {
  std::size_t max_depth = 256;        // nested mappings / sequences
  std::size_t max_nodes = 1'000'000;  // nodes after alias expansion
};

// The one document of `text` (an empty stream is null). `name` (a file path) begins every
// error message.
json::Json parse(std::string_view text, const std::string& name, const Limits& limits = {});

}  // namespace tessera::codec::yaml
