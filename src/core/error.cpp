#include "tessera/core/error.hpp"

#include <string_view>

namespace tessera {

std::string Error::describe() const {
  // Some messages already begin with the context (e.g. zarr's "6/x/zarr.json: zarr.json: ...");
  // a prefix the message already carries is not repeated.
  const std::string_view message = what();
  std::string prefix;
  const std::string path = printable_text(path_);
  if (!path.empty()) prefix += path + ": ";
  if (!structure_.empty()) prefix += structure_ + ": ";
  if (message.starts_with(prefix)) return std::string(message);
  if (!path.empty() && message.starts_with(path + ": ")) return std::string(message);
  return prefix + std::string(message);
}

}  // namespace tessera
