// The text of an operating-system error number, for the messages of IoError.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

namespace tessera {

// strerror(err) as a string ("No such file or directory"); the current errno by default.
inline std::string errno_text(int err = errno) { return std::strerror(err); }

}  // namespace tessera
