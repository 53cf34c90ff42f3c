#include "tessera/core/error.hpp"

namespace tessera {

std::string located_text(std::string_view path, std::string_view structure, std::string_view message) {
  std::string prefix;
  if (!path.empty()) prefix.append(path).append(": ");
  else if (!structure.empty()) prefix.append(structure).append(": ");
  if (!prefix.empty() && message.starts_with(prefix)) return std::string(message);
  if (!path.empty() && !structure.empty()) prefix.append(structure).append(": ");
  return prefix.append(message);
}

std::string Error::describe() const { return located_text(printable_text(path_), structure(), what()); }

}  // namespace tessera
