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
  if (elements.size() > kMax) throw LimitError("vlen-bytes: " + std::to_string(elements.size()) + " elements do not fit a u32 count");
  std::uint64_t total = kVlenCountBytes;
  for (const auto& e : elements) {
    if (e.size() > kMax) throw LimitError("vlen-bytes: an element of " + std::to_string(e.size()) + " bytes does not fit a u32 length");
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

void unframe_vlen_into(std::span<const std::byte> framed, std::uint64_t expected_count, const ChunkRef& chunk,
                       std::vector<VlenElementRef>& out) {
  const std::string structure = chunk.label() + " vlen-bytes framing";
  if (framed.size() < kVlenCountBytes)
    fail<FormatError>(chunk.key, structure, "is " + std::to_string(framed.size()) + " bytes, too short for the element count");
  const std::uint32_t count = load_le<std::uint32_t>(framed.data());
  if (count != expected_count)
    fail<FormatError>(chunk.key, structure,
                      "element count " + std::to_string(count) + " != the chunk's " + std::to_string(expected_count) + " elements");
  // Each element needs at least its length field: a count that cannot fit is refused before
  // the element table is allocated.
  if ((framed.size() - kVlenCountBytes) / kVlenLengthBytes < count)
    fail<FormatError>(chunk.key, structure,
                      std::to_string(count) + " elements need at least " + std::to_string(std::uint64_t{count} * kVlenLengthBytes) +
                          " bytes of lengths, only " + std::to_string(framed.size() - kVlenCountBytes) + " remain");
  out.resize(count);
  std::uint64_t pos = kVlenCountBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (framed.size() - pos < kVlenLengthBytes)
      fail<FormatError>(chunk.key, structure, "element " + std::to_string(i) + ": length field runs past the end");
    const std::uint32_t length = load_le<std::uint32_t>(framed.data() + pos);
    pos += kVlenLengthBytes;
    if (framed.size() - pos < length)
      fail<FormatError>(chunk.key, structure,
                        "element " + std::to_string(i) + ": length " + std::to_string(length) + " exceeds the " +
                            std::to_string(framed.size() - pos) + " remaining bytes");
    out[i] = {pos, length};
    pos += length;
  }
  if (pos != framed.size())
    fail<FormatError>(chunk.key, structure,
                      std::to_string(framed.size() - pos) + " bytes follow the last element");
}

bool VlenChunk::all_empty() const noexcept {
  for (const auto& e : elements_)
    if (e.length != 0) return false;
  return true;
}

}  // namespace tessera::zarr
