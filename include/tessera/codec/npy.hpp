// NumPy .npy files: the header numpy writes and a strict reader of it.
//
// Layout: magic `\x93NUMPY`, major and minor version bytes, the header length (u16 in version
// 1.0, u32 in 2.0 and 3.0), then the header: a Python dict literal
// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and ending in
// `\n` so that the data starts at a multiple of 64 bytes. The data follows, exactly
// product(shape) × itemsize bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::codec {

inline constexpr std::string_view kNpyMagic{"\x93NUMPY", 6};
// The data offset is a multiple of this (numpy's ARRAY_ALIGN).
inline constexpr std::uint64_t kNpyAlign = 64;

// The header bytes (magic through the final `\n`) numpy >= 1.24 writes with np.save for a
// C-order little-endian array: version 1.0, or 2.0 when the dict does not fit a u16 length.
// Byte-identical to numpy, including the spare spaces it reserves after the dict so the first
// extent can grow in place.
std::string npy_header(DType dtype, std::span<const std::uint64_t> shape);

struct NpyHeader {
  DType dtype;
  std::vector<std::uint64_t> shape;  // empty for a 0-d array
  bool fortran_order;                // element order of the data: column-major when true
  std::uint64_t data_offset;         // first data byte: magic + version + length field + header
  std::uint64_t data_bytes;          // product(shape) × itemsize, equal to size - data_offset
};

// Reads and checks the header of the .npy file in `src` (versions 1.0, 2.0 and 3.0).
// Throws FormatError (path = src.name(), structure "npy header") naming the broken rule: bad
// magic, unsupported version, header length past the end of the file, a dict that is not
// exactly {'descr': str, 'fortran_order': bool, 'shape': tuple of non-negative ints}, a descr
// tessera has no dtype for (structured, big-endian, complex, strings...), or a data length
// other than product(shape) × itemsize. Throws LimitError for headers above 1 MiB.
NpyHeader parse_npy_header(const io::ByteSource& src);

}  // namespace tessera::codec
