// The shard index of `sharding_indexed` (spec §1.5): K entries `(offset u64, nbytes u64)` in C
// order over the shard's inner-chunk grid, encoded with the index codecs ([bytes] or
// [bytes, crc32c]) and stored at the end (default) or the start of the shard object.
//
// Decoding checks the index's own bytes (size, CRC-32C) but not the byte ranges it names; each
// entry is checked when it is used (`ShardIndex::chunk_range`), with the entry id in the message,
// so one bad entry never hides the others. An inner chunk is absent when both fields are the
// sentinel 2^64 − 1 (`ShardIndexEntry::absent()`); it then reads as the fill value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/zarr/codec_spec.hpp"

namespace tessera::zarr {

inline constexpr std::uint64_t kShardIndexEntryBytes = 16;
inline constexpr std::uint64_t kShardIndexCrcBytes = 4;

struct ShardIndexEntry {
  std::uint64_t offset = 0;  // first byte of the encoded inner chunk in the shard object
  std::uint64_t nbytes = 0;  // its encoded length

  // The pair that marks an absent inner chunk.
  static constexpr ShardIndexEntry absent() noexcept { return {~std::uint64_t{0}, ~std::uint64_t{0}}; }
  bool is_absent() const noexcept { return offset == absent().offset && nbytes == absent().nbytes; }
  bool operator==(const ShardIndexEntry&) const = default;
};

// Bytes of an encoded index of `entries` entries: 16·K, plus 4 with crc32c. LimitError on
// overflow.
std::uint64_t shard_index_size(std::uint64_t entries, const IndexCodecs& codecs);

// Encodes an index (entries in C order over the inner-chunk grid).
std::vector<std::byte> encode_shard_index(std::span<const ShardIndexEntry> entries, const IndexCodecs& codecs);

// The part of a shard object that holds inner chunks: [0, L − I) with the index at the end,
// [I, L) with the index at the start.
struct ShardDataRegion {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// A decoded shard index together with what its entries are checked against.
// Thread-safety: a value, immutable once decoded; concurrent reads are fine.
class ShardIndex {
 public:
  // Decodes the encoded index `index_bytes` of a shard object of `object_size` bytes whose key
  // is `key`. Throws FormatError when the object is shorter than the index, when `index_bytes`
  // is not exactly the index size, or when the CRC-32C does not match. Entries are not checked.
  static ShardIndex decode(std::span<const std::byte> index_bytes, std::uint64_t entries, const ShardingSpec& spec,
                           std::uint64_t object_size, std::string key);

  std::uint64_t size() const noexcept { return entries_.size(); }
  const ShardIndexEntry& entry(std::uint64_t id) const { return entries_.at(id); }
  const std::vector<ShardIndexEntry>& entries() const noexcept { return entries_; }
  const ShardDataRegion& data_region() const noexcept { return region_; }
  std::uint64_t object_size() const noexcept { return object_size_; }
  const std::string& key() const noexcept { return key_; }

  // Checks entry `id` and returns its byte range [offset, offset + nbytes), or nullopt when the
  // inner chunk is absent. FormatError naming the entry: exactly one field equal to the
  // sentinel, nbytes == 0, or a range outside the data region (overflow-checked).
  std::optional<ShardIndexEntry> chunk_range(std::uint64_t id) const;

  // Number of entries that are not the absent sentinel.
  std::uint64_t present_count() const noexcept;

 private:
  std::vector<ShardIndexEntry> entries_;
  ShardDataRegion region_;
  std::uint64_t object_size_ = 0;
  std::string key_;
};

}  // namespace tessera::zarr
