// Fuzz target for the vlen-bytes unframer: the input is read as framed bytes (with the element
// count it declares, and with a fixed count of 4) and as a zstd-compressed chunk through the
// [vlen-bytes, zstd] chain under a small decode cap. Whatever unframes must frame back to the
// same bytes. A clean tessera::Error is an accepted outcome.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/zarr/codec.hpp"
#include "tessera/zarr/vlen.hpp"

namespace tessera::fuzzing {

struct VlenInconsistency {
  const char* what;
};

inline void check_reframes(std::span<const std::byte> framed, const zarr::VlenChunk& chunk) {
  std::vector<std::span<const std::byte>> elements;
  for (std::size_t i = 0; i < chunk.size(); ++i) elements.push_back(chunk[i]);
  const auto again = zarr::frame_vlen(elements);
  if (!std::equal(again.begin(), again.end(), framed.begin(), framed.end()))
    throw VlenInconsistency{"frame(unframe(x)) != x"};
}

inline void exercise_vlen(std::span<const std::byte> bytes) {
  const zarr::ChunkRef ref{"fuzz/c/0", true, 0};
  const std::uint64_t declared = bytes.size() >= 4 ? load_le<std::uint32_t>(bytes.data()) : 0;
  for (const std::uint64_t count : {declared, std::uint64_t{4}}) {
    try {
      const auto refs = zarr::unframe_vlen(bytes, count, ref);
      const zarr::VlenChunk chunk(std::vector<std::byte>(bytes.begin(), bytes.end()), refs);
      check_reframes(bytes, chunk);
    } catch (const Error&) {
    }
  }
  const zarr::CodecChain chain{zarr::VlenBytesCodec{}, {zarr::ZstdCodec{}}};
  try {
    // The count is unknown before decompressing: try the cap-bounded decode with count 4.
    const zarr::VlenChunk chunk = zarr::decode_vlen_chunk(chain, bytes, 4, std::uint64_t{1} << 20, ref);
    if (chunk.size() != 4) throw VlenInconsistency{"element count differs from the chunk's"};
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_vlen({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
#endif
