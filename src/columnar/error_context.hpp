// Where columnar errors say where they are. Errors are thrown deep inside the decoders with the
// file and structure kept apart (Error::path, Error::structure); callers such as the CLI print
// only what(). The public entry points (ParquetFile::open/read_column, decode_column_chunk,
// ArrowFile::open) therefore run their bodies through `with_context`, which rethrows the same
// error type with what() = "<file>: <structure>: <rule>" — once, however deeply calls nest.
#pragma once

#include <string>
#include <utility>

#include "tessera/core/error.hpp"

namespace tessera::columnar::detail {

template <typename F>
decltype(auto) with_context(const std::string& file, F&& body) {
  const auto rethrow = [&]<typename E>(const E& e) {
    const std::string path = e.path().empty() ? file : e.path();
    throw E(located_text(path, e.structure(), e.what()), path, e.structure());
  };
  try {
    return std::forward<F>(body)();
  } catch (const FormatError& e) {
    rethrow(e);
  } catch (const UnsupportedError& e) {
    rethrow(e);
  } catch (const LimitError& e) {
    rethrow(e);
  }
  throw UsageError("unreachable");
}

}  // namespace tessera::columnar::detail
