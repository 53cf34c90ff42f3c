// Fuzz target for shard objects: the input is the one shard object of a 16-element array read
// under four metadata templates (the conformance fixtures' dense int32 and vlen+zstd layouts,
// an index at the start, big-endian without CRC, and a 2-D uint64 shard). Each template reads
// every inner chunk twice, through the whole-object path (one GET) and the ranged path (index,
// then the chunk), and the two must agree. A clean tessera::Error is an accepted outcome.
//
// The corruption sweep (tests/zarr/corruption_test.cpp) includes this file and drives
// `exercise_zarr_array` over every conformance array.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::fuzzing {

struct ZarrArrayInconsistency {
  const char* what;
};

// A decode cap that keeps one input from allocating without bound.
inline constexpr std::uint64_t kFuzzMaxChunkBytes = std::uint64_t{4} << 20;

// Reads every read chunk of `array` both ways and compares. Returns the number of chunks read.
inline std::uint64_t exercise_zarr_array(const zarr::Array& array) {
  std::uint64_t objects = 1;
  for (const auto n : array.object_grid()) objects *= n;
  if (objects > 4096 || (!array.data_type().vlen && array.read_chunk_bytes() > kFuzzMaxChunkBytes)) return 0;
  std::uint64_t chunks = 0;
  std::vector<std::byte> a, b;
  if (!array.data_type().vlen) a.resize(array.read_chunk_bytes()), b.resize(array.read_chunk_bytes());
  for (const zarr::Coords& object : array.list_stored_objects()) {
    const zarr::StoredObject whole = array.read_object(object);
    for (std::uint64_t inner = 0; inner < whole.chunk_count(); ++inner) {
      const zarr::Coords rc = array.read_chunk_of(object, inner);
      if (!array.in_read_chunk_grid(rc)) continue;
      ++chunks;
      if (array.data_type().vlen) {
        const zarr::VlenChunk x = whole.read_vlen_chunk(inner);
        const zarr::VlenChunk y = array.read_vlen_chunk(rc);
        if (x.size() != y.size()) throw ZarrArrayInconsistency{"vlen chunk sizes differ between read paths"};
        for (std::size_t i = 0; i < x.size(); ++i)
          if (!std::equal(x[i].begin(), x[i].end(), y[i].begin(), y[i].end()))
            throw ZarrArrayInconsistency{"vlen elements differ between read paths"};
      } else {
        whole.read_chunk(inner, a);
        array.read_chunk(rc, b);
        if (a != b) throw ZarrArrayInconsistency{"dense chunks differ between read paths"};
      }
    }
  }
  if (!array.data_type().vlen) {
    std::uint64_t total = array.data_type().item_size();
    for (const auto n : array.shape()) total *= n;
    if (total <= kFuzzMaxChunkBytes) array.read_all();
  }
  return chunks;
}

inline std::uint64_t exercise_zarr_array(const io::Store& store, const std::string& path) {
  return exercise_zarr_array(zarr::Array::open(store, path, zarr::ReadOptions{.max_chunk_bytes = kFuzzMaxChunkBytes}));
}

inline constexpr std::string_view kShardTemplates[] = {
    // The conformance `count` array: int32, 16 cells, 4 inner chunks, [bytes little, crc32c] at the end.
    R"({"shape":[16],"data_type":"int32","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},)"
    R"("chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":0,"codecs":[{"name":"sharding_indexed",)"
    R"("configuration":{"chunk_shape":[4],"codecs":[{"name":"bytes","configuration":{"endian":"little"}}],"index_codecs":)"
    R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}],"zarr_format":3,"node_type":"array"})",
    // The conformance ragged payload: vlen-bytes + zstd inner chunks.
    R"({"shape":[16],"data_type":"variable_length_bytes","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},)"
    R"("chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"sharding_indexed",)"
    R"("configuration":{"chunk_shape":[4],"codecs":[{"name":"vlen-bytes","configuration":{}},{"name":"zstd","configuration":{"level":3,"checksum":false}}],)"
    R"("index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}],"zarr_format":3,"node_type":"array"})",
    // Index at the start, big-endian, no CRC; inner chunks are vlen-bytes + crc32c.
    R"({"shape":[16],"data_type":"bytes","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},)"
    R"("chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"sharding_indexed",)"
    R"("configuration":{"chunk_shape":[8],"codecs":[{"name":"vlen-bytes","configuration":{}},{"name":"crc32c"}],)"
    R"("index_codecs":[{"name":"bytes","configuration":{"endian":"big"}}],"index_location":"start"}}],"zarr_format":3,"node_type":"array"})",
    // 2-D uint64 with big-endian zstd inner chunks, the index at the end.
    R"({"shape":[4,4],"data_type":"uint64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,4]}},)"
    R"("chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":1,"codecs":[{"name":"sharding_indexed",)"
    R"("configuration":{"chunk_shape":[2,2],"codecs":[{"name":"bytes","configuration":{"endian":"big"}},{"name":"zstd","configuration":{"level":1,"checksum":true}}],)"
    R"("index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}],"zarr_format":3,"node_type":"array"})",
};

inline void exercise_shard_object(std::span<const std::byte> object) {
  // The templates are decoded once; each input only builds a store and an Array over it.
  static const std::vector<zarr::ArrayMeta> metas = [] {
    std::vector<zarr::ArrayMeta> out;
    for (const std::string_view meta : kShardTemplates)
      out.push_back(zarr::decode_array({reinterpret_cast<const std::byte*>(meta.data()), meta.size()}, "a/zarr.json"));
    return out;
  }();
  for (std::size_t t = 0; t < metas.size(); ++t) {
    io::MemoryStore store;
    store.put(metas[t].shape.size() == 2 ? "a/c/0/0" : "a/c/0", object);
    try {
      exercise_zarr_array(zarr::Array(store, "a", metas[t], zarr::ReadOptions{.max_chunk_bytes = kFuzzMaxChunkBytes}));
    } catch (const Error&) {
      // Rejected under this template; the next one reads the same bytes differently.
    }
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_shard_object({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
#endif
