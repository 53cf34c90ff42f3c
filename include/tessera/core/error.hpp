// Typed errors of libtessera. Library code never prints and never exits: it throws one of these.
// `what()` is the user-facing rule text (what the CLI prints after "error: "); `path()` and
// `structure()` name the file and the on-disk structure involved when known, and `describe()`
// joins all three for logs and library users who want the full context.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "tessera/core/text.hpp"

namespace tessera {

//
// Messages quote bytes from files (keys, names, parser excerpts), so the message and structure are
// stored through printable_text: `what()` and `describe()` are always valid UTF-8 with no raw
// control bytes. `path()` keeps the file name's bytes as they are (it may be used to open the
// file); describe() prints it escaped the same way.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string path = {}, std::string structure = {})
      : std::runtime_error(printable_text(message)), path_(std::move(path)), structure_(printable_text(structure)) {}

  const std::string& path() const noexcept { return path_; }
  const std::string& structure() const noexcept { return structure_; }
  // "path: structure: message", omitting the parts that are unknown (path escaped as above).
  std::string describe() const;

 private:
  std::string path_;
  std::string structure_;
};

// Malformed input: bytes that break a rule of a format specification.
class FormatError : public Error {
 public:
  using Error::Error;
};

// The operating system refused a read, write, open, rename or map.
class IoError : public Error {
 public:
  using Error::Error;
};

// The caller asked for something invalid (bad argument, missing dataset, conflicting options).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A documented limit was exceeded, or arithmetic on file-supplied sizes would overflow.
class LimitError : public Error {
 public:
  using Error::Error;
};

// The one wording of a located error in every module: "path: structure: message", leaving out
// the parts that are empty. A message that already starts with its location ("path: ", or
// "structure: " when there is no path) is returned as it is, so rethrowing never repeats it.
// tet is the exception that keeps path and structure out of what(): its messages are the
// reference CLI's texts (docs/design.md, "Errors").
std::string located_text(std::string_view path, std::string_view structure, std::string_view message);

// Throws E with what() = located_text(path, structure, message) and path()/structure() set.
template <typename E>
[[noreturn]] void fail_at(std::string_view path, std::string_view structure, std::string_view message) {
  throw E(located_text(path, structure, message), std::string(path), std::string(structure));
}

// What a failed allocation is reported as (a LimitError) by the CLI and the Python module.
inline constexpr const char* kOutOfMemoryText =
    "out of memory: an allocation failed (the data, or a size the input declares, is larger than this machine can "
    "hold)";

// Well-formed input that this version of tessera deliberately does not handle.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera
