// How cells errors are worded (spec deltacells.md §0): "<object>: <structure>: <what> (<rule>)".
// The object and structure are also kept on the exception for library callers.
#pragma once

#include <tbb/info.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::cells::detail {

// core's located text with the rule code after the message: "<what> (<rule>)".
inline std::string rule_text(std::string_view object, std::string_view structure, std::string_view what,
                             std::string_view rule) {
  std::string message(what);
  if (!rule.empty()) message.append(" (").append(rule).append(")");
  return located_text(object, structure, message);
}

template <typename E = FormatError>
[[noreturn]] inline void fail(std::string_view object, std::string_view structure, std::string_view what,
                              std::string_view rule) {
  throw E(rule_text(object, structure, what, rule), std::string(object), std::string(structure));
}

// Arena sizes are capped at the machine's concurrency: more slots than cores adds no speed and
// makes oneTBB print a warning. Results never depend on the count.
inline int arena_size(unsigned requested) {
  return std::max(1, std::min(static_cast<int>(requested), tbb::info::default_concurrency()));
}

inline std::string chunk_label(std::uint64_t k) { return "chunk " + std::to_string(k); }

}  // namespace tessera::cells::detail
