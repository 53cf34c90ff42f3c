// vlen-bytes framing (spec §2.6).
#include "tessera/zarr/vlen.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::zarr {

std::vector<std::byte> frame_vlen(std::span<const std::span<const std::byte>> elements) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (elements.size() > kMax)
    throw LimitError("vlen-bytes: " + std::to_string(elements.size()) + " elements do not fit a u32 count");
  std::uint64_t total = kVlenCountBytes;
  for (const auto& e : elements) {
    if (e.size() > kMax)
      throw LimitError("vlen-bytes: an element of " + std::to_string(e.size()) + " bytes does not fit a u32 length");
    total = checked_add(total, kVlenLengthBytes + e.size(), "vlen-bytes chunk size");
  }
  std::vector<std::byte> out;
  out.reserve(checked_size(total, "vlen-bytes chunk size"));
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(elements.size()));
  for (const auto& e : elements) {
    append_le<std::uint32_t>(out, static_cast<std::uint32_t>(e.size()));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

std::vector<VlenElementRef> unframe_vlen(std::span<const std::byte> framed, std::uint64_t expected_count,
                                         const ChunkRef& chunk) {
  std::vector<VlenElementRef> out;
  unframe_vlen_into(framed, expected_count, chunk, out);
  return out;
}

namespace {

// Walks the framing of a chunk of `frame_size` bytes (kVlenFrameSizeUnknown when not known) whose
// first `framed.size()` bytes are given: all of them for a whole chunk, then with `out` the
// element table is filled. Every rule the given bytes can decide is checked; the walk stops at
// the first length field beyond them.
void walk_vlen_framing(std::span<const std::byte> framed, std::uint64_t frame_size, std::uint64_t expected_count,
                       const ChunkRef& chunk, std::vector<VlenElementRef>* out) {
  const std::string structure = chunk.label() + " vlen-bytes framing";
  const bool known = frame_size != kVlenFrameSizeUnknown;
  const bool whole = framed.size() == frame_size;
  if (known && frame_size < kVlenCountBytes)
    fail_at<FormatError>(chunk.key, structure,
                         "is " + std::to_string(frame_size) + " bytes, too short for the element count");
  if (framed.size() < kVlenCountBytes) return;
  const std::uint32_t count = load_le<std::uint32_t>(framed.data());
  if (count != expected_count)
    fail_at<FormatError>(
        chunk.key, structure,
        "element count " + std::to_string(count) + " != the chunk's " + std::to_string(expected_count) + " elements");
  // Each element needs at least its length field: a count that cannot fit is refused before
  // the element table is allocated.
  if (known && (frame_size - kVlenCountBytes) / kVlenLengthBytes < count)
    fail_at<FormatError>(chunk.key, structure,
                         std::to_string(count) + " elements need at least " +
                             std::to_string(std::uint64_t{count} * kVlenLengthBytes) + " bytes of lengths, only " +
                             std::to_string(frame_size - kVlenCountBytes) + " remain");
  if (out) out->resize(count);
  std::uint64_t pos = kVlenCountBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (known && frame_size - pos < kVlenLengthBytes)
      fail_at<FormatError>(chunk.key, structure, "element " + std::to_string(i) + ": length field runs past the end");
    if (framed.size() < pos || framed.size() - pos < kVlenLengthBytes) return;  // beyond the prefix
    const std::uint32_t length = load_le<std::uint32_t>(framed.data() + pos);
    pos += kVlenLengthBytes;
    if (known && frame_size - pos < length)
      fail_at<FormatError>(chunk.key, structure,
                           "element " + std::to_string(i) + ": length " + std::to_string(length) + " exceeds the " +
                               std::to_string(frame_size - pos) + " remaining bytes");
    if (out) (*out)[i] = {pos, length};
    pos += length;
  }
  if ((whole && pos != frame_size) || (!whole && pos < framed.size()))
    fail_at<FormatError>(chunk.key, structure,
                         std::to_string((whole ? frame_size : framed.size()) - pos) + " bytes follow the last element");
  if (!whole && known && pos != frame_size)
    fail_at<FormatError>(chunk.key, structure, std::to_string(frame_size - pos) + " bytes follow the last element");
}

}  // namespace

void unframe_vlen_into(std::span<const std::byte> framed, std::uint64_t expected_count, const ChunkRef& chunk,
                       std::vector<VlenElementRef>& out) {
  walk_vlen_framing(framed, framed.size(), expected_count, chunk, &out);
}

void check_vlen_prefix(std::span<const std::byte> prefix, std::uint64_t frame_size, std::uint64_t expected_count,
                       const ChunkRef& chunk) {
  walk_vlen_framing(prefix, frame_size, expected_count, chunk, nullptr);
}

bool VlenChunk::all_empty() const noexcept {
  for (const auto& e : elements_)
    if (e.length != 0) return false;
  return true;
}

}  // namespace tessera::zarr
