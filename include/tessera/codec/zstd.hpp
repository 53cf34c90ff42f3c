// zstd compression with one reusable context per thread. Contexts are created lazily on the
// calling thread and reused for every later call on it, so decoding many chunks costs no
// allocations after the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace tessera::codec {

// Decompresses the zstd frame(s) in `src` into exactly `dst`. Throws FormatError with the text
// `decoded payload length {d} != raw_byte_len {r}` when the output size differs from dst.size(),
// or `zstd error: {name}` for a corrupt frame.
void zstd_decompress_into(std::span<const std::byte> src, std::span<std::byte> dst);

// zstd_decompress_into a block (at most 128 KiB of output) at a time, calling `on_block(produced)`
// after each block that produced bytes: dst[0, produced) is then final. A caller can work on each
// block while it is still in cache, instead of reading the whole output back from memory. The
// same errors as zstd_decompress_into; `on_block` must not throw.
void zstd_decompress_blocks(std::span<const std::byte> src, std::span<std::byte> dst,
                            const std::function<void(std::size_t)>& on_block);

// Checks that the zstd frame(s) in `src` decode to exactly `expected` bytes, throwing the same
// FormatErrors as zstd_decompress_into into a buffer of that size, but streaming through a small
// reused window: a payload that claims gigabytes costs no more memory than a small one (beyond
// the frame's window, at most 128 MiB by libzstd's default limit).
void zstd_check_decoded_length(std::span<const std::byte> src, std::uint64_t expected);

// Decompresses the zstd frame(s) in `src` (one or more concatenated frames, content size declared
// or not) when the decoded size is not known in advance. When every frame declares its content
// size the total is checked against `max_bytes` before anything is allocated; otherwise the
// frames are decoded in streaming mode and decoding stops as soon as the output would exceed
// `max_bytes`. Throws LimitError (`decoded size exceeds the limit of {max_bytes} bytes`) beyond
// the cap and FormatError (`zstd error: {name}`, or `truncated zstd frame`) for corrupt input.
// Frame checksums, when present, are verified. A frame whose declared window exceeds the cap is a
// LimitError too (its decoder alone would need more memory than the cap).
std::vector<std::byte> zstd_decompress_capped(std::span<const std::byte> src, std::uint64_t max_bytes);
// The same into `out` (resized to the decoded size), reusing its storage: a loop that decodes many
// chunks into one buffer allocates, and faults in, no new memory once the buffer has grown.
// `src` must not lie inside `out`.
void zstd_decompress_capped(std::span<const std::byte> src, std::uint64_t max_bytes, std::vector<std::byte>& out);
// The same into the start of `out`, which only grows (see grown_prefix in core/kept.hpp); returns
// the decoded bytes. A buffer reused this way is not cleared again each time it grows back.
std::span<std::byte> zstd_decompress_capped_prefix(std::span<const std::byte> src, std::uint64_t max_bytes,
                                                   std::vector<std::byte>& out);

// Decodes the first bytes of the zstd frame(s) in `src` into `dst`, streaming, and returns how
// many were produced: dst.size(), or fewer when the frames decode to less. Lets a reader check the
// structure at the start of a large payload before it allocates room for all of it. Throws
// FormatError (`zstd error: {name}`) for a corrupt frame.
std::size_t zstd_decompress_prefix(std::span<const std::byte> src, std::span<std::byte> dst);

// Compresses `src` as one frame at `level` (libzstd levels; 0 means libzstd's default, 3).
// `content_size` controls the frame-header content-size field; `checksum` the xxhash trailer.
struct ZstdOptions {
  int level = 3;
  bool content_size = true;
  bool checksum = false;
};
std::vector<std::byte> zstd_compress(std::span<const std::byte> src, const ZstdOptions& options = {});
// Appends to `out` (avoids reallocating in loops) and returns the compressed size.
std::size_t zstd_compress_append(std::span<const std::byte> src, std::vector<std::byte>& out,
                                 const ZstdOptions& options = {});

// The total declared content size of every frame in `src`, if all are well formed and each
// declares its size.
std::optional<std::uint64_t> zstd_declared_total_size(std::span<const std::byte> src);

// The frame's declared content size, if the header is valid and declares one.
std::optional<std::uint64_t> zstd_frame_content_size(std::span<const std::byte> src);

// The most bytes that `compressed_bytes` of valid zstd data can decode to. Every block decodes to
// at most 128 KiB and costs at least 4 bytes (3 of header, 1 of RLE payload), so no frame beats a
// ratio of 32768:1. A size field that claims more than this for a payload is a lie, and a reader
// rejects it before allocating anything of that size.
constexpr std::uint64_t kZstdMaxExpansion = 32768;
constexpr std::uint64_t zstd_max_decoded_size(std::uint64_t compressed_bytes) noexcept {
  return compressed_bytes > UINT64_MAX / kZstdMaxExpansion ? UINT64_MAX : compressed_bytes * kZstdMaxExpansion;
}

}  // namespace tessera::codec
