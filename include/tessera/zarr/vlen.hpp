// The `vlen-bytes` inner-chunk framing (spec §2.6): one read chunk of variable-length byte
// strings, before any bytes→bytes codec.
//
//   u32le element_count            (every element of the chunk, empty ones included)
//   repeat element_count times:
//     u32le length                 (0 for an empty element)
//     length bytes
//
// Unframing checks the count against the chunk's element count, every length against the
// bytes that remain, and that nothing follows the last element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {

inline constexpr std::size_t kVlenCountBytes = 4;
inline constexpr std::size_t kVlenLengthBytes = 4;

// Frames `elements`. Throws LimitError when an element or the count does not fit a u32.
std::vector<std::byte> frame_vlen(std::span<const std::span<const std::byte>> elements);

// Where one element lies inside the framed bytes.
struct VlenElementRef {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
};

// Locates every element of a framed chunk without copying. Throws FormatError naming
// `chunk.key`, the chunk and (when one is at fault) the element index: count missing or !=
// `expected_count`, a length running past the end, trailing bytes.
std::vector<VlenElementRef> unframe_vlen(std::span<const std::byte> framed, std::uint64_t expected_count,
                                         const ChunkRef& chunk);
// The same into `out`, reusing its storage.
void unframe_vlen_into(std::span<const std::byte> framed, std::uint64_t expected_count, const ChunkRef& chunk,
                       std::vector<VlenElementRef>& out);

// The size of a frame whose decoder does not declare it.
inline constexpr std::uint64_t kVlenFrameSizeUnknown = UINT64_MAX;
// Checks what the first `prefix.size()` bytes of a framed chunk of `frame_size` bytes (or
// kVlenFrameSizeUnknown) can decide: the count, each length field present against the frame's
// size, and bytes after the last element. A reader runs it on a small decoded prefix before it
// decodes a large chunk whole, so a compression bomb with a wrong count or lengths is refused
// after a few kilobytes. Throws the FormatErrors of unframe_vlen.
void check_vlen_prefix(std::span<const std::byte> prefix, std::uint64_t frame_size, std::uint64_t expected_count,
                       const ChunkRef& chunk);

// One decoded read chunk of byte strings: owns the unframed bytes, element i is a view into them.
// Thread-safety: immutable once decoded; concurrent reads are fine.
class VlenChunk {
 public:
  VlenChunk() = default;
  // `framed` may hold more bytes than the elements address (a decode buffer reused from a larger
  // chunk keeps its size).
  VlenChunk(std::vector<std::byte> framed, std::vector<VlenElementRef> elements)
      : bytes_(std::move(framed)), elements_(std::move(elements)) {}
  // `count` empty elements: what an absent chunk reads as.
  static VlenChunk empty(std::uint64_t count) { return VlenChunk({}, std::vector<VlenElementRef>(count)); }

  std::size_t size() const noexcept { return elements_.size(); }
  std::span<const std::byte> operator[](std::size_t i) const {
    return {bytes_.data() + elements_[i].offset, elements_[i].length};
  }
  // True when every element is the empty byte string.
  bool all_empty() const noexcept;

  // The chunk's storage, handed over so a decoder can refill it without allocating
  // (decode_vlen_chunk_into); the chunk is left with no elements.
  struct Storage {
    std::vector<std::byte> bytes;
    std::vector<VlenElementRef> elements;
  };
  Storage release() noexcept { return {std::move(bytes_), std::move(elements_)}; }

 private:
  std::vector<std::byte> bytes_;
  std::vector<VlenElementRef> elements_;
};

}  // namespace tessera::zarr
