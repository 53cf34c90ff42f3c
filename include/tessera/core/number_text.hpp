// Numbers as the text `.tet` footers hold them (attribute values and coordinate labels, spec
// tet.md §6.6): the shortest digits that read back to the same value, in positional notation.
// One definition for the converter that writes labels and the query engine that matches them.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/core/dtype.hpp"

namespace tessera {

// 0.01, 273.15, -9999, 1e20 → "100000000000000000000". NaN → "NaN", ±inf → "inf" / "-inf". The
// f32 form uses the f32 digits (0.01f → "0.01", not the digits of its f64 widening).
std::string decimal_text(double v);
std::string decimal_text(float v);

// One little-endian element of `dtype` (f16 as its value, bool as 0/1) as decimal text.
std::string element_text(DType dtype, const std::byte* element);

}  // namespace tessera
