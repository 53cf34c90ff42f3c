// Chunk key encodings (spec §1.4): how a chunk's grid coordinates name its object below the
// array's node. `default` writes `c` then the indices joined by the separator (`c/0/2`, `c.3`);
// `v2` writes the indices alone (`0.2`). tessera writes `default` with `/`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"

namespace tessera::zarr {

struct ChunkKeyEncoding {
  enum class Kind : std::uint8_t { Default, V2 };
  Kind kind = Kind::Default;
  char separator = '/';
  bool operator==(const ChunkKeyEncoding&) const = default;
};

// Decodes `chunk_key_encoding` (absent configuration: `/` for default, `.` for v2). Unknown
// names are UnsupportedError; a bad separator or malformed object FormatError.
ChunkKeyEncoding decode_chunk_key_encoding(const codec::json::Json& value, std::string_view key);
codec::json::Json encode_chunk_key_encoding(const ChunkKeyEncoding& encoding);

// The key of chunk `coords`, relative to the array's node.
std::string chunk_key(const ChunkKeyEncoding& encoding, std::span<const std::uint64_t> coords);

// Parses a key relative to the array's node back into coordinates. Returns nullopt when `key`
// is not in the encoding's key space (e.g. `zarr.json`, or a key outside `c/` for `default`);
// throws FormatError (naming `store_key`) when it is in that space but not a chunk of this
// array: wrong number of indices, an index that is not a canonical non-negative decimal (no
// sign, no leading zeros), or an index outside `grid`.
std::optional<std::vector<std::uint64_t>> parse_chunk_key(const ChunkKeyEncoding& encoding, std::string_view key,
                                                          std::span<const std::uint64_t> grid,
                                                          std::string_view store_key);

}  // namespace tessera::zarr
