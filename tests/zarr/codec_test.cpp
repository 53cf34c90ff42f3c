// The codec chain of one chunk: the vlen-bytes framing golden of the conformance data and each
// framing rule, CRC-32C, zstd (declared and streamed sizes, the decode cap), big-endian bytes,
// bool validation, and round trips of every supported chain.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/zarr/codec.hpp"

namespace tessera::zarr {
namespace {

using test::as_bytes;
using test::from_hex;
using test::hex;

const ChunkRef kChunk{"g/a/c/0", true, 1};

codec::json::Json golden_vectors() {
  return codec::json::parse_strict(testing::read_file_text(test::zagg_dir() / "golden_vectors.json"));
}

std::vector<std::byte> f32_bytes(std::initializer_list<float> values) {
  std::vector<std::byte> out;
  for (const float v : values) append_le<float>(out, v);
  return out;
}

TEST(ZarrVlen, GoldenInnerChunkFramingBothWays) {
  const auto golden = golden_vectors()["vlen_inner_chunk_framing"];
  ASSERT_EQ(golden["input"]["cells_per_chunk"], 16);
  // cell 1 = float32 [[1.0], [2.0]], cell 3 = [[3.0]], all others empty.
  const auto cell1 = f32_bytes({1.0f, 2.0f});
  const auto cell3 = f32_bytes({3.0f});
  std::vector<std::span<const std::byte>> cells(16);
  cells[1] = cell1;
  cells[3] = cell3;
  const std::vector<std::byte> framed = frame_vlen(cells);
  EXPECT_EQ(framed.size(), golden["expected_raw_len"].get<std::size_t>());
  EXPECT_EQ(hex(framed), golden["expected_raw_hex"].get<std::string>());

  const auto raw = from_hex(golden["expected_raw_hex"].get<std::string>());
  const auto refs = unframe_vlen(raw, 16, kChunk);
  ASSERT_EQ(refs.size(), 16u);
  const VlenChunk chunk(raw, refs);
  for (std::size_t i = 0; i < 16; ++i) {
    const auto expected = i == 1   ? std::span<const std::byte>(cell1)
                          : i == 3 ? std::span<const std::byte>(cell3)
                                   : std::span<const std::byte>();
    EXPECT_EQ(hex(chunk[i]), hex(expected)) << "cell " << i;
  }
  EXPECT_FALSE(chunk.all_empty());
  EXPECT_TRUE(VlenChunk::empty(4).all_empty());
}

void expect_unframe_error(const std::vector<std::byte>& framed, std::uint64_t count, const std::string& part) {
  try {
    unframe_vlen(framed, count, kChunk);
    ADD_FAILURE() << "accepted " << hex(framed);
  } catch (const FormatError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("g/a/c/0: inner chunk 1 vlen-bytes framing: ", 0), 0u) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(ZarrVlen, EveryFramingRuleIsEnforced) {
  expect_unframe_error(from_hex("0100"), 1, "too short for the element count");
  expect_unframe_error(from_hex("02000000"
                                "00000000"
                                "00000000"),
                       3, "element count 2 != the chunk's 3 elements");
  expect_unframe_error(from_hex("02000000"
                                "00000000"),
                       2, "2 elements need at least 8 bytes of lengths");
  expect_unframe_error(from_hex("02000000"
                                "07000000"
                                "aabb"
                                "00000000"),
                       2, "element 0: length 7 exceeds the 6 remaining bytes");
  expect_unframe_error(from_hex("02000000"
                                "01000000"
                                "aa"
                                "000000"),
                       2, "element 1: length field runs past the end");
  expect_unframe_error(from_hex("01000000"
                                "01000000"
                                "aa"
                                "bb"),
                       1, "1 bytes follow the last element");
  // A count of 2^32 - 1 with a few bytes is refused before anything is allocated.
  expect_unframe_error(from_hex("ffffffff"
                                "00000000"),
                       0xffffffffu, "need at least");
  EXPECT_EQ(unframe_vlen(from_hex("00000000"), 0, kChunk).size(), 0u);
}

TEST(ZarrCrc32c, CheckValueAndChunkChecksums) {
  EXPECT_EQ(codec::crc32c(as_bytes("123456789")), 0xe3069283u);
  const CodecChain chain{BytesCodec{Endian::Little}, {Crc32cCodec{}}};
  const DataType type = DataType::fixed(DType::U32);
  std::vector<std::byte> values;
  for (std::uint32_t v : {1u, 2u, 3u}) append_le<std::uint32_t>(values, v);
  auto stored = encode_dense_chunk(chain, type, values);
  ASSERT_EQ(stored.size(), 16u);
  EXPECT_EQ(load_le<std::uint32_t>(stored.data() + 12), codec::crc32c(values));
  std::vector<std::byte> out(12);
  decode_dense_chunk(chain, type, stored, out, 1 << 20, kChunk);
  EXPECT_EQ(out, values);
  stored[0] ^= std::byte{1};
  try {
    decode_dense_chunk(chain, type, stored, out, 1 << 20, kChunk);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("g/a/c/0: inner chunk 1 crc32c: CRC-32C mismatch"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(decode_dense_chunk(chain, type, from_hex("0102"), out, 1 << 20, kChunk), FormatError);
}

TEST(ZarrCodecChain, EveryChainRoundTripsDenseAndVlenChunks) {
  std::mt19937_64 rng(7);
  const std::vector<std::vector<BytesToBytesCodec>> tails = {{},
                                                             {ZstdCodec{3, false}},
                                                             {ZstdCodec{1, true}},
                                                             {Crc32cCodec{}},
                                                             {ZstdCodec{3, false}, Crc32cCodec{}},
                                                             {Crc32cCodec{}, ZstdCodec{9, false}}};
  for (const auto& tail : tails) {
    for (const Endian endian : {Endian::Little, Endian::Big}) {
      const CodecChain chain{BytesCodec{endian}, tail};
      const DataType type = DataType::fixed(DType::I64);
      std::vector<std::byte> values(8 * 100);
      for (auto& b : values) b = static_cast<std::byte>(rng() % 7);
      const auto stored = encode_dense_chunk(chain, type, values);
      std::vector<std::byte> out(values.size());
      decode_dense_chunk(chain, type, stored, out, 1 << 20, kChunk);
      EXPECT_EQ(out, values);
      if (tail.empty()) {
        // Big-endian bytes are element-swapped on disk.
        EXPECT_EQ(stored[0], endian == Endian::Little ? values[0] : values[7]);
      }
    }
    const CodecChain vchain{VlenBytesCodec{}, tail};
    std::vector<std::vector<std::byte>> cells(9);
    for (std::size_t i = 0; i < cells.size(); i += 2) cells[i].resize(rng() % 50, std::byte{0x5a});
    std::vector<std::span<const std::byte>> views(cells.begin(), cells.end());
    const auto stored = encode_vlen_chunk(vchain, views);
    const VlenChunk back = decode_vlen_chunk(vchain, stored, cells.size(), 1 << 20, kChunk);
    ASSERT_EQ(back.size(), cells.size());
    for (std::size_t i = 0; i < cells.size(); ++i) EXPECT_EQ(hex(back[i]), hex(cells[i]));
  }
}

TEST(ZarrCodecChain, DenseChunksMustDecodeToTheirExactSize) {
  const DataType type = DataType::fixed(DType::I32);
  std::vector<std::byte> out(16);
  const CodecChain plain{BytesCodec{Endian::Little}, {}};
  try {
    decode_dense_chunk(plain, type, std::vector<std::byte>(12), out, 1 << 20, kChunk);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("decodes to 12 bytes, the chunk needs 16"), std::string::npos) << e.what();
  }
  const CodecChain zstd{BytesCodec{Endian::Little}, {ZstdCodec{}}};
  const auto big = codec::zstd_compress(std::vector<std::byte>(20));
  EXPECT_THROW(decode_dense_chunk(zstd, type, big, out, 1 << 20, kChunk), FormatError);
  const auto small = codec::zstd_compress(std::vector<std::byte>(8));
  EXPECT_THROW(decode_dense_chunk(zstd, type, small, out, 1 << 20, kChunk), FormatError);
  try {
    decode_dense_chunk(zstd, type, from_hex("28b52ffd00"), out, 1 << 20, kChunk);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("g/a/c/0: inner chunk 1 zstd: ", 0), 0u) << e.what();
  }
}

TEST(ZarrCodecChain, BoolElementsMustBeZeroOrOne) {
  const DataType type = DataType::fixed(DType::Bool);
  const CodecChain chain{BytesCodec{}, {}};
  std::vector<std::byte> out(3);
  decode_dense_chunk(chain, type, from_hex("000101"), out, 1 << 20, kChunk);
  try {
    decode_dense_chunk(chain, type, from_hex("000201"), out, 1 << 20, kChunk);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bool element 1 is 2"), std::string::npos) << e.what();
  }
}

TEST(ZarrCodecChain, VlenZstdIsCappedAndAcceptsStreamedAndConcatenatedFrames) {
  const CodecChain chain{VlenBytesCodec{}, {ZstdCodec{}}};
  std::vector<std::byte> payload(100000, std::byte{1});
  std::vector<std::span<const std::byte>> one{payload};
  const auto framed = frame_vlen(one);
  // A frame without a content size decodes in streaming mode.
  const auto streamed = codec::zstd_compress(framed, {.level = 3, .content_size = false, .checksum = true});
  EXPECT_EQ(decode_vlen_chunk(chain, streamed, 1, 1 << 20, kChunk)[0].size(), payload.size());
  // Two frames back to back are one stream.
  auto two = codec::zstd_compress(std::span(framed).first(50000));
  const auto second = codec::zstd_compress(std::span(framed).subspan(50000), {.level = 3, .content_size = false});
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(decode_vlen_chunk(chain, two, 1, 1 << 20, kChunk)[0].size(), payload.size());
  // Beyond the cap: LimitError naming the chunk, declared size or not.
  for (const auto& stored : {codec::zstd_compress(framed), streamed}) {
    try {
      decode_vlen_chunk(chain, stored, 1, 4096, kChunk);
      FAIL();
    } catch (const LimitError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("g/a/c/0: inner chunk 1 zstd: ", 0), 0u) << e.what();
    }
  }
  // Exactly at the cap is fine.
  EXPECT_NO_THROW(decode_vlen_chunk(chain, streamed, 1, framed.size(), kChunk));
  // A truncated stream is a FormatError.
  EXPECT_THROW(decode_vlen_chunk(chain, std::span(streamed).first(streamed.size() - 3), 1, 1 << 20, kChunk),
               FormatError);
  // Without zstd the framed bytes are capped too.
  EXPECT_THROW(decode_vlen_chunk(CodecChain{VlenBytesCodec{}, {}}, framed, 1, 4096, kChunk), LimitError);
}

}  // namespace
}  // namespace tessera::zarr
