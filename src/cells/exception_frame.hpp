// Exception frames of version 2 (spec deltacells.md §2.5): `k` u32 positions then `k` u32
// payloads, little-endian, compressed as one zstd frame. Encoding builds the raw bytes; decoding
// checks X1 (frame shape and size, before allocating) and X2 (positions); X3/X4 need the stored
// streams and are checked by the chunk decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace tessera::cells::detail {

struct ExceptionList {
  std::vector<std::uint32_t> positions;  // strictly increasing, < n
  std::vector<std::uint32_t> payloads;
  std::size_t size() const noexcept { return positions.size(); }
};

// The 8k raw bytes of a frame (positions, then payloads).
std::vector<std::byte> exception_bytes(const ExceptionList& list);

// Decompresses and checks one exception frame of a chunk with `n` nonzeros into `out`
// (reusing its capacity). `frame_name` is `vexc` or `gexc`.
void decode_exception_frame(std::span<const std::byte> frame, std::uint64_t n, const std::string& object,
                            const std::string& structure, const char* frame_name, ExceptionList& out);

// The shape part of T19 (one standard frame filling `frame`, declaring `expected` bytes), checked
// from the headers alone so that a frame claiming a huge size costs nothing before it is refused.
void check_stream_frame(std::span<const std::byte> frame, std::uint64_t expected, const std::string& object,
                        const std::string& structure, const char* frame_name);

// The rest of T19 for a stream frame that check_stream_frame accepted (the decoder checks both of
// a chunk's frames before it sizes anything): it decompresses to exactly `dst.size()` bytes. It is
// decoded a block at a time (codec::zstd_decompress_blocks): `on_block(produced)` runs after each
// block, when dst[0, produced) is final. `on_block` must not throw.
void decode_stream_frame(std::span<const std::byte> frame, std::span<std::byte> dst, const std::string& object,
                         const std::string& structure, const char* frame_name,
                         const std::function<void(std::size_t)>& on_block);

}  // namespace tessera::cells::detail
