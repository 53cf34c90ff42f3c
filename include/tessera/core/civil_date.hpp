// Calendar arithmetic shared by every reader of dates (ICESat-2 times in ragged inputs, the
// GPS/TAI leap-second table), and the current UTC time as writers stamp it.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

// Days since 1970-01-01 of a proleptic Gregorian date; `m` in 1..12, `d` in 1..31 (Howard
// Hinnant's days_from_civil: exact for every year an int64 holds).
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

static_assert(days_from_civil(1970, 1, 1) == 0);
static_assert(days_from_civil(2000, 3, 1) == 11017);
static_assert(days_from_civil(1969, 12, 31) == -1);

// Unix seconds to stamp into an output (history rows, commit stamps, manifests): SOURCE_DATE_EPOCH
// when it is set (the reproducible-builds convention, so the same inputs give the same bytes),
// else the current time. UsageError when it is set but is not Unix seconds.
std::int64_t output_time();

// `unix_seconds` in UTC, formatted with strftime's `format` (at most 63 characters of output),
// e.g. "%Y-%m-%dT%H:%M:%SZ".
std::string utc_text(std::int64_t unix_seconds, const char* format);

}  // namespace tessera
