#include "tessera/codec/zstd.hpp"

#include <zstd.h>
#include <zstd_errors.h>

#include <memory>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera::codec {
namespace {

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* c) const noexcept { ZSTD_freeDCtx(c); }
};
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};

ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) throw Error("zstd: cannot allocate decompression context");
  return ctx.get();
}

ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx(ZSTD_createCCtx());
  if (!ctx) throw Error("zstd: cannot allocate compression context");
  return ctx.get();
}

void check(std::size_t rc, const char* what) {
  if (ZSTD_isError(rc)) throw Error(std::string("zstd ") + what + ": " + ZSTD_getErrorName(rc));
}

}  // namespace

void zstd_decompress_into(std::span<const std::byte> src, std::span<std::byte> dst) {
  ZSTD_DCtx* ctx = thread_dctx();
  // ZSTD_decompressDCtx refuses to write past dst; a frame larger than dst reports
  // "Destination buffer is too small", which we turn into the length rule of the formats.
  const std::size_t rc = ZSTD_decompressDCtx(ctx, dst.data(), dst.size(), src.data(), src.size());
  if (ZSTD_isError(rc)) {
    if (ZSTD_getErrorCode(rc) == ZSTD_error_dstSize_tooSmall) {
      const auto declared = zstd_frame_content_size(src);
      const std::string got = declared ? std::to_string(*declared) : std::string("> ") + std::to_string(dst.size());
      throw FormatError("decoded payload length " + got + " != raw_byte_len " + std::to_string(dst.size()));
    }
    throw FormatError(std::string("zstd error: ") + ZSTD_getErrorName(rc));
  }
  if (rc != dst.size())
    throw FormatError("decoded payload length " + std::to_string(rc) + " != raw_byte_len " + std::to_string(dst.size()));
}

std::size_t zstd_compress_append(std::span<const std::byte> src, std::vector<std::byte>& out, const ZstdOptions& options) {
  ZSTD_CCtx* ctx = thread_cctx();
  ZSTD_CCtx_reset(ctx, ZSTD_reset_session_and_parameters);
  check(ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, options.level), "level");
  check(ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, options.content_size ? 1 : 0), "content size flag");
  check(ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, options.checksum ? 1 : 0), "checksum flag");
  const std::size_t old = out.size();
  out.resize(old + ZSTD_compressBound(src.size()));
  const std::size_t n = ZSTD_compress2(ctx, out.data() + old, out.size() - old, src.data(), src.size());
  check(n, "compress");
  out.resize(old + n);
  return n;
}

std::vector<std::byte> zstd_compress(std::span<const std::byte> src, const ZstdOptions& options) {
  std::vector<std::byte> out;
  zstd_compress_append(src, out, options);
  return out;
}

std::optional<std::uint64_t> zstd_frame_content_size(std::span<const std::byte> src) {
  const unsigned long long n = ZSTD_getFrameContentSize(src.data(), src.size());
  if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  return n;
}

}  // namespace tessera::codec
