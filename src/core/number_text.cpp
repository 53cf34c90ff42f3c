// Footer number text: shortest round-trip digits in positional notation (core/number_text.hpp).
#include "tessera/core/number_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "tessera/core/endian.hpp"
#include "tessera/core/half.hpp"

namespace tessera {
namespace {

template <typename T>
std::string fixed_shortest(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Positional notation of the shortest round-trip digits: at most ~330 characters for a double.
  char buf[400];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, res.ptr);
}

}  // namespace

std::string decimal_text(double v) { return fixed_shortest(v); }
std::string decimal_text(float v) { return fixed_shortest(v); }

std::string element_text(DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::Bool:
    case DType::U8: return std::to_string(load_le<std::uint8_t>(p));
    case DType::U16: return std::to_string(load_le<std::uint16_t>(p));
    case DType::U32: return std::to_string(load_le<std::uint32_t>(p));
    case DType::U64: return std::to_string(load_le<std::uint64_t>(p));
    case DType::I8: return std::to_string(load_le<std::int8_t>(p));
    case DType::I16: return std::to_string(load_le<std::int16_t>(p));
    case DType::I32: return std::to_string(load_le<std::int32_t>(p));
    case DType::I64: return std::to_string(load_le<std::int64_t>(p));
    case DType::F16: return decimal_text(half_to_float(load_le<std::uint16_t>(p)));
    case DType::F32: return decimal_text(load_le<float>(p));
    case DType::F64: return decimal_text(load_le<double>(p));
  }
  return {};
}

}  // namespace tessera
