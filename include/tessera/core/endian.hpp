// Explicit little-endian loads and stores. File bytes are never overlaid with structs and
// pointers into them are never assumed aligned: every access goes through memcpy.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

static_assert(std::endian::native == std::endian::little, "tessera supports little-endian hosts only");

namespace tessera {

template <typename T>
inline T load_le(const void* p) noexcept {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
inline void store_le(void* p, T v) noexcept {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(p, &v, sizeof(T));
}

// Appends the little-endian bytes of `v` to a byte vector-like container.
template <typename T, typename Bytes>
inline void append_le(Bytes& out, T v) {
  const auto old = out.size();
  out.resize(old + sizeof(T));
  store_le<T>(out.data() + old, v);
}

inline constexpr std::uint64_t align8(std::uint64_t n) noexcept { return (n + 7) & ~std::uint64_t{7}; }

}  // namespace tessera
