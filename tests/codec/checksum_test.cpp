// CRC-32, CRC-32C and SHA-256 against published vectors, against the CRCs recorded in the shared
// conformance data (deltacells tile CRCs, Zarr v3 shard-index crc32c written by zarr-python), and
// chained/incremental use against one-shot results.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/endian.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::codec::as_bytes;
using tessera::codec::crc32;
using tessera::codec::crc32c;
using tessera::testing::conformance_dir;
using tessera::testing::read_file_bytes;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

json load_json(const fs::path& path) { return json::parse(tessera::testing::read_file_text(path)); }

TEST(Crc32, PublishedVectors) {
  EXPECT_EQ(crc32(as_bytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32(as_bytes("")), 0u);
  EXPECT_EQ(crc32(as_bytes("a")), 0xE8B7BE43u);
  EXPECT_EQ(crc32(as_bytes("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
}

// RFC 3720 appendix B.4 (iSCSI) test patterns, plus the common check value.
TEST(Crc32c, PublishedVectors) {
  EXPECT_EQ(crc32c(as_bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(as_bytes("")), 0u);
  std::vector<std::byte> buf(32);
  EXPECT_EQ(crc32c(buf), 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), std::byte{0xFF});
  EXPECT_EQ(crc32c(buf), 0x62A8AB43u);
  for (std::size_t i = 0; i < 32; ++i) buf[i] = static_cast<std::byte>(i);
  EXPECT_EQ(crc32c(buf), 0x46DD794Eu);
  for (std::size_t i = 0; i < 32; ++i) buf[i] = static_cast<std::byte>(31 - i);
  EXPECT_EQ(crc32c(buf), 0x113FDB5Cu);
}

TEST(Crc, ChainedEqualsOneShotAtEverySplit) {
  // Lengths around SIMD block sizes exercise the kernels' head/tail paths.
  const auto data = random_bytes(1031, 1);
  const std::span<const std::byte> all(data);
  const std::uint32_t whole32 = crc32(all), whole32c = crc32c(all);
  for (std::size_t split = 0; split <= data.size(); ++split) {
    ASSERT_EQ(crc32(all.subspan(split), crc32(all.first(split))), whole32) << split;
    ASSERT_EQ(crc32c(all.subspan(split), crc32c(all.first(split))), whole32c) << split;
  }
  // Many small pieces of varying size.
  std::mt19937 rng(2);
  std::uint32_t c32 = 0, c32c = 0;
  for (std::size_t pos = 0; pos < data.size();) {
    const std::size_t n = std::min<std::size_t>(rng() % 70, data.size() - pos);
    c32 = crc32(all.subspan(pos, n), c32);
    c32c = crc32c(all.subspan(pos, n), c32c);
    pos += n;
  }
  EXPECT_EQ(c32, whole32);
  EXPECT_EQ(c32c, whole32c);
}

TEST(Crc32, AgreesWithZlibOnLargeBuffers) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not available";
  tessera::testing::TempDir dir;
  for (std::size_t n : {1u, 15u, 64u, 4095u, 1u << 20}) {
    const auto data = random_bytes(n, static_cast<unsigned>(n));
    const auto path = dir / "data.bin";
    tessera::testing::write_file_bytes(path, data);
    const auto r = tessera::testing::run_python("import sys, zlib\nprint(zlib.crc32(open(sys.argv[1], 'rb').read()))\n",
                                                {path.string()});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(std::to_string(crc32(data)) + "\n", r.out) << n << " bytes";
  }
}

TEST(Crc32, ConformanceExamples) {
  const auto vectors = load_json(conformance_dir() / "deltacells" / "vectors.json");
  ASSERT_FALSE(vectors.at("crc32_examples").empty());
  for (const auto& ex : vectors.at("crc32_examples")) {
    const auto text = ex.at("ascii").get<std::string>();
    EXPECT_EQ(crc32(as_bytes(text)), ex.at("crc32").get<std::uint32_t>()) << '"' << text << '"';
  }
}

// Each deltacells tile records a CRC-32 over bytes 64..end (everything after the header).
TEST(Crc32, ConformanceTileCrcs) {
  const fs::path dir = conformance_dir() / "deltacells";
  const auto expected = load_json(dir / "expected_tiles.json");
  int checked = 0;
  for (const auto& [name, tile] : expected.at("tiles").items()) {
    const auto bytes = read_file_bytes(dir / "tiles" / name);
    ASSERT_EQ(bytes.size(), tile.at("total_size").get<std::size_t>()) << name;
    ASSERT_GE(bytes.size(), 64u) << name;
    EXPECT_EQ(crc32(std::span(bytes).subspan(64)), tile.at("crc32").get<std::uint32_t>()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

// Zarr v3 sharding with index_location "end" and index codecs [bytes, crc32c]: the object ends
// with 16*K index bytes followed by their crc32c as u32le.
std::uint32_t stored_index_crc(const std::vector<std::byte>& object) {
  return tessera::load_le<std::uint32_t>(object.data() + object.size() - 4);
}
std::uint32_t computed_index_crc(const std::vector<std::byte>& object, std::size_t k) {
  const std::size_t index_len = 16 * k;
  return crc32c(std::span(object).subspan(object.size() - 4 - index_len, index_len));
}

TEST(Crc32c, ConformanceShardIndexGoldenVectors) {
  const fs::path dir = conformance_dir() / "zagg";
  const auto golden = load_json(dir / "golden_vectors.json").at("shard_index");
  int checked = 0;
  for (const auto& [name, entry] : golden.items()) {
    if (!entry.is_object() || !entry.contains("object")) continue;
    const auto object = read_file_bytes(dir / entry.at("object").get<std::string>());
    const auto k = entry.at("K").get<std::size_t>();
    ASSERT_EQ(object.size(), entry.at("object_len").get<std::size_t>()) << name;
    ASSERT_GE(object.size(), 16 * k + 4) << name;
    EXPECT_EQ(computed_index_crc(object, k), stored_index_crc(object)) << name;
    // A flipped index bit must change the CRC, or the check above proves nothing.
    auto damaged = object;
    damaged[object.size() - 5] ^= std::byte{0x01};
    EXPECT_NE(computed_index_crc(damaged, k), stored_index_crc(object)) << name;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

// Every shard object of every sharded array in the zagg fixtures, with K derived from zarr.json.
TEST(Crc32c, ConformanceAllShardIndexes) {
  const fs::path root = conformance_dir() / "zagg";
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().filename() != "zarr.json") continue;
    const auto meta = load_json(entry.path());
    if (meta.value("node_type", "") != "array") continue;
    for (const auto& codec : meta.at("codecs")) {
      if (codec.at("name") != "sharding_indexed") continue;
      const auto& cfg = codec.at("configuration");
      if (cfg.value("index_location", "end") != "end" || cfg.at("index_codecs").size() != 2 ||
          cfg.at("index_codecs")[1].at("name") != "crc32c")
        continue;
      const auto shard_shape = meta.at("chunk_grid").at("configuration").at("chunk_shape");
      const auto inner_shape = cfg.at("chunk_shape");
      std::size_t k = 1;
      for (std::size_t d = 0; d < shard_shape.size(); ++d)
        k *= shard_shape[d].get<std::size_t>() / inner_shape[d].get<std::size_t>();
      const fs::path chunks = entry.path().parent_path() / "c";
      if (!fs::exists(chunks)) continue;
      for (const auto& obj : fs::recursive_directory_iterator(chunks)) {
        if (!obj.is_regular_file()) continue;
        const auto bytes = read_file_bytes(obj.path());
        ASSERT_GE(bytes.size(), 16 * k + 4) << obj.path();
        EXPECT_EQ(computed_index_crc(bytes, k), stored_index_crc(bytes)) << obj.path();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20) << "expected the zagg fixtures to hold a few dozen shard objects";
}

TEST(Sha256, PublishedVectors) {
  using tessera::codec::sha256_hex;
  EXPECT_EQ(sha256_hex(as_bytes("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(as_bytes("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(as_bytes(std::string(1'000'000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  // One million 'a' fed in pieces of 1000 gives the published digest.
  tessera::codec::Sha256 h;
  const std::string piece(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(as_bytes(piece));
  EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  const auto data = random_bytes(10'000, 3);
  const std::string one_shot = tessera::codec::sha256_hex(data);
  std::mt19937 rng(4);
  for (int trial = 0; trial < 20; ++trial) {
    tessera::codec::Sha256 inc;
    for (std::size_t pos = 0; pos < data.size();) {
      const std::size_t n = std::min<std::size_t>(rng() % 200, data.size() - pos);  // includes empty updates
      inc.update(std::span(data).subspan(pos, n));
      pos += n;
    }
    ASSERT_EQ(inc.finish_hex(), one_shot) << trial;
  }
}

TEST(Sha256, BinaryDigestMatchesHex) {
  tessera::codec::Sha256 h;
  h.update(as_bytes("abc"));
  const auto digest = h.finish();
  static constexpr std::uint8_t kAbc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                            0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                            0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  EXPECT_TRUE(std::equal(digest.begin(), digest.end(), std::begin(kAbc)));
}

// deltacells obs fingerprints are the first 24 hex digits of SHA-256 over a canonical payload.
TEST(Sha256, ConformanceFingerprints) {
  const auto vectors = load_json(conformance_dir() / "deltacells" / "vectors.json");
  ASSERT_FALSE(vectors.at("fingerprint_examples").empty());
  for (const auto& ex : vectors.at("fingerprint_examples")) {
    const auto payload = ex.at("canonical_payload").get<std::string>();
    EXPECT_EQ(tessera::codec::sha256_hex(as_bytes(payload)).substr(0, 24), ex.at("fingerprint").get<std::string>());
  }
}

}  // namespace
