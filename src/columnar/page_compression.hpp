// Parquet page compression codecs: decompression of UNCOMPRESSED, SNAPPY, GZIP and ZSTD page
// bodies into a buffer of exactly the size the page header declares, and zstd compression for the
// writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessera::columnar::detail {

// Decompresses `src` (compressed with `codec`, a CompressionCodec value) into `out`, which ends
// up exactly `expected` bytes long. A different decoded size or a corrupt stream is a FormatError
// naming `file` and `where`; an unknown or unsupported codec an UnsupportedError. Memory is
// bounded by `expected` (which the caller has checked against its limit).
void decompress_page(int codec, std::span<const std::byte> src, std::uint64_t expected, std::vector<std::byte>& out,
                     const std::string& file, const std::string& where);

}  // namespace tessera::columnar::detail
