// toc time words (spec §3.8): encode, decode, join, overlap, and UTC/GPS to the internal scale.
#include "tessera/core/civil_date.hpp"
#include "tessera/ragged/toc.hpp"

#include <algorithm>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera::ragged::toc {
namespace {

constexpr std::uint64_t kFlag = std::uint64_t{1} << 31;
constexpr std::uint64_t kLow = kFlag - 1;

struct LeapStep {
  int year;
  unsigned month;
  int tai_minus_utc;
};
// The steps of TAI − UTC, each at 00:00:00 UTC of the first day of the month.
constexpr LeapStep kLeapSteps[] = {
    {1972, 1, 10}, {1972, 7, 11}, {1973, 1, 12}, {1974, 1, 13}, {1975, 1, 14}, {1976, 1, 15}, {1977, 1, 16},
    {1978, 1, 17}, {1979, 1, 18}, {1980, 1, 19}, {1981, 7, 20}, {1982, 7, 21}, {1983, 7, 22}, {1985, 7, 23},
    {1988, 1, 24}, {1990, 1, 25}, {1991, 1, 26}, {1992, 7, 27}, {1993, 7, 28}, {1994, 7, 29}, {1996, 1, 30},
    {1997, 7, 31}, {1999, 1, 32}, {2006, 1, 33}, {2009, 1, 34}, {2012, 7, 35}, {2015, 7, 36}, {2017, 1, 37},
};

std::uint64_t to_internal(std::int64_t ns, std::uint64_t epoch, std::int64_t offset_ns, const char* what) {
  // internal = ns + epoch + offset, refused outside [0, kTocMaxNs).
  const __int128 v = static_cast<__int128>(ns) + static_cast<__int128>(epoch) + offset_ns;
  if (v < 0 || v >= static_cast<__int128>(kTocMaxNs))
    throw UsageError(std::string(what) + " instant " + std::to_string(ns) +
                     " ns is outside the toc range [1850, ceiling)");
  return static_cast<std::uint64_t>(v);
}

}  // namespace

Kind kind_of(std::uint64_t w) noexcept { return (w & kFlag) ? Kind::Timestamp : Kind::Range; }

Interval decode(std::uint64_t w) noexcept {
  if (w & kFlag) {
    const std::uint64_t t = ((w >> 32) << 31) | (w & kLow);
    return {Kind::Timestamp, t, t};
  }
  return {Kind::Range, (w >> 32) << 31, (w & kLow) << 32};
}

std::uint64_t encode_timestamp(std::uint64_t t) {
  if (t >= kTocMaxNs) throw UsageError("toc: timestamp " + std::to_string(t) + " ns is at or above the ceiling");
  return ((t >> 31) << 32) | kFlag | (t & kLow);
}

std::uint64_t encode_range(std::uint64_t start, std::uint64_t end) {
  if (start > end)
    throw UsageError("toc: range start " + std::to_string(start) + " after its end " + std::to_string(end));
  if (end >= kTocMaxNs) throw UsageError("toc: range end " + std::to_string(end) + " ns is at or above the ceiling");
  return ((start >> 31) << 32) | ((end >> 32) + 1);
}

std::uint64_t join(std::uint64_t a, std::uint64_t b) noexcept {
  if (a == b) return a;
  // (start code, end code) of each side: a range's own fields, a timestamp's (w >> 32, (w >> 33) + 1).
  const auto codes = [](std::uint64_t w) -> std::pair<std::uint64_t, std::uint64_t> {
    if (w & kFlag) return {w >> 32, (w >> 33) + 1};
    return {w >> 32, w & kLow};
  };
  const auto [sa, ea] = codes(a);
  const auto [sb, eb] = codes(b);
  return (std::min(sa, sb) << 32) | std::max(ea, eb);
}

bool overlaps(std::uint64_t w, std::uint64_t lo, std::uint64_t hi) noexcept {
  const Interval i = decode(w);
  if (i.kind == Kind::Timestamp) return lo <= i.start_ns && i.start_ns < hi;
  return i.start_ns < hi && lo < i.end_ns;
}

bool contains(std::uint64_t w, std::uint64_t lo, std::uint64_t hi) noexcept {
  const Interval i = decode(w);
  if (i.kind == Kind::Timestamp) return lo == i.start_ns && hi == i.start_ns;
  return i.start_ns <= lo && lo <= hi && hi < i.end_ns;
}

std::uint64_t from_unix_ns(std::int64_t unix_ns) {
  // Floor division: the leap table is keyed by whole UTC seconds.
  const std::int64_t secs = unix_ns >= 0 ? unix_ns / 1000000000 : -((-unix_ns + 999999999) / 1000000000);
  std::int64_t offset = 0;
  for (const LeapStep& s : kLeapSteps)
    if (secs >= days_from_civil(s.year, s.month, 1) * 86400)
      offset = static_cast<std::int64_t>(s.tai_minus_utc - 19) * 1000000000;
  return to_internal(unix_ns, kUnixEpochNs, offset, "UTC");
}

std::uint64_t from_gps_ns(std::int64_t gps_ns) { return to_internal(gps_ns, kGpsEpochNs, 0, "GPS"); }

}  // namespace tessera::ragged::toc
