// Zarr v3 `data_type` and `fill_value` (spec §1.3, §1.4): the element types tessera reads and
// writes, and the one-element fill pattern absent chunks read as.
//
// Fixed-width types map onto tessera's `DType` table (bool, int8…int64, uint8…uint64,
// float16/32/64). Variable-length bytes has two spellings, `variable_length_bytes` (what
// zarr-python writes) and `bytes` (the extension registry's name); both mean the same type and
// the spelling read is kept so metadata re-encodes as it was. Everything else is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/dtype.hpp"

namespace tessera::zarr {

struct DataType {
  bool vlen = false;           // variable-length byte strings (one per element)
  DType dtype = DType::U8;     // the fixed-width element type; meaningless when vlen
  std::string name = "uint8";  // the `data_type` spelling

  static DataType fixed(DType t);
  // `spelling` is "variable_length_bytes" (default) or "bytes".
  static DataType vlen_bytes(std::string_view spelling = "variable_length_bytes");

  // Bytes per element; 0 for vlen.
  std::size_t item_size() const noexcept { return vlen ? 0 : dtype_size(dtype); }
  bool operator==(const DataType&) const = default;
};

// Decodes `data_type`. Throws UnsupportedError for anything but the types above (complex, raw
// bits, `string`, objects), with the zagg-ragged/2 message for the typed vlen spellings;
// FormatError when the value is not a string or object. `key` is the zarr.json key.
DataType decode_data_type(const codec::json::Json& value, std::string_view key);

// The fill value as one element in little-endian bytes (empty for vlen, whose fill is always
// the empty byte string).
struct FillValue {
  std::vector<std::byte> element;
  bool operator==(const FillValue&) const = default;
};

// Decodes `fill_value` for `type`: integers in range, floats as numbers, "NaN", "Infinity",
// "-Infinity" or "0x" + 2·itemsize hex digits, bool as true/false, vlen only "". Throws
// FormatError naming the rule otherwise.
FillValue decode_fill_value(const codec::json::Json& value, const DataType& type, std::string_view key);

// The JSON zarr-python writes for a fill value: integers plain, floats as numbers (Python repr
// digits) or "NaN"/"Infinity"/"-Infinity" (a NaN whose bits are not the canonical quiet NaN is
// written as its "0x…" bit pattern so it survives), true/false, "" for vlen.
codec::json::Json encode_fill_value(const FillValue& fill, const DataType& type);

// The zero fill of a type (0, false, 0.0, or "").
FillValue zero_fill(const DataType& type);

// Whether a C-order little-endian run of `type` elements all equal `fill`, numerically for
// floats (NaN equals a NaN fill, -0.0 equals 0.0), which is when a writer leaves a chunk absent.
bool all_equal_fill(std::span<const std::byte> elements, const DataType& type, const FillValue& fill);

}  // namespace tessera::zarr
