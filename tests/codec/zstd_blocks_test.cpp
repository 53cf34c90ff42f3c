// zstd_decompress_blocks against the one-shot decoder (zstd_decompress_into): on valid frames,
// concatenated frames, checksummed frames, every kind of damage and every wrong destination size
// the two give the same bytes or the same FormatError text. The progress calls grow, each at most
// one block (128 KiB) past the one before, and the bytes they report are final when reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"

namespace {

using tessera::FormatError;
using tessera::codec::zstd_compress;
using tessera::codec::zstd_compress_append;
using tessera::codec::zstd_decompress_blocks;
using tessera::codec::zstd_decompress_into;

constexpr std::size_t kBlockMax = std::size_t{128} << 10;

std::vector<std::byte> sample(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n;) {  // runs and noise: compressible, with matches far back
    const std::size_t run = std::min<std::size_t>(1 + rng() % 300, n - i);
    const bool copy = i > 70'000 && rng() % 3 == 0;
    const std::size_t from = copy ? rng() % (i - run) : 0;
    for (std::size_t j = 0; j < run; ++j) v[i + j] = copy ? v[from + j] : static_cast<std::byte>(rng() % 16);
    i += run;
  }
  return v;
}

// The outcome of one decoder: the bytes, or "error: " and the FormatError text.
struct Outcome {
  std::vector<std::byte> bytes;
  std::string error;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

template <typename Decode>
Outcome outcome(std::size_t dst_size, const Decode& decode) {
  Outcome o;
  o.bytes.assign(dst_size, std::byte{0xEE});
  try {
    decode(std::span<std::byte>(o.bytes));
  } catch (const FormatError& e) {
    o.error = e.what();
    o.bytes.clear();
  }
  return o;
}

// Decodes with both decoders, checks every progress call of the block decoder, and returns both outcomes.
std::pair<Outcome, Outcome> both(std::span<const std::byte> src, std::size_t dst_size) {
  const Outcome one_shot = outcome(dst_size, [&](std::span<std::byte> dst) { zstd_decompress_into(src, dst); });
  std::vector<std::size_t> calls;
  std::vector<std::byte> seen;  // dst[0, produced) as each call found it
  const Outcome blocks = outcome(dst_size, [&](std::span<std::byte> dst) {
    zstd_decompress_blocks(src, dst, [&](std::size_t produced) {
      calls.push_back(produced);
      seen.assign(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(produced));
    });
  });
  std::size_t before = 0;
  for (const std::size_t produced : calls) {
    EXPECT_GT(produced, before);
    EXPECT_LE(produced - before, kBlockMax);
    EXPECT_LE(produced, dst_size);
    before = produced;
  }
  if (blocks.error.empty()) {
    EXPECT_EQ(before, dst_size) << "the last call reports the whole output";
    EXPECT_EQ(seen, blocks.bytes) << "the bytes reported by the last call are the output";
  }
  return {one_shot, blocks};
}

void expect_same(std::span<const std::byte> src, std::size_t dst_size, const std::string& what) {
  const auto [one_shot, blocks] = both(src, dst_size);
  EXPECT_EQ(blocks.error, one_shot.error) << what;
  EXPECT_TRUE(blocks.bytes == one_shot.bytes) << what;
}

TEST(ZstdBlocks, ValidFramesDecodeAsTheOneShotDecoderDoes) {
  const auto data = sample(1'000'000, 1);
  for (int level : {1, 3, 19}) {
    for (bool checksum : {false, true}) {
      const auto frame = zstd_compress(data, {.level = level, .content_size = true, .checksum = checksum});
      const auto [one_shot, blocks] = both(frame, data.size());
      EXPECT_EQ(blocks.error, "") << "level " << level;
      EXPECT_TRUE(blocks.bytes == data) << "level " << level;
      EXPECT_TRUE(one_shot == blocks) << "level " << level;
    }
  }
  // Without a content size, empty, and two frames back to back.
  expect_same(zstd_compress(data, {.level = 3, .content_size = false}), data.size(), "no content size");
  expect_same(zstd_compress({}), 0, "empty");
  auto two = zstd_compress(std::span(data).first(300'000));
  zstd_compress_append(std::span(data).subspan(300'000), two, {.level = 1});
  expect_same(two, data.size(), "two frames");
}

TEST(ZstdBlocks, DamageAndWrongSizesFailAsInTheOneShotDecoder) {
  const auto data = sample(400'000, 2);
  const auto frame = zstd_compress(data, {.level = 3, .content_size = true, .checksum = true});
  for (const std::size_t size : {data.size() - 1, data.size() + 1, std::size_t{0}, data.size() / 2})
    expect_same(frame, size, "destination of " + std::to_string(size));
  for (std::size_t len = 0; len < frame.size(); len += 1 + len / 3)
    expect_same(std::span(frame).first(len), data.size(), "truncated to " + std::to_string(len));
  std::mt19937 rng(3);
  for (int i = 0; i < 60; ++i) {
    auto damaged = frame;
    const std::size_t at = rng() % damaged.size();
    damaged[at] ^= static_cast<std::byte>(1 + rng() % 255);
    expect_same(damaged, data.size(), "byte " + std::to_string(at) + " changed");
  }
  auto trailing = frame;
  trailing.push_back(std::byte{0x01});
  expect_same(trailing, data.size(), "trailing byte");
}

// The one-shot and streaming decoders share the thread's context: a failed block decode leaves
// nothing behind that changes their results.
TEST(ZstdBlocks, AFailedDecodeLeavesTheContextClean) {
  const auto data = sample(300'000, 4);
  const auto frame = zstd_compress(data, {.level = 5});
  std::vector<std::byte> out(data.size());
  EXPECT_THROW(zstd_decompress_blocks(std::span(frame).first(frame.size() / 2), out, [](std::size_t) {}), FormatError);
  zstd_decompress_into(frame, out);
  EXPECT_TRUE(out == data);
  EXPECT_TRUE(tessera::codec::zstd_decompress_capped(frame, data.size()) == data);
}

}  // namespace
