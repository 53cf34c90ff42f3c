#include "tessera/codec/zstd.hpp"

// zstd_decompress_blocks uses the block-by-block ("buffer-less") decoder, which libzstd exports but
// declares only under this macro.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/kept.hpp"

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

FormatError length_mismatch(const std::string& got, std::uint64_t expected) {
  return FormatError("decoded payload length " + got + " != raw_byte_len " + std::to_string(expected));
}

// Sum of the declared content sizes of the frames in `src`: ZSTD_CONTENTSIZE_UNKNOWN when one
// frame does not declare its size (or the sum overflows), ZSTD_CONTENTSIZE_ERROR when `src` is not
// a sequence of well-formed frames.
unsigned long long declared_total(std::span<const std::byte> src) {
  unsigned long long declared = 0;
  for (std::span<const std::byte> rest = src; !rest.empty() && declared != ZSTD_CONTENTSIZE_UNKNOWN;) {
    const unsigned long long n = ZSTD_getFrameContentSize(rest.data(), rest.size());
    const std::size_t frame = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    if (n == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(frame)) return ZSTD_CONTENTSIZE_ERROR;
    if (n == ZSTD_CONTENTSIZE_UNKNOWN || declared + n < declared) declared = ZSTD_CONTENTSIZE_UNKNOWN;
    else declared += n;
    rest = rest.subspan(frame);
  }
  return declared;
}

// The frames decode to more than `expected` bytes: name the size they declare when every frame
// declares one and their sum is larger; otherwise (a frame without a size, or a damaged frame that
// decodes past the size it declares) only that the output passed `expected` is known.
FormatError too_long(std::span<const std::byte> src, std::uint64_t expected) {
  const unsigned long long declared = declared_total(src);
  const bool known = declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR && declared > expected;
  return length_mismatch(known ? std::to_string(declared) : "> " + std::to_string(expected), expected);
}

}  // namespace

void zstd_decompress_into(std::span<const std::byte> src, std::span<std::byte> dst) {
  ZSTD_DCtx* ctx = thread_dctx();
  // ZSTD_decompressDCtx refuses to write past dst; a frame larger than dst reports
  // "Destination buffer is too small", which we turn into the length rule of the formats.
  const std::size_t rc = ZSTD_decompressDCtx(ctx, dst.data(), dst.size(), src.data(), src.size());
  if (ZSTD_isError(rc)) {
    if (ZSTD_getErrorCode(rc) == ZSTD_error_dstSize_tooSmall) throw too_long(src, dst.size());
    throw FormatError(std::string("zstd error: ") + ZSTD_getErrorName(rc));
  }
  if (rc != dst.size()) throw length_mismatch(std::to_string(rc), dst.size());
}

void zstd_decompress_blocks(std::span<const std::byte> src, std::span<std::byte> dst,
                            const std::function<void(std::size_t)>& on_block) {
  ZSTD_DCtx* ctx = thread_dctx();
  // The other decoders share the context: leave no half-read frame in it, whatever happens.
  struct SessionReset {
    ZSTD_DCtx* ctx;
    ~SessionReset() { ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only); }
  } reset{ctx};
  const auto fail = [&](ZSTD_ErrorCode code) {
    if (code == ZSTD_error_dstSize_tooSmall) throw too_long(src, dst.size());
    throw FormatError(std::string("zstd error: ") + ZSTD_getErrorString(code));
  };
  std::size_t consumed = 0, produced = 0;
  while (consumed < src.size()) {  // one frame after another, as the one-shot decoder reads them
    check(ZSTD_decompressBegin(ctx), "decompression start");
    for (std::size_t next = ZSTD_nextSrcSizeToDecompress(ctx); next != 0; next = ZSTD_nextSrcSizeToDecompress(ctx)) {
      if (next > src.size() - consumed) fail(ZSTD_error_srcSize_wrong);  // a truncated frame
      // Each block lands right after the previous ones, where its matches look back for them.
      const std::size_t rc =
          ZSTD_decompressContinue(ctx, dst.data() + produced, dst.size() - produced, src.data() + consumed, next);
      if (ZSTD_isError(rc)) fail(ZSTD_getErrorCode(rc));
      consumed += next;
      produced += rc;
      if (rc != 0) on_block(produced);
    }
  }
  if (produced != dst.size()) throw length_mismatch(std::to_string(produced), dst.size());
}

void zstd_check_decoded_length(std::span<const std::byte> src, std::uint64_t expected) {
  ZSTD_DCtx* ctx = thread_dctx();
  ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only);
  if (src.empty()) {  // no frame at all decodes to nothing, as in the one-shot decoder
    if (expected != 0) throw length_mismatch("0", expected);
    return;
  }
  thread_local std::vector<std::byte> window(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  std::uint64_t produced = 0;
  while (true) {
    ZSTD_outBuffer out{window.data(), window.size(), 0};
    const std::size_t rc = ZSTD_decompressStream(ctx, &out, &in);
    if (ZSTD_isError(rc)) throw FormatError(std::string("zstd error: ") + ZSTD_getErrorName(rc));
    produced += out.pos;
    if (produced > expected) throw too_long(src, expected);
    if (rc == 0 && in.pos == in.size) break;  // the last frame ended with the input
    // All input consumed mid-frame with room left in the window: the frame is cut short, which
    // the one-shot decoder reports as a wrong source size.
    if (in.pos == in.size && out.pos < out.size)
      throw FormatError(std::string("zstd error: ") + ZSTD_getErrorString(ZSTD_error_srcSize_wrong));
  }
  if (produced != expected) throw length_mismatch(std::to_string(produced), expected);
}

