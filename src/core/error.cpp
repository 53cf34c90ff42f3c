#include "tessera/core/error.hpp"

namespace tessera {

std::string Error::describe() const {
  std::string out;
  if (!path_.empty()) out += path_ + ": ";
  if (!structure_.empty()) out += structure_ + ": ";
  out += what();
  return out;
}

}  // namespace tessera
