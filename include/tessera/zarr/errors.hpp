// How the zarr module reports a broken rule: core's fail_at with the object key as the path, so
// every message names the key, the structure and the rule ("6/count/zarr.json:
// codecs[0].configuration.index_codecs: only [bytes] or [bytes, crc32c] are supported") and the
// text the CLI prints after "error: " is enough to find the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::zarr {

// Where a chunk's bytes came from: its object key and, inside a shard, the inner chunk ordinal.
// `label()` is the structure part of messages: "chunk" or "inner chunk 3".
struct ChunkRef {
  std::string_view key;
  bool inner = false;
  std::uint64_t ordinal = 0;
  std::string label() const { return inner ? "inner chunk " + std::to_string(ordinal) : std::string("chunk"); }
};

}  // namespace tessera::zarr

namespace tessera::zarr {

// Refuses a zagg-ragged/2 array (typed vlen-ndarray data type or codec) with the message of the
// ragged specification (§2.9); `array_path` is the array's node path.
[[noreturn]] void refuse_ragged2(std::string_view array_path, std::string_view key, std::string_view structure);

// The node path of a `zarr.json` key ("6/count/zarr.json" → "6/count"; the root's is "").
std::string_view node_path_of(std::string_view metadata_key) noexcept;

}  // namespace tessera::zarr
