// A vlen chunk's decoded size is only capped (spec §1.7, 1 GiB), so a few kilobytes of zstd can
// claim a gigabyte. A reader checks the framing on the first decoded bytes of a large payload
// before it decodes the whole: a bomb whose count or lengths are wrong is refused with the
// framing error and costs kilobytes, not the gigabyte (docs/reliability.md). Each case reads in a
// forked child and bounds that child's own peak resident set size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"
#include "tessera/zarr/vlen.hpp"

namespace tessera::zarr {
namespace {

using tessera::testing::run_in_child;
using tessera::testing::zstd_zeros_frame;

// Far below the 1 GiB the bombs claim, far above a reader's own needs (a sanitizer build included).
constexpr long kPeakRssLimitKib = 256 * 1024;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Puts into `store` a 1-D vlen array "a" of `elements` elements in one chunk, codecs
// [vlen-bytes, zstd], whose only chunk object is `chunk`.
void put_array(io::MemoryStore& store, std::uint64_t elements, const std::vector<std::byte>& chunk) {
  const std::string n = std::to_string(elements);
  const std::string meta =
      R"({"zarr_format":3,"node_type":"array","shape":[)" + n +
      R"(],"data_type":"variable_length_bytes","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[)" + n +
      R"(]}},"chunk_key_encoding":{"name":"default"},"fill_value":"",)"
      R"("codecs":[{"name":"vlen-bytes"},{"name":"zstd","configuration":{"level":3,"checksum":false}}]})";
  store.put("a/zarr.json", std::as_bytes(std::span(meta)));
  store.put("a/c/0", chunk);
}

// The first bytes of a framed chunk: the u32 count, then the given u32 lengths.
std::vector<std::byte> framing(std::uint32_t count, const std::vector<std::uint32_t>& lengths) {
  std::vector<std::byte> out;
  append_le<std::uint32_t>(out, count);
  for (const std::uint32_t len : lengths) append_le<std::uint32_t>(out, len);
  return out;
}

tessera::testing::RunResult read_chunk_in_child(const io::MemoryStore& store) {
  return run_in_child([&] {
    const Array array = Array::open(store, "a");
    (void)array.read_vlen_chunk(Coords{0});
  });
}

struct BombCase {
  const char* name;
  std::uint64_t elements;
  std::vector<std::byte> prefix;
  bool declare_size;
  const char* expected;
};

TEST(VlenBomb, WrongFramingIsRefusedOnTheFirstBytes) {
  const std::vector<BombCase> cases = {
      // 1 GiB of zeros: the count reads 0.
      {"zeros", 8, {}, true, "element count 0 != the chunk's 8 elements"},
      {"zeros, size not declared", 8, {}, false, "element count 0 != the chunk's 8 elements"},
      // The right count, eight empty elements, then a gigabyte nobody framed.
      {"trailing", 8, framing(8, std::vector<std::uint32_t>(8, 0)), true, "bytes follow the last element"},
      {"trailing, size not declared", 8, framing(8, std::vector<std::uint32_t>(8, 0)), false,
       "bytes follow the last element"},
      // A length field claiming more than the frame holds.
      {"length", 2, framing(2, {0xFFFFFFF0u}), true, "element 0: length 4294967280 exceeds the"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    io::MemoryStore store;
    put_array(store, c.elements, zstd_zeros_frame(c.prefix, kGiB, c.declare_size));
    const auto r = read_chunk_in_child(store);
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find("FormatError: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_LT(r.peak_rss_kib, kPeakRssLimitKib) << r.err;
  }
}

TEST(VlenBomb, LargeWellFramedChunkStillDecodes) {
  // 24 MiB in one element, above the size from which the start is checked first: a real large
  // chunk decodes whole and reads back.
  const std::uint32_t big = 24u << 20;
  io::MemoryStore store;
  put_array(store, 2, zstd_zeros_frame(framing(2, {0, big}), big, true));
  const Array array = Array::open(store, "a");
  const VlenChunk chunk = array.read_vlen_chunk(Coords{0});
  ASSERT_EQ(chunk.size(), 2u);
  EXPECT_EQ(chunk[0].size(), 0u);
  EXPECT_EQ(chunk[1].size(), big);
}

TEST(VlenBomb, PrefixCheckDecidesOnlyWhatItsBytesShow) {
  const ChunkRef ref{"a/c/0"};
  // count 2, then "abc" and "d" with their lengths: 16 bytes in all.
  std::vector<std::byte> whole = framing(2, {3});
  for (const char ch : std::string("abc")) whole.push_back(static_cast<std::byte>(ch));
  append_le<std::uint32_t>(whole, 1);
  whole.push_back(std::byte{'d'});
  ASSERT_EQ(whole.size(), 16u);
  EXPECT_NO_THROW(check_vlen_prefix(whole, 16, 2, ref));
  // A prefix that ends inside an element leaves the rest to the whole decode.
  EXPECT_NO_THROW(check_vlen_prefix(std::span(whole).first(10), 16, 2, ref));
  EXPECT_NO_THROW(check_vlen_prefix(std::span(whole).first(10), 1000, 2, ref));
  EXPECT_NO_THROW(check_vlen_prefix(whole, kVlenFrameSizeUnknown, 2, ref));
  // What the bytes present decide: a frame too small for the lengths, bytes after the last
  // element (in the prefix, or by the declared size), a wrong count.
  EXPECT_THROW(check_vlen_prefix(std::span(whole).first(10), 10, 2, ref), FormatError);
  EXPECT_THROW(check_vlen_prefix(whole, 20, 2, ref), FormatError);
  std::vector<std::byte> longer = whole;
  longer.push_back(std::byte{0});
  EXPECT_THROW(check_vlen_prefix(longer, kVlenFrameSizeUnknown, 2, ref), FormatError);
  EXPECT_THROW(check_vlen_prefix(whole, 16, 3, ref), FormatError);
}

}  // namespace
}  // namespace tessera::zarr
