// The sharding_indexed index: the observed index tables of the conformance shard objects, the
// absent sentinel, CRC-32C, both index locations and endians, and each entry rule with the entry
// id in its message.
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "support/error_text.hpp"
#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/zarr/shard_index.hpp"

namespace tessera::zarr {
namespace {

using test::from_hex;
using test::hex;

constexpr std::uint64_t kAbsent = ~std::uint64_t{0};
const ShardingSpec kZagg{{4}, IndexCodecs{Endian::Little, true}, IndexLocation::End};

ShardIndex decode_tail(const std::vector<std::byte>& object, std::uint64_t k, const ShardingSpec& spec = kZagg,
                       const std::string& key = "c/0") {
  const std::uint64_t n = shard_index_size(k, spec.index_codecs);
  const auto index = spec.index_location == IndexLocation::End ? std::span(object).last(n) : std::span(object).first(n);
  return ShardIndex::decode(index, k, spec, object.size(), key);
}

TEST(ZarrShardIndex, ObservedIndexTablesOfTheConformanceShards) {
  const auto golden =
      codec::json::parse_strict(testing::read_file_text(test::zagg_dir() / "golden_vectors.json"))["shard_index"];
  EXPECT_EQ(golden["absent_sentinel"], "18446744073709551615");
  EXPECT_TRUE(ShardIndexEntry::absent().is_absent());
  EXPECT_EQ(ShardIndexEntry::absent().offset, std::stoull(golden["absent_sentinel"].get<std::string>()));
  for (const char* name : {"observed_minimal_h_tdigest", "observed_minimal_count", "observed_minimal_morton"}) {
    SCOPED_TRACE(name);
    const auto& g = golden[name];
    const auto object = testing::read_file_bytes(test::zagg_dir() / g["object"].get<std::string>());
    ASSERT_EQ(object.size(), g["object_len"].get<std::uint64_t>());
    const std::uint64_t k = g["K"].get<std::uint64_t>();
    EXPECT_EQ(shard_index_size(k, kZagg.index_codecs), 16 * k + 4);
    const ShardIndex index = decode_tail(object, k);
    ASSERT_EQ(index.size(), k);
    EXPECT_EQ(index.data_region().begin, 0u);
    EXPECT_EQ(index.data_region().end, object.size() - (16 * k + 4));
    for (std::uint64_t i = 0; i < k; ++i) {
      const auto& pair = g["index"][i];
      const auto range = index.chunk_range(i);
      if (pair[0] == "ABSENT") {
        EXPECT_TRUE(index.entry(i).is_absent());
        EXPECT_FALSE(range);
      } else {
        ASSERT_TRUE(range);
        EXPECT_EQ(range->offset, pair[0].get<std::uint64_t>());
        EXPECT_EQ(range->nbytes, pair[1].get<std::uint64_t>());
      }
    }
    EXPECT_EQ(index.present_count(), 3u);
    // Re-encoding the decoded entries reproduces the suffix, CRC included.
    const auto suffix = encode_shard_index(index.entries(), kZagg.index_codecs);
    EXPECT_EQ(hex(suffix), hex(std::span(object).last(16 * k + 4)));
  }
}

TEST(ZarrShardIndex, WorkedExampleCrcOfTheTdigestShard) {
  const auto object =
      testing::read_file_bytes(test::zagg_dir() / "tests/data/spec/minimal/1/1/2/1/3/11213.zarr/6/h_tdigest/c/0");
  EXPECT_EQ(hex(std::span(object).last(4)), "f1ba7cbc");
  EXPECT_EQ(codec::crc32c(std::span(object).last(68).first(64)), 0xbc7cbaf1u);
  const auto count =
      testing::read_file_bytes(test::zagg_dir() / "tests/data/spec/minimal/1/1/2/1/3/11213.zarr/6/count/c/0");
  EXPECT_EQ(hex(std::span(count).last(4)), "fb08f406");
}

std::string error_of(const std::function<void()>& f) { return testing::what_of<FormatError>(f); }

TEST(ZarrShardIndex, IndexLevelRules) {
  const std::vector<ShardIndexEntry> entries{{0, 4}, ShardIndexEntry::absent()};
  auto object = from_hex("aabbccdd");
  const auto index = encode_shard_index(entries, kZagg.index_codecs);
  object.insert(object.end(), index.begin(), index.end());
  EXPECT_NO_THROW(decode_tail(object, 2));
  // Shorter than the index.
  EXPECT_EQ(error_of([&] { ShardIndex::decode({}, 2, kZagg, 30, "g/a/c/3"); }),
            "g/a/c/3: shard index: object of 30 bytes is shorter than its 36-byte index");
  // CRC mismatch.
  auto bad = object;
  bad[6] ^= std::byte{0x10};
  EXPECT_NE(error_of([&] { decode_tail(bad, 2); }).find("c/0: shard index: CRC-32C mismatch: stored "),
            std::string::npos);
  // Index bytes of the wrong length (a store that answered short).
  EXPECT_NE(error_of([&] {
              ShardIndex::decode(std::span(object).first(10), 2, kZagg, object.size(), "k");
            }).find("read 10 index bytes"),
            std::string::npos);
}

TEST(ZarrShardIndex, EntryRulesNameTheEntry) {
  // Data region of a 100-byte object with a 3-entry index (52 bytes) at the end: [0, 48).
  const std::vector<ShardIndexEntry> entries{{kAbsent, 5}, {0, 0}, {40, 9}};
  auto object = std::vector<std::byte>(48);
  const auto index = encode_shard_index(entries, kZagg.index_codecs);
  object.insert(object.end(), index.begin(), index.end());
  const ShardIndex idx = decode_tail(object, 3, kZagg, "g/a/c/0");  // decoding does not check entries
  EXPECT_EQ(error_of([&] { idx.chunk_range(0); }),
            "g/a/c/0: shard index entry 0: only one of offset and nbytes is the absent sentinel 2^64-1");
  EXPECT_EQ(error_of([&] { idx.chunk_range(1); }),
            "g/a/c/0: shard index entry 1: nbytes is 0 (a present inner chunk has at least one byte)");
  EXPECT_EQ(error_of([&] { idx.chunk_range(2); }),
            "g/a/c/0: shard index entry 2: range [40, +9) lies outside the data region [0, 48)");
  // Overflowing ranges are outside too.
  const std::vector<ShardIndexEntry> wrap{{kAbsent - 1, 8}};
  auto o2 = std::vector<std::byte>(8);
  const auto i2 = encode_shard_index(wrap, kZagg.index_codecs);
  o2.insert(o2.end(), i2.begin(), i2.end());
  EXPECT_NE(error_of([&] { decode_tail(o2, 1).chunk_range(0); }).find("outside the data region"), std::string::npos);
}

TEST(ZarrShardIndex, IndexAtTheStartBigEndianWithoutCrc) {
  const ShardingSpec spec{{2}, IndexCodecs{Endian::Big, false}, IndexLocation::Start};
  EXPECT_EQ(shard_index_size(2, spec.index_codecs), 32u);
  const std::vector<ShardIndexEntry> entries{{32, 3}, {35, 1}};
  auto object = encode_shard_index(entries, spec.index_codecs);
  EXPECT_EQ(hex(std::span(object).first(8)), "0000000000000020");  // big-endian offset 32
  for (const char* b : {"01", "02", "03", "04"}) object.push_back(from_hex(b)[0]);
  const ShardIndex idx = decode_tail(object, 2, spec);
  EXPECT_EQ(idx.data_region().begin, 32u);
  EXPECT_EQ(idx.data_region().end, 36u);
  EXPECT_EQ(idx.chunk_range(0)->nbytes, 3u);
  EXPECT_EQ(idx.chunk_range(1)->offset, 35u);
  // An entry pointing into the index itself is outside the data region.
  const std::vector<ShardIndexEntry> into_index{{0, 4}, {35, 1}};
  auto o2 = encode_shard_index(into_index, spec.index_codecs);
  o2.resize(36);
  EXPECT_NE(error_of([&] { decode_tail(o2, 2, spec).chunk_range(0); }).find("entry 0: range [0, +4)"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::zarr
