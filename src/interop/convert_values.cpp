// Element conversion on import (see convert_values.hpp). The CF arithmetic follows the reference
// exactly: the product and sum are taken in f64 (no fused multiply-add: the build uses
// -ffp-contract=off) and rounded once to the output type; f32 storage matches the fill by bit
// pattern or within max(1e-6, 1e-6·|fill|) in f32 arithmetic, f64 storage within the same
// tolerance (NaN matching a NaN fill), integer storage only when equal. Unpacked float arrays
// with `_FillValue` / `missing_value` are masked the way xarray masks them (exact equality in the
// stored type); that is tessera's choice, not the reference's (docs/compat.md).
#include "convert_values.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"

namespace tessera::interop::detail {
namespace {

double fill_tolerance(double fill) { return std::max(std::abs(fill) * 1.0e-6, 1.0e-6); }

bool fill_matches_f32(float stored, double fill) {
  const auto fill32 = static_cast<float>(fill);
  return std::bit_cast<std::uint32_t>(stored) == std::bit_cast<std::uint32_t>(fill32) ||
         std::abs(stored - fill32) <= static_cast<float>(fill_tolerance(fill));
}

bool fill_matches_f64(double stored, double fill) {
  if (std::isnan(stored) && std::isnan(fill)) return true;
  return std::abs(stored - fill) <= fill_tolerance(fill);
}

template <typename Out>
void cf_decode(const SourceArray& array, std::span<const std::byte> in, std::span<std::byte> out) {
  const CfPacking& cf = *array.cf;
  const std::size_t in_size = dtype_size(array.stored);
  const std::size_t n = in.size() / in_size;
  visit_dtype(array.stored, [&](auto tag) {
    using S = decltype(tag);
    for (std::size_t i = 0; i < n; ++i) {
      const S s = load_le<S>(in.data() + i * in_size);
      double value;
      bool is_fill;
      if (array.stored == DType::F16 || std::is_same_v<S, float>) {
        const float f =
            array.stored == DType::F16 ? half_to_float(static_cast<std::uint16_t>(s)) : static_cast<float>(s);
        value = static_cast<double>(f);
        is_fill = cf.fill && fill_matches_f32(f, *cf.fill);
      } else if constexpr (std::is_same_v<S, double>) {
        value = s;
        is_fill = cf.fill && fill_matches_f64(s, *cf.fill);
      } else {
        value = static_cast<double>(s);
        is_fill = cf.fill && value == *cf.fill;
      }
      const Out decoded =
          is_fill ? std::numeric_limits<Out>::quiet_NaN() : static_cast<Out>(value * cf.scale + cf.offset);
      store_le<Out>(out.data() + i * sizeof(Out), decoded);
    }
  });
}

// Elements equal to a missing value (in the stored type; a NaN entry matches NaN) become NaN;
// every other element keeps its bits (no arithmetic, so -0.0 stays -0.0).
template <typename T>
void mask_missing(const SourceArray& array, std::span<const std::byte> in, std::span<std::byte> out) {
  std::vector<T> values;
  bool nan_is_missing = false;
  for (const double v : array.missing->values) {
    if (std::isnan(v)) nan_is_missing = true;
    else values.push_back(static_cast<T>(v));
  }
  const std::size_t n = in.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    const T v = load_le<T>(in.data() + i * sizeof(T));
    bool missing = nan_is_missing && std::isnan(v);
    for (const T m : values) missing = missing || v == m;
    store_le<T>(out.data() + i * sizeof(T), missing ? std::numeric_limits<T>::quiet_NaN() : v);
  }
}

}  // namespace

std::optional<MissingValues> missing_values_of(const SourceArray& array, const std::vector<double>& fill_value,
                                               const std::vector<double>& missing_value) {
  if (array.cf || (array.stored != DType::F32 && array.stored != DType::F64)) return std::nullopt;
  MissingValues m;
  m.values = fill_value;
  m.values.insert(m.values.end(), missing_value.begin(), missing_value.end());
  if (m.values.empty()) return std::nullopt;
  return m;
}

DType target_dtype(const SourceArray& array) {
  if (array.cf) {
    if (array.stored == DType::F32 || array.stored == DType::F64) return array.stored;
    return array.cf->double_precision ? DType::F64 : DType::F32;
  }
  switch (array.stored) {
    case DType::I8: return DType::I16;  // no .tet dtype: widened
    case DType::Bool: return DType::U8;
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::F16:
    case DType::F32:
    case DType::F64: return array.stored;
  }
  throw UsageError("no .tet dtype for stored dtype tag " + std::to_string(static_cast<int>(array.stored)));
}

bool needs_conversion(const SourceArray& array) {
  return array.cf.has_value() || array.missing.has_value() || array.stored == DType::I8 || array.stored == DType::Bool;
}

void convert_values(const SourceArray& array, std::string_view path, std::span<const std::byte> in,
                    std::span<std::byte> out) {
  if (array.cf) {
    if (target_dtype(array) == DType::F64) cf_decode<double>(array, in, out);
    else cf_decode<float>(array, in, out);
    return;
  }
  if (array.missing) {
    if (array.stored == DType::F64) mask_missing<double>(array, in, out);
    else mask_missing<float>(array, in, out);
    return;
  }
  switch (array.stored) {
    case DType::I8:
      for (std::size_t i = 0; i < in.size(); ++i)
        store_le<std::int16_t>(out.data() + 2 * i, static_cast<std::int16_t>(load_le<std::int8_t>(in.data() + i)));
      return;
    case DType::Bool:
      for (std::size_t i = 0; i < in.size(); ++i) {
        const auto b = static_cast<std::uint8_t>(in[i]);
        if (b > 1)
          throw FormatError(std::string(path) + ": dataset \"" + array.name + "\": bool element holds " +
                                std::to_string(b) + " (only 0 and 1 are booleans)",
                            std::string(path), array.name);
        out[i] = in[i];
      }
      return;
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::F16:
    case DType::F32:
    case DType::F64: std::memcpy(out.data(), in.data(), std::min(in.size(), out.size())); return;
  }
}

}  // namespace tessera::interop::detail
