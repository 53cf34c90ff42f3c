// zstd: round trips at several levels, frame-header options, the exact-length rule of
// zstd_decompress_into, corrupt input, and interchange with the zstd command-line tool in both
// directions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"

namespace {

using tessera::FormatError;
using tessera::codec::zstd_compress;
using tessera::codec::zstd_decompress_into;
using tessera::codec::ZstdOptions;
using tessera::testing::run_process;
using tessera::testing::TempDir;

// Half random, half runs: compressible, yet not trivially so.
std::vector<std::byte> sample(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n;) {
    const std::size_t run = std::min<std::size_t>(1 + rng() % 64, n - i);
    const bool repeat = rng() % 2 == 0;
    const auto value = static_cast<std::byte>(rng());
    for (std::size_t j = 0; j < run; ++j) v[i + j] = repeat ? value : static_cast<std::byte>(rng());
    i += run;
  }
  return v;
}

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

std::vector<std::byte> decompress(std::span<const std::byte> frame, std::size_t n) {
  std::vector<std::byte> out(n);
  zstd_decompress_into(frame, out);
  return out;
}

std::string format_error_text(std::span<const std::byte> frame, std::size_t dst_size) {
  std::vector<std::byte> out(dst_size);
  try {
    zstd_decompress_into(frame, out);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no FormatError)";
}

