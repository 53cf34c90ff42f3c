// Output timestamps and UTC text (include/tessera/core/civil_date.hpp).
#include "tessera/core/civil_date.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "tessera/core/error.hpp"

namespace tessera {

std::int64_t output_time() {
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  // The system clock itself: std::time may read a coarse clock that lags it by a tick, so a time
  // written just after a second began could precede a reading taken before the write.
  if (epoch == nullptr || *epoch == '\0')
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  const std::string text(epoch);
  if (text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("SOURCE_DATE_EPOCH must be Unix seconds, got \"" + text + "\"");
  return std::stoll(text);
}

std::string utc_text(std::int64_t unix_seconds, const char* format) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[64];
  const std::size_t n = std::strftime(text, sizeof text, format, &tm);
  return std::string(text, n);
}

}  // namespace tessera
