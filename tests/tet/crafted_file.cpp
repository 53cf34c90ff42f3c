#include "crafted_file.hpp"

#include <algorithm>

#include "tessera/core/endian.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::tet::crafted {

std::vector<std::byte> u8_file(std::uint64_t shape, std::uint64_t chunk, const std::vector<std::uint64_t>& raw_lens,
                               std::span<const std::byte> payload) {
  DatasetRecord rec{"x", tag_from_dtype(DType::U8), {shape}, {chunk}};
  std::vector<std::byte> blob;
  rec.append_to(blob);
  const std::uint64_t index_offset = align8(40 + blob.size());
  const std::uint64_t index_len = ChunkIndexHeader::kSize + ChunkEntry::kSize * raw_lens.size();
  std::vector<std::byte> out(index_offset + index_len);
  Superblock{kLayoutVersion, 1, 0, index_offset, index_len}.encode_to(out.data());
  store_le<std::uint64_t>(out.data() + 32, blob.size());
  std::copy(blob.begin(), blob.end(), out.begin() + 40);
  ChunkIndexHeader{1, raw_lens.size(), 0, 0}.encode_to(out.data() + index_offset);
  for (std::size_t i = 0; i < raw_lens.size(); ++i) {
    ChunkEntry e;
    e.chunk_index[0] = i;
    e.payload_offset = out.size() + i * payload.size();
    e.raw_byte_len = raw_lens[i];
    e.stored_byte_len = payload.size();
    e.codec = static_cast<std::uint32_t>(Codec::Zstd);
    e.encode_to(out.data() + index_offset + ChunkIndexHeader::kSize + i * ChunkEntry::kSize);
  }
  for (std::size_t i = 0; i < raw_lens.size(); ++i) out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace tessera::tet::crafted
