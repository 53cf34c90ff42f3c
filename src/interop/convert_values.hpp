// Internal to interop: turning elements as a source stores them into `.tet` elements (spec tet.md
// §6.6 "Types" and "CF packing"): int8 → i16 (TD-15), bool → u8 0/1, CF-packed values (float or
// integer storage, TD-19) → stored × scale + offset in f32 or f64 with the fill → NaN. Every input
// format shares these rules.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>
#include <string_view>

#include "tessera/core/dtype.hpp"
#include "tessera/interop/source.hpp"

namespace tessera::interop::detail {

// The `.tet` element type an array is written as.
DType target_dtype(const SourceArray& array);

// The MissingValues of a float array without packing from its `_FillValue` and `missing_value`
// attributes (each given as its numbers; empty when absent); nullopt when there are none or the
// array is not stored as f32/f64.
std::optional<MissingValues> missing_values_of(const SourceArray& array, const std::vector<double>& fill_value,
                                               const std::vector<double>& missing_value);

// Whether elements need converting at all (false: the stored bytes are the `.tet` bytes).
bool needs_conversion(const SourceArray& array);

// Converts `in` (elements of array.stored) into `out` (the same count of target_dtype(array)
// elements). `in` and `out` must not overlap. Throws FormatError naming `path` and the array for a
// bool element other than 0 or 1.
void convert_values(const SourceArray& array, std::string_view path, std::span<const std::byte> in,
                    std::span<std::byte> out);

}  // namespace tessera::interop::detail
