// Parquet's RLE / bit-packed hybrid encoding (definition levels, dictionary indices, RLE
// booleans): runs `varint(len << 1) value` and bit-packed groups `varint(groups << 1 | 1)` of
// 8 values each, LSB first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessera::columnar::detail {

// Decodes exactly `count` values of `bit_width` bits (0..32) from `bytes` into `out` (resized).
// Bytes left over are ignored (writers may pad the last bit-packed group). Throws FormatError
// naming `file` and `where` when the data ends early or a header is malformed.
void decode_rle_hybrid(std::span<const std::byte> bytes, unsigned bit_width, std::size_t count,
                       std::vector<std::uint32_t>& out, const std::string& file, const std::string& where);

// Appends the hybrid encoding of `values` (each < 2^bit_width, bit_width 1..32) to `out`: runs of
// at least 8 equal values as RLE runs, everything else bit-packed.
void encode_rle_hybrid(std::span<const std::uint32_t> values, unsigned bit_width, std::vector<std::byte>& out);

// Bits needed for values up to `max_value` (at least 1).
unsigned bit_width_for(std::uint64_t max_value) noexcept;

}  // namespace tessera::columnar::detail
