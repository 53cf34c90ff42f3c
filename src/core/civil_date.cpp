// The current UTC time as text (include/tessera/core/civil_date.hpp).
#include "tessera/core/civil_date.hpp"

#include <ctime>

namespace tessera {

std::string utc_now_text(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  const std::size_t n = std::strftime(text, sizeof text, format, &tm);
  return std::string(text, n);
}

}  // namespace tessera