TEST(Zstd, RoundTripsAtSeveralLevels) {
  const auto data = sample(300'000, 1);
  for (int level : {-5, 0, 1, 3, 9, 19}) {
    const auto frame = zstd_compress(data, {.level = level});
    EXPECT_LT(frame.size(), data.size()) << "level " << level;
    EXPECT_EQ(decompress(frame, data.size()), data) << "level " << level;
  }
}

TEST(Zstd, LevelReachesTheEncoder) {
  // Decimal text has structure the strong levels find and the fast ones do not.
  std::mt19937 rng(12);
  std::string text;
  while (text.size() < 200'000) text += std::to_string(rng() % 5000) + (rng() % 8 == 0 ? "\n" : ",");
  const auto data = bytes_of(text);
  const auto fast = zstd_compress(data, {.level = -5});
  const auto strong = zstd_compress(data, {.level = 19});
  EXPECT_LT(strong.size() * 10, fast.size() * 9) << "level 19 " << strong.size() << " vs level -5 " << fast.size();
  EXPECT_EQ(decompress(strong, data.size()), data);
}

TEST(Zstd, EmptyAndTinyInputs) {
  for (std::size_t n : {0u, 1u, 2u, 7u}) {
    const auto data = sample(n, 2);
    const auto frame = zstd_compress(data);
    EXPECT_EQ(decompress(frame, n), data) << n;
    EXPECT_EQ(tessera::codec::zstd_frame_content_size(frame), n) << n;
  }
}

// Frame_Header_Descriptor (byte 4 of a frame): bit 2 is Content_Checksum_flag; the content size
// field is present when the frame records one.
TEST(Zstd, FrameHeaderOptions) {
  const auto data = sample(10'000, 3);
  for (bool content_size : {false, true}) {
    for (bool checksum : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "content_size=" << content_size << " checksum=" << checksum);
      const auto frame = zstd_compress(data, {.level = 3, .content_size = content_size, .checksum = checksum});
      ASSERT_GT(frame.size(), 5u);
      EXPECT_EQ((std::to_integer<unsigned>(frame[4]) & 0x04u) != 0, checksum);
      const auto declared = tessera::codec::zstd_frame_content_size(frame);
      if (content_size) {
        EXPECT_EQ(declared, data.size());
      } else {
        EXPECT_FALSE(declared.has_value());
      }
      EXPECT_EQ(decompress(frame, data.size()), data);
    }
  }
}

TEST(Zstd, ChecksumTrailerIsVerified) {
  const auto data = sample(10'000, 4);
  auto frame = zstd_compress(data, {.level = 3, .content_size = true, .checksum = true});
  frame.back() ^= std::byte{0x55};  // the last 4 bytes are the xxhash64 trailer
  EXPECT_THROW(decompress(frame, data.size()), FormatError);
}

TEST(Zstd, ConcatenatedFramesDecodeInOrder) {
  const auto a = sample(5000, 5), b = sample(7000, 6);
  auto frames = zstd_compress(a);
  const std::size_t first_len = frames.size();
  const std::size_t appended = tessera::codec::zstd_compress_append(b, frames, {.level = 1});
  EXPECT_EQ(frames.size(), first_len + appended);
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(decompress(frames, a.size() + b.size()), expected);
}

TEST(Zstd, DestinationLengthMustMatchExactly) {
  const auto data = sample(1000, 7);
  const auto sized = zstd_compress(data);
  EXPECT_EQ(format_error_text(sized, 999), "decoded payload length 1000 != raw_byte_len 999");
  EXPECT_EQ(format_error_text(sized, 1001), "decoded payload length 1000 != raw_byte_len 1001");
  EXPECT_EQ(format_error_text(sized, 0), "decoded payload length 1000 != raw_byte_len 0");

  // Without a declared size a too-large destination still knows the decoded length exactly.
  const auto unsized = zstd_compress(data, {.level = 3, .content_size = false});
  EXPECT_EQ(format_error_text(unsized, 1001), "decoded payload length 1000 != raw_byte_len 1001");
  const std::string small = format_error_text(unsized, 999);
  EXPECT_EQ(small.rfind("decoded payload length ", 0), 0u) << small;
  EXPECT_TRUE(small.ends_with(" != raw_byte_len 999")) << small;
}

// Only a sum of declared sizes larger than the destination is named as the decoded length: a
// second frame without a size, or a sum no larger than the destination, says only "> N" (never
// "1000 != 1000" from the first frame's header alone).
TEST(Zstd, TooLongNamesOnlyASizeTheFramesDeclare) {
  const auto a = sample(1000, 8), b = sample(100, 9);
  auto sized_pair = zstd_compress(a);
  tessera::codec::zstd_compress_append(b, sized_pair, {.level = 1});
  EXPECT_EQ(format_error_text(sized_pair, 1000), "decoded payload length 1100 != raw_byte_len 1000");

  auto unsized_second = zstd_compress(a);
  tessera::codec::zstd_compress_append(b, unsized_second, {.level = 1, .content_size = false});
  EXPECT_EQ(format_error_text(unsized_second, 1000), "decoded payload length > 1000 != raw_byte_len 1000");
}

// deltacells records the empty frame a level-19 writer produced (libzstd 1.5.4); any decoder
// must read it as zero bytes.
TEST(Zstd, ConformanceEmptyFrame) {
  const auto vectors = nlohmann::json::parse(
      tessera::testing::read_file_text(tessera::testing::conformance_dir() / "deltacells" / "vectors.json"));
  const auto hex = vectors.at("empty_frame_hex_level19").get<std::string>();
  std::vector<std::byte> frame;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    frame.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  ASSERT_EQ(frame.size(), hex.size() / 2);
  EXPECT_TRUE(decompress(frame, 0).empty());
  EXPECT_EQ(tessera::codec::zstd_frame_content_size(frame), 0u);
  EXPECT_EQ(format_error_text(frame, 1), "decoded payload length 0 != raw_byte_len 1");
}

TEST(Zstd, GarbageAndTruncatedInputThrowFormatError) {
  const auto data = sample(4000, 8);
  const auto frame = zstd_compress(data, {.level = 3, .content_size = true, .checksum = true});
  // Not a frame at all.
  EXPECT_THROW(decompress(bytes_of("this is not a zstd frame at all"), 100), FormatError);
  std::mt19937 rng(9);
  for (int i = 0; i < 50; ++i) {
    std::vector<std::byte> junk(1 + rng() % 300);
    for (auto& b : junk) b = static_cast<std::byte>(rng());
    EXPECT_THROW(decompress(junk, data.size()), FormatError) << i;
  }
  // Every truncation of a valid frame.
  for (std::size_t len = 1; len < frame.size(); len += 1 + len / 8)
    EXPECT_THROW(decompress(std::span(frame).first(len), data.size()), FormatError) << len;
  // A valid frame followed by trailing bytes that are not a frame.
  auto trailing = frame;
  trailing.push_back(std::byte{0x01});
  trailing.push_back(std::byte{0x02});
  EXPECT_THROW(decompress(trailing, data.size()), FormatError);
  EXPECT_THROW(decompress({}, 10), FormatError);
}

TEST(Zstd, ContextsArePerThread) {
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const auto data = sample(2000 + static_cast<std::size_t>(i) * 37, static_cast<unsigned>(t * 100 + i));
        const auto frame = zstd_compress(data, {.level = 1 + i % 5});
        if (decompress(frame, data.size()) != data) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

// The zstd CLI is an independent encoder and decoder.
TEST(Zstd, DecodesFramesWrittenByTheZstdCli) {
  TempDir dir;
  const auto data = sample(200'000, 10);
  const auto path = dir / "data.bin";
  tessera::testing::write_file_bytes(path, data);

  // From a file: the CLI records the content size and a checksum.
  const auto from_file = run_process({"zstd", "-q", "-c", "-7", path.string()});
  ASSERT_EQ(from_file.rc, 0) << from_file.err;
  const auto frame = bytes_of(from_file.out);
  EXPECT_EQ(tessera::codec::zstd_frame_content_size(frame), data.size());
  EXPECT_EQ(decompress(frame, data.size()), data);

  // From a pipe: streaming, so the size is unknown when the header is written.
  const std::string as_text(reinterpret_cast<const char*>(data.data()), data.size());
  const auto from_pipe = run_process({"zstd", "-q", "-c", "--no-check"}, {.stdin_data = as_text});
  ASSERT_EQ(from_pipe.rc, 0) << from_pipe.err;
  const auto streamed = bytes_of(from_pipe.out);
  EXPECT_FALSE(tessera::codec::zstd_frame_content_size(streamed).has_value());
  EXPECT_EQ(decompress(streamed, data.size()), data);
}

TEST(Zstd, ZstdCliDecodesOurFrames) {
  const auto data = sample(150'000, 11);
  for (const ZstdOptions& options : {ZstdOptions{.level = 3, .content_size = true, .checksum = true},
                                     ZstdOptions{.level = 19, .content_size = false, .checksum = false}}) {
    const auto frame = zstd_compress(data, options);
    const std::string frame_text(reinterpret_cast<const char*>(frame.data()), frame.size());
    const auto r = run_process({"zstd", "-q", "-d", "-c"}, {.stdin_data = frame_text});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(bytes_of(r.out), data) << "level " << options.level;
  }
}

}  // namespace

namespace {

using tessera::LimitError;
using tessera::codec::zstd_decompress_capped;
using tessera::codec::zstd_decompress_capped_prefix;

// A reused buffer keeps its size: each decode lands in its first bytes, whether the frames declare
// their sizes (one-shot) or not (streaming), and the plain form still resizes to the decoded size.
TEST(Zstd, CappedPrefixReusesABufferWithoutShrinkingIt) {
  const auto big = sample(300000, 1), small = sample(5000, 2);
  std::vector<std::byte> buffer;
  for (const bool sized : {true, false}) {
    SCOPED_TRACE(sized ? "sizes declared" : "streaming");
    const ZstdOptions options{.level = 3, .content_size = sized};
    const auto got_big = zstd_decompress_capped_prefix(zstd_compress(big, options), 1 << 20, buffer);
    EXPECT_EQ(std::vector<std::byte>(got_big.begin(), got_big.end()), big);
    const std::size_t grown = buffer.size();
    EXPECT_GE(grown, big.size());
    const auto got_small = zstd_decompress_capped_prefix(zstd_compress(small, options), 1 << 20, buffer);
    EXPECT_EQ(got_small.data(), buffer.data());
    EXPECT_EQ(std::vector<std::byte>(got_small.begin(), got_small.end()), small);
    EXPECT_EQ(buffer.size(), grown);  // not shrunk: the next large decode clears nothing again
    std::vector<std::byte> exact = buffer;
    zstd_decompress_capped(zstd_compress(small, options), 1 << 20, exact);
    EXPECT_EQ(exact, small);
  }
}

// The cap holds even when the reused buffer is already larger than it: a buffer grown by an
// earlier, larger cap must not let a streaming decode write past this call's limit.
TEST(Zstd, CappedPrefixKeepsTheCapInALargerBuffer) {
  const auto data = sample(100000, 3);
  std::vector<std::byte> buffer(1 << 20);
  for (const bool sized : {true, false}) {
    SCOPED_TRACE(sized ? "sizes declared" : "streaming");
    const auto frame = zstd_compress(data, {.level = 3, .content_size = sized});
    EXPECT_THROW(zstd_decompress_capped_prefix(frame, data.size() - 1, buffer), LimitError);
    const auto at_cap = zstd_decompress_capped_prefix(frame, data.size(), buffer);
    EXPECT_EQ(std::vector<std::byte>(at_cap.begin(), at_cap.end()), data);
    EXPECT_EQ(buffer.size(), std::size_t{1} << 20);
  }
}

}  // namespace
