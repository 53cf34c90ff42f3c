// Node metadata: the `zarr.json` of a group or an array (spec §1.2–§1.4, §1.8).
//
// `decode_*` turns the bytes into a struct, checking each member on its own (types, names,
// ranges) and refusing what tessera does not implement; `validate` checks the rules that tie
// members together (ranks, the inner chunk dividing the shard, the array→bytes codec matching
// the data type). `encode` writes the bytes zarr-python writes for the same content:
// `json.dumps(obj, indent=2)`, zarr-python's key order, no trailing newline. Attributes are kept
// as JSON (member order and exact integers preserved) and written back as they were read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/zarr/chunk_key.hpp"
#include "tessera/zarr/codec_spec.hpp"
#include "tessera/zarr/data_type.hpp"

namespace tessera::zarr {

inline constexpr std::string_view kMetadataName = "zarr.json";

struct GroupMeta {
  codec::json::Json attributes = codec::json::Json::object();
};

struct ArrayMeta {
  std::vector<std::uint64_t> shape;
  DataType data_type;
  std::vector<std::uint64_t> chunk_shape;  // chunk_grid "regular": the shard when sharded
  ChunkKeyEncoding chunk_key_encoding;
  FillValue fill_value;
  CodecChain codecs;                     // the chain of one read chunk (inner chain if sharded)
  std::optional<ShardingSpec> sharding;  // present: the sharded storage geometry
  codec::json::Json attributes = codec::json::Json::object();
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
};

using NodeMeta = std::variant<GroupMeta, ArrayMeta>;

// Decodes a zarr.json of either kind. `key` is the object's store key, used in messages.
// FormatError: not a UTF-8 JSON object, duplicate keys, zarr_format != 3, unknown node_type,
// missing or mistyped members, invalid fill value, codec kind order. UnsupportedError: data
// types, codecs, chunk grids or key encodings tessera does not implement, non-empty
// storage_transformers, unknown top-level members not marked `"must_understand": false`.
NodeMeta decode_node(std::span<const std::byte> bytes, std::string_view key);
// The same, requiring the node kind (FormatError naming the kind found otherwise).
ArrayMeta decode_array(std::span<const std::byte> bytes, std::string_view key);
GroupMeta decode_group(std::span<const std::byte> bytes, std::string_view key);

// Cross-member rules of an array (FormatError): rank >= 1 (0-d is UnsupportedError); chunk
// shape, dimension names and sharding chunk shape of the array's rank; sharding chunk shape
// dividing the chunk grid's exactly; `vlen-bytes` only with the vlen type and `bytes` only with
// fixed-width types; `bytes` without endian only for 1-byte types.
void validate(const ArrayMeta& meta, std::string_view key);

// zarr.json bytes exactly as zarr-python writes them.
std::string encode(const ArrayMeta& meta);
std::string encode(const GroupMeta& meta);

}  // namespace tessera::zarr
