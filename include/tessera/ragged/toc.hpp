// mortie toc time words (`mortie-toc/1`, spec §3.8): unsigned nanoseconds since
// 1850-01-01T00:00:00 on a continuous, leap-free, GPS-aligned scale, packed into one uint64.
//
//   bits 63..32  start field (units of 2^31 ns)
//   bit  31      1 = timestamp, 0 = range
//   bits 30..0   timestamp: the low 31 bits of t; range: end code (units of 2^32 ns, exclusive)
//
// Word 0 is reserved for "unobserved" and decodes to the empty range [0, 0).
#pragma once

#include <cstdint>

namespace tessera::ragged::toc {

// Exclusive ceiling of every encoder: (2^31 − 1)·2^32 ns.
inline constexpr std::uint64_t kTocMaxNs = ((std::uint64_t{1} << 31) - 1) << 32;
// internal = unix_ns + offset + (TAI−UTC − 19) s after 1972; internal = gps_ns + kGpsEpochNs.
inline constexpr std::uint64_t kUnixEpochNs = 3786825600000000000ULL;
inline constexpr std::uint64_t kGpsEpochNs = 4102790400000000000ULL;

enum class Kind : std::uint8_t { Timestamp, Range };

// A decoded word: [start_ns, end_ns) for a range, (t, t) for a timestamp.
struct Interval {
  Kind kind = Kind::Range;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

Kind kind_of(std::uint64_t word) noexcept;
Interval decode(std::uint64_t word) noexcept;
// UsageError when t ≥ kTocMaxNs.
std::uint64_t encode_timestamp(std::uint64_t t);
// The word of the real closed interval [start, end]: start floored to 2^31 ns, end code
// (end >> 32) + 1. UsageError when start > end or end ≥ kTocMaxNs.
std::uint64_t encode_range(std::uint64_t start, std::uint64_t end);
// The join (associative, commutative, idempotent).
std::uint64_t join(std::uint64_t a, std::uint64_t b) noexcept;
// Whether the word's interval intersects [lo, hi) (a timestamp is the point t).
bool overlaps(std::uint64_t word, std::uint64_t lo, std::uint64_t hi) noexcept;
// Whether a word's interval contains the real closed span [lo, hi] (timestamp: lo == hi == t).
bool contains(std::uint64_t word, std::uint64_t lo, std::uint64_t hi) noexcept;

// UTC nanoseconds since 1970 (leap-second table of spec §3.8) and GPS nanoseconds to the
// internal scale. UsageError for instants before 1850 or at/after the ceiling.
std::uint64_t from_unix_ns(std::int64_t unix_ns);
std::uint64_t from_gps_ns(std::int64_t gps_ns);

}  // namespace tessera::ragged::toc
