// The sharding_indexed index: encode, decode (size + CRC), per-entry validation.
#include "tessera/zarr/shard_index.hpp"

#include <bit>
#include <cstdio>

#include "tessera/codec/checksum.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {
namespace {

constexpr std::string_view kStructure = "shard index";

std::uint64_t load_u64(const std::byte* p, Endian endian) {
  const auto v = load_le<std::uint64_t>(p);
  return endian == Endian::Little ? v : __builtin_bswap64(v);
}

void store_u64(std::vector<std::byte>& out, std::uint64_t v, Endian endian) {
  append_le<std::uint64_t>(out, endian == Endian::Little ? v : __builtin_bswap64(v));
}

}  // namespace

std::uint64_t shard_index_size(std::uint64_t entries, const IndexCodecs& codecs) {
  const std::uint64_t table = checked_mul(entries, kShardIndexEntryBytes, "shard index size");
  return codecs.crc32c ? checked_add(table, kShardIndexCrcBytes, "shard index size") : table;
}

std::vector<std::byte> encode_shard_index(std::span<const ShardIndexEntry> entries, const IndexCodecs& codecs) {
  std::vector<std::byte> out;
  out.reserve(checked_size(shard_index_size(entries.size(), codecs), "shard index size"));
  for (const auto& e : entries) {
    store_u64(out, e.offset, codecs.endian);
    store_u64(out, e.nbytes, codecs.endian);
  }
  // crc32c is a bytes→bytes codec applied after `bytes`, so it covers the encoded table.
  if (codecs.crc32c) append_le<std::uint32_t>(out, codec::crc32c(out));
  return out;
}

ShardIndex ShardIndex::decode(std::span<const std::byte> index_bytes, std::uint64_t entries, const ShardingSpec& spec,
                              std::uint64_t object_size, std::string key) {
  const std::uint64_t index_size = shard_index_size(entries, spec.index_codecs);
  if (object_size < index_size)
    fail_at<FormatError>(key, kStructure,
                         "object of " + std::to_string(object_size) + " bytes is shorter than its " +
                             std::to_string(index_size) + "-byte index");
  if (index_bytes.size() != index_size)
    fail_at<FormatError>(
        key, kStructure,
        "read " + std::to_string(index_bytes.size()) + " index bytes, expected " + std::to_string(index_size));
  const std::uint64_t table = entries * kShardIndexEntryBytes;
  if (spec.index_codecs.crc32c) {
    const std::uint32_t stored = load_le<std::uint32_t>(index_bytes.data() + table);
    const std::uint32_t computed = codec::crc32c(index_bytes.first(table));
    if (stored != computed) {
      char text[64];
      std::snprintf(text, sizeof text, "CRC-32C mismatch: stored %08x, computed %08x", stored, computed);
      fail_at<FormatError>(key, kStructure, text);
    }
  }
  ShardIndex out;
  out.entries_.resize(checked_size(entries, "shard index entries"));
  for (std::uint64_t i = 0; i < entries; ++i) {
    const std::byte* p = index_bytes.data() + i * kShardIndexEntryBytes;
    out.entries_[i] = {load_u64(p, spec.index_codecs.endian), load_u64(p + 8, spec.index_codecs.endian)};
  }
  out.region_ = spec.index_location == IndexLocation::End ? ShardDataRegion{0, object_size - index_size}
                                                          : ShardDataRegion{index_size, object_size};
  out.object_size_ = object_size;
  out.key_ = std::move(key);
  return out;
}

std::optional<ShardIndexEntry> ShardIndex::chunk_range(std::uint64_t id) const {
  const ShardIndexEntry& e = entry(id);
  if (e.is_absent()) return std::nullopt;
  const std::string where = std::string(kStructure) + " entry " + std::to_string(id);
  const ShardIndexEntry sentinel = ShardIndexEntry::absent();
  if (e.offset == sentinel.offset || e.nbytes == sentinel.nbytes)
    fail_at<FormatError>(key_, where, "only one of offset and nbytes is the absent sentinel 2^64-1");
  if (e.nbytes == 0) fail_at<FormatError>(key_, where, "nbytes is 0 (a present inner chunk has at least one byte)");
  const auto end = add_u64(e.offset, e.nbytes);
  if (!end || e.offset < region_.begin || *end > region_.end)
    fail_at<FormatError>(key_, where,
                         "range [" + std::to_string(e.offset) + ", +" + std::to_string(e.nbytes) +
                             ") lies outside the data region [" + std::to_string(region_.begin) + ", " +
                             std::to_string(region_.end) + ")");
  return e;
}

std::uint64_t ShardIndex::present_count() const noexcept {
  std::uint64_t n = 0;
  for (const auto& e : entries_) n += e.is_absent() ? 0 : 1;
  return n;
}

}  // namespace tessera::zarr
