// Measures a zstd frame from its header and block headers (RFC 8878 §3.1.1).
#include "zstd_frame.hpp"

#include "tessera/core/endian.hpp"

namespace tessera::cells::detail {

std::optional<FrameExtent> zstd_frame_extent(std::span<const std::byte> src) noexcept {
  constexpr std::uint64_t kMaxBlock = std::uint64_t{128} * 1024;
  std::uint64_t max_content = 0;
  constexpr std::uint32_t kMagic = 0xFD2FB528u;
  const std::uint64_t size = src.size();
  if (size < 5 || load_le<std::uint32_t>(src.data()) != kMagic) return std::nullopt;
  const auto fhd = static_cast<std::uint8_t>(src[4]);
  if (fhd & 0x08) return std::nullopt;  // reserved bit
  const unsigned fcs_flag = fhd >> 6;
  const bool single_segment = (fhd & 0x20) != 0;
  const bool checksum = (fhd & 0x04) != 0;
  static constexpr std::uint64_t kDidSize[4] = {0, 1, 2, 4};
  static constexpr std::uint64_t kFcsSize[4] = {0, 2, 4, 8};
  const std::uint64_t fcs = fcs_flag == 0 && single_segment ? 1 : kFcsSize[fcs_flag];
  std::uint64_t pos = 5 + (single_segment ? 0 : 1) + kDidSize[fhd & 3] + fcs;
  for (;;) {
    if (pos + 3 > size) return std::nullopt;
    const auto b = reinterpret_cast<const std::uint8_t*>(src.data()) + pos;
    const std::uint32_t header = b[0] | (b[1] << 8) | (b[2] << 16);
    const bool last = header & 1;
    const unsigned type = (header >> 1) & 3;
    const std::uint64_t block_size = header >> 3;
    pos += 3;
    if (type == 3) return std::nullopt;  // reserved block type
    pos += type == 1 ? 1 : block_size;   // RLE blocks store one byte
    max_content += type == 2 ? kMaxBlock : block_size;
    if (pos > size) return std::nullopt;
    if (last) break;
  }
  if (checksum) pos += 4;
  if (pos > size) return std::nullopt;
  return FrameExtent{pos, max_content};
}

}  // namespace tessera::cells::detail