std::vector<std::byte> zstd_decompress_capped(std::span<const std::byte> src, std::uint64_t max_bytes) {
  std::vector<std::byte> out;
  zstd_decompress_capped(src, max_bytes, out);
  return out;
}

void zstd_decompress_capped(std::span<const std::byte> src, std::uint64_t max_bytes, std::vector<std::byte>& out) {
  const std::size_t n = zstd_decompress_capped_prefix(src, max_bytes, out).size();
  out.resize(n);
}

std::span<std::byte> zstd_decompress_capped_prefix(std::span<const std::byte> src, std::uint64_t max_bytes,
                                                   std::vector<std::byte>& out) {
  const auto too_large = [&] {
    return LimitError("zstd: decoded size exceeds the limit of " + std::to_string(max_bytes) + " bytes");
  };
  // Fast path: every frame declares its size, so the output is sized once, exactly.
  const unsigned long long declared = declared_total(src);
  if (declared == ZSTD_CONTENTSIZE_ERROR) throw FormatError("zstd error: not a sequence of valid zstd frames");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (declared > max_bytes) throw too_large();
    const auto decoded = grown_prefix(out, static_cast<std::size_t>(declared));
    zstd_decompress_into(src, decoded);
    return decoded;
  }
  // Streaming: grow the output geometrically, never past the cap.
  ZSTD_DCtx* ctx = thread_dctx();
  // A frame header may declare a window of up to 128 MiB, which the streaming decoder would
  // allocate before producing a byte; no window larger than the cap is needed to produce at most
  // `max_bytes`, so the window is bounded by it. The context's parameters are restored on exit
  // because the one-shot decoder shares it.
  struct ParameterReset {
    ZSTD_DCtx* ctx;
    ~ParameterReset() { ZSTD_DCtx_reset(ctx, ZSTD_reset_session_and_parameters); }
  } reset{ctx};
  ZSTD_DCtx_reset(ctx, ZSTD_reset_session_and_parameters);
  int window_log = 10;  // ZSTD_WINDOWLOG_ABSOLUTEMIN
  while (window_log < 27 && (std::uint64_t{1} << window_log) < max_bytes) ++window_log;
  check(ZSTD_DCtx_setParameter(ctx, ZSTD_d_windowLogMax, window_log), "window limit");
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  std::size_t produced = 0;
  // The part of `out` the decoder may fill: what it holds already (a reused buffer), never past the cap.
  std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), max_bytes));
  for (;;) {
    std::byte probe{};
    ZSTD_outBuffer o{out.data(), room, produced};
    if (produced == room) {
      if (produced >= max_bytes) {
        // Full at the cap: any further output byte means the cap is exceeded.
        o = ZSTD_outBuffer{&probe, 1, 0};
      } else {
        room = static_cast<std::size_t>(
            std::min<std::uint64_t>(max_bytes, std::max<std::uint64_t>(4096, std::uint64_t{produced} * 2)));
        o = ZSTD_outBuffer{grown_prefix(out, room).data(), room, produced};
      }
    }
    const std::size_t in_before = in.pos;
    const std::size_t out_before = o.pos;
    const std::size_t rc = ZSTD_decompressStream(ctx, &o, &in);
    if (ZSTD_isError(rc) && ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge) throw too_large();
    if (ZSTD_isError(rc)) throw FormatError(std::string("zstd error: ") + ZSTD_getErrorName(rc));
    if (o.dst == &probe) {
      if (o.pos != 0) throw too_large();
    } else {
      produced = o.pos;
    }
    // rc == 0: a frame ended exactly here; with no input left, the stream is complete.
    if (rc == 0 && in.pos == in.size) break;
    if (in.pos == in_before && o.pos == out_before) throw FormatError("truncated zstd frame");
  }
  return {out.data(), produced};
}

std::size_t zstd_decompress_prefix(std::span<const std::byte> src, std::span<std::byte> dst) {
  ZSTD_DCtx* ctx = thread_dctx();
  ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only);
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  ZSTD_outBuffer out{dst.data(), dst.size(), 0};
  while (out.pos < out.size && in.pos < in.size) {
    const std::size_t in_before = in.pos, out_before = out.pos;
    const std::size_t rc = ZSTD_decompressStream(ctx, &out, &in);
    if (ZSTD_isError(rc)) {
      ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only);
      throw FormatError(std::string("zstd error: ") + ZSTD_getErrorName(rc));
    }
    if (in.pos == in_before && out.pos == out_before) break;  // cut short: the whole decode reports it
  }
  // The one-shot decoder shares the context: leave no half-read frame in it.
  ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only);
  return out.pos;
}

std::size_t zstd_compress_append(std::span<const std::byte> src, std::vector<std::byte>& out,
                                 const ZstdOptions& options) {
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

std::optional<std::uint64_t> zstd_declared_total_size(std::span<const std::byte> src) {
  const unsigned long long n = declared_total(src);
  if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  return n;
}

std::optional<std::uint64_t> zstd_frame_content_size(std::span<const std::byte> src) {
  const unsigned long long n = ZSTD_getFrameContentSize(src.data(), src.size());
  if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  return n;
}

}  // namespace tessera::codec
