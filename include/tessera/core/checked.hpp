// Overflow-checked arithmetic for sizes and offsets read from files. Anything that sizes an
// allocation or a read goes through these first.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera {

inline std::optional<std::uint64_t> add_u64(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::uint64_t> mul_u64(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Throwing forms: `what` names the quantity being computed for the error message.
inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what = "size") {
  if (auto r = add_u64(a, b)) return *r;
  throw LimitError("arithmetic overflow computing " + std::string(what));
}

inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what = "size") {
  if (auto r = mul_u64(a, b)) return *r;
  throw LimitError("arithmetic overflow computing " + std::string(what));
}

// Narrowing to size_t for allocations (a no-op on 64-bit hosts, checked elsewhere).
inline std::size_t checked_size(std::uint64_t v, std::string_view what = "size") {
  if (v > SIZE_MAX) throw LimitError(std::string(what) + " does not fit in memory addressing");
  return static_cast<std::size_t>(v);
}

}  // namespace tessera
