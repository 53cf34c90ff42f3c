// The `codecs` list of an array's zarr.json (spec §1.5): what each codec object says, decoded
// into plain structs, and written back the way zarr-python writes them.
//
// The list is zero array→array codecs (none supported), exactly one array→bytes codec (`bytes`,
// `vlen-bytes`, or `sharding_indexed` holding an inner list of the same shape), then bytes→bytes
// codecs (`zstd`, `crc32c`). Sharding is kept apart from the chain it wraps: `CodecChain` is
// always the chain that encodes one read chunk, and `ShardingSpec` (when present) says how read
// chunks are packed into shard objects, so one read path serves both storage geometries.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/codec/json.hpp"

namespace tessera::zarr {

enum class Endian : std::uint8_t { Little, Big };

// `bytes`: elements in C order at their declared width. The endian may be absent only for
// 1-byte types (zarr-python then writes no configuration).
struct BytesCodec {
  std::optional<Endian> endian;
  bool operator==(const BytesCodec&) const = default;
};
// `vlen-bytes`: the framing of spec §2.6 (zarr/vlen.hpp).
struct VlenBytesCodec {
  bool operator==(const VlenBytesCodec&) const = default;
};
struct ZstdCodec {
  int level = 3;
  bool checksum = false;
  bool operator==(const ZstdCodec&) const = default;
};
// `crc32c`: the payload followed by its u32le CRC-32C.
struct Crc32cCodec {
  bool operator==(const Crc32cCodec&) const = default;
};

using ArrayToBytesCodec = std::variant<BytesCodec, VlenBytesCodec>;
using BytesToBytesCodec = std::variant<ZstdCodec, Crc32cCodec>;

// The codecs of one read chunk, in list order (decoding runs them backwards).
struct CodecChain {
  ArrayToBytesCodec array_to_bytes = BytesCodec{Endian::Little};
  std::vector<BytesToBytesCodec> bytes_to_bytes;
  bool is_vlen() const noexcept { return std::holds_alternative<VlenBytesCodec>(array_to_bytes); }
  bool operator==(const CodecChain&) const = default;
};

enum class IndexLocation : std::uint8_t { Start, End };

// `index_codecs`: tessera accepts exactly [bytes(little|big)] or [bytes(...), crc32c].
struct IndexCodecs {
  Endian endian = Endian::Little;
  bool crc32c = true;
  bool operator==(const IndexCodecs&) const = default;
};

// `sharding_indexed` without its inner chain (which is the array's CodecChain).
struct ShardingSpec {
  std::vector<std::uint64_t> chunk_shape;  // the inner (read) chunk
  IndexCodecs index_codecs;
  IndexLocation index_location = IndexLocation::End;
  bool operator==(const ShardingSpec&) const = default;
};

// The decoded `codecs` list.
struct CodecList {
  CodecChain chain;                      // encodes one read chunk
  std::optional<ShardingSpec> sharding;  // present: read chunks are packed into shards
};

// Decodes `codecs`. Throws UnsupportedError for unknown or unsupported codecs (array→array
// codecs such as `transpose`, `gzip`, nested sharding, codecs after `sharding_indexed`,
// unsupported index codecs) and FormatError for malformed objects, kind-order violations, and
// none or several array→bytes codecs. The structure in messages is the JSON path
// (`codecs[0].configuration.index_codecs`).
CodecList decode_codecs(const codec::json::Json& value, std::string_view key);

// The `codecs` list as zarr-python writes it; `item_size` decides whether `bytes` carries a
// configuration (not for 1-byte types).
codec::json::Json encode_codecs(const CodecList& codecs, std::size_t item_size);

}  // namespace tessera::zarr
