// Frame-level checks and decoding of stream frames (T19) and exception frames (X1, X2).
#include "exception_frame.hpp"

#include "rules.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"
#include "zstd_frame.hpp"

namespace tessera::cells::detail {
namespace {

// The shared part of T19 and X1: one standard frame filling the byte range, with a content size.
std::uint64_t checked_frame_content_size(std::span<const std::byte> frame, const std::string& object,
                                         const std::string& structure, const char* frame_name, const char* rule) {
  const auto extent = zstd_frame_extent(frame);
  if (!extent) fail(object, structure, std::string(frame_name) + " frame is not a complete zstd frame", rule);
  if (extent->compressed_size != frame.size())
    fail(object, structure,
         std::string(frame_name) + " frame occupies " + std::to_string(extent->compressed_size) + " of its " +
             std::to_string(frame.size()) + " bytes (exactly one frame expected)",
         rule);
  const auto content = codec::zstd_frame_content_size(frame);
  if (!content) fail(object, structure, std::string(frame_name) + " frame does not record its content size", rule);
  // Refused before anything is sized from it: the blocks cannot produce more than this.
  if (*content > extent->max_content)
    fail(object, structure,
         std::string(frame_name) + " frame declares " + std::to_string(*content) +
             " bytes but its blocks hold at most " + std::to_string(extent->max_content),
         rule);
  return *content;
}

void decompress(std::span<const std::byte> frame, std::span<std::byte> dst, const std::string& object,
                const std::string& structure, const char* frame_name, const char* rule,
                const std::function<void(std::size_t)>* on_block = nullptr) {
  try {
    if (on_block) codec::zstd_decompress_blocks(frame, dst, *on_block);
    else codec::zstd_decompress_into(frame, dst);
  } catch (const FormatError& e) {
    fail(object, structure, std::string(frame_name) + " frame: " + e.what(), rule);
  }
}

}  // namespace

std::vector<std::byte> exception_bytes(const ExceptionList& list) {
  const std::size_t k = list.size();
  std::vector<std::byte> out(8 * k);
  for (std::size_t i = 0; i < k; ++i) {
    store_le<std::uint32_t>(out.data() + 4 * i, list.positions[i]);
    store_le<std::uint32_t>(out.data() + 4 * (k + i), list.payloads[i]);
  }
  return out;
}

void check_stream_frame(std::span<const std::byte> frame, std::uint64_t expected, const std::string& object,
                        const std::string& structure, const char* frame_name) {
  const std::uint64_t content = checked_frame_content_size(frame, object, structure, frame_name, "T19");
  if (content != expected)
    fail(object, structure,
         std::string(frame_name) + " frame declares " + std::to_string(content) +
             " bytes, expected 2*n = " + std::to_string(expected),
         "T19");
}

void decode_stream_frame(std::span<const std::byte> frame, std::span<std::byte> dst, const std::string& object,
                         const std::string& structure, const char* frame_name,
                         const std::function<void(std::size_t)>& on_block) {
  decompress(frame, dst, object, structure, frame_name, "T19", &on_block);
}

void decode_exception_frame(std::span<const std::byte> frame, std::uint64_t n, const std::string& object,
                            const std::string& structure, const char* frame_name, ExceptionList& out) {
  const std::uint64_t content = checked_frame_content_size(frame, object, structure, frame_name, "X1");
  // n < 2^32 (T12), so 8n cannot overflow.
  if (content % 8 != 0 || content > 8 * n)
    fail(object, structure,
         std::string(frame_name) + " frame declares " + std::to_string(content) +
             " bytes, not a multiple of 8 at most 8*n = " + std::to_string(8 * n),
         "X1");
  thread_local std::vector<std::byte> raw;
  raw.resize(static_cast<std::size_t>(content));
  decompress(frame, raw, object, structure, frame_name, "X1");
  const std::size_t k = static_cast<std::size_t>(content / 8);
  out.positions.resize(k);
  out.payloads.resize(k);
  for (std::size_t i = 0; i < k; ++i) {
    out.positions[i] = load_le<std::uint32_t>(raw.data() + 4 * i);
    out.payloads[i] = load_le<std::uint32_t>(raw.data() + 4 * (k + i));
    if (out.positions[i] >= n || (i > 0 && out.positions[i] <= out.positions[i - 1]))
      fail(object, structure,
           std::string(frame_name) + " position " + std::to_string(i) + " is " + std::to_string(out.positions[i]) +
               (out.positions[i] >= n ? ", not below n = " + std::to_string(n) : ", not above the previous position"),
           "X2");
  }
}

}  // namespace tessera::cells::detail
