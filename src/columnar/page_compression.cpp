// Decompression of Parquet page bodies (UNCOMPRESSED, SNAPPY, GZIP, ZSTD).
#include "page_compression.hpp"

#include <cstring>

#include <snappy.h>
#include <zlib.h>

#include "tessera/codec/zstd.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar::detail {
namespace {

void gunzip(std::span<const std::byte> src, std::uint64_t expected, std::vector<std::byte>& out,
            const std::string& file, const std::string& where) {
  // One spare byte detects output beyond the declared size.
  out.resize(checked_size(checked_add(expected, 1, "page size"), "page size"));
  z_stream z{};
  // 15 + 32: zlib or gzip header, detected automatically.
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw FormatError("GZIP page: zlib initialisation failed", file, where);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src.data()));
  z.avail_in = static_cast<uInt>(src.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  bool ok = false;
  while (true) {
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members continue the same output.
      if (z.avail_in == 0) {
        ok = true;
        break;
      }
      if (inflateReset(&z) != Z_OK) break;
      continue;
    }
    if (rc != Z_OK || z.avail_out == 0) break;
  }
  const auto produced = static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(z.next_out) - out.data());
  inflateEnd(&z);
  if (produced > expected)
    throw FormatError("GZIP page decompresses to more than uncompressed_page_size " + std::to_string(expected), file,
                      where);
  if (!ok) throw FormatError("GZIP page is corrupt or truncated", file, where);
  if (produced != expected)
    throw FormatError("GZIP page decompresses to " + std::to_string(produced) + " bytes, uncompressed_page_size is " +
                          std::to_string(expected),
                      file, where);
  out.resize(produced);
}

}  // namespace

void decompress_page(int codec, std::span<const std::byte> src, std::uint64_t expected, std::vector<std::byte>& out,
                     const std::string& file, const std::string& where) {
  switch (static_cast<Compression>(codec)) {
    case Compression::Uncompressed:
      if (src.size() != expected)
        throw FormatError("uncompressed page: compressed_page_size " + std::to_string(src.size()) +
                              " != uncompressed_page_size " + std::to_string(expected),
                          file, where);
      out.assign(src.begin(), src.end());
      return;
    case Compression::Snappy: {
      std::size_t length = 0;
      const auto* p = reinterpret_cast<const char*>(src.data());
      if (!snappy::GetUncompressedLength(p, src.size(), &length))
        throw FormatError("SNAPPY page header is corrupt", file, where);
      if (length != expected)
        throw FormatError("SNAPPY page decompresses to " + std::to_string(length) +
                              " bytes, uncompressed_page_size is " + std::to_string(expected),
                          file, where);
      out.resize(length);
      if (!snappy::RawUncompress(p, src.size(), reinterpret_cast<char*>(out.data())))
        throw FormatError("SNAPPY page is corrupt", file, where);
      return;
    }
    case Compression::Gzip: gunzip(src, expected, out, file, where); return;
    case Compression::Zstd: try { codec::zstd_decompress_capped(src, expected, out);
      } catch (const LimitError&) {
        throw FormatError("ZSTD page decompresses to more than uncompressed_page_size " + std::to_string(expected),
                          file, where);
      } catch (const FormatError& e) {
        throw FormatError(std::string("ZSTD page: ") + e.what(), file, where);
      }
      if (out.size() != expected)
        throw FormatError("ZSTD page decompresses to " + std::to_string(out.size()) +
                              " bytes, uncompressed_page_size is " + std::to_string(expected),
                          file, where);
      return;
    default: throw UnsupportedError("compression codec " + compression_name(codec) + " is not supported", file, where);
  }
}

}  // namespace tessera::columnar::detail
