// A `.tet` index entry's raw_byte_len comes from the file. Readers that size a buffer by it (`cat`,
// `query`, `export`) must check it against what the payload can decode to before allocating, so
// a few crafted bytes cannot make the CLI allocate gigabytes; and `export` must neither pad a chunk
// far beyond the array nor copy a zstd payload that does not decode. Each case runs the CLI and
// checks the message and the child's own peak resident set size.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "crafted_file.hpp"
#include "support/testing.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

namespace fs = std::filesystem;
using tessera::testing::run_cli;
using tessera::testing::RunResult;
using tessera::testing::TempDir;

// What a command may add to the CLI's start-up footprint: far below what the claims below would
// cost (1 GiB and more), far above the command's own needs.
constexpr long kAddedRssLimitKib = 192 * 1024;

fs::path write_crafted(const TempDir& dir, std::uint64_t shape, std::uint64_t chunk, std::uint64_t raw_len,
                       std::span<const std::byte> payload) {
  const fs::path path = dir.path() / "crafted.tet";
  tessera::testing::write_file_bytes(path, crafted::u8_file(shape, chunk, {raw_len}, payload));
  return path;
}

RunResult sum_query(const fs::path& file) {
  return run_cli({"tet", "query", R"({"dataset":"x","sum":[]})", "-t", file.string(), "-x", "-q"});
}

// A zstd frame header declaring `content_size` bytes, followed by bytes that are no valid block
// (0xFF: a last block of the reserved type), `total` bytes in all.
std::vector<std::byte> bomb_frame(std::uint64_t content_size, std::size_t total) {
  std::vector<std::byte> frame(total, std::byte{0xFF});
  store_le<std::uint32_t>(frame.data(), 0xFD2FB528u);  // magic
  frame[4] = std::byte{0xC0};                          // 8-byte content size, window descriptor present
  frame[5] = std::byte{0x50};                          // 1 MiB window
  store_le<std::uint64_t>(frame.data() + 6, content_size);
  return frame;
}

TEST(DeclaredTileSize, ClaimBeyondAnyZstdExpansionIsRefusedBeforeAllocating) {
  TempDir dir("tet-declared");
  const std::uint64_t claim = std::uint64_t{3} << 30;  // 3 GiB from a 13-byte payload
  const auto payload = codec::zstd_compress(std::vector<std::byte>(4));
  const fs::path file = write_crafted(dir, claim, claim, claim, payload);
  const std::string expected = "chunk 0: raw_byte_len 3221225472 is more than a " + std::to_string(payload.size()) +
                               "-byte zstd payload can decode to";
  for (const RunResult& r :
       {sum_query(file), run_cli({"tet", "cat", file.string(), "x", "--out", (dir.path() / "x.npy").string(),
                                  "--selection", R"([{"stop":4}])"})}) {
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_LT(tessera::testing::rss_above_idle_cli_kib(r), kAddedRssLimitKib) << r.err;
  }
}

TEST(DeclaredTileSize, BombHeaderIsProvenBeforeTheTileIsAllocated) {
  // 1 GiB claimed by a 32 KiB payload: within zstd's 32768:1 bound, but nothing after the header
  // decodes. The reader must find that out by streaming, not after zero-filling 1 GiB.
  TempDir dir("tet-declared");
  const std::uint64_t claim = std::uint64_t{1} << 30;
  const fs::path file = write_crafted(dir, claim, claim, claim, bomb_frame(claim, 32768));
  const RunResult r = sum_query(file);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("chunk 0: zstd error"), std::string::npos) << r.err;
  EXPECT_LT(tessera::testing::rss_above_idle_cli_kib(r), kAddedRssLimitKib) << r.err;
}

// A valid frame of `content_size` zero bytes that streams cheaply: real data that is simply large.
std::vector<std::byte> zeros_frame(std::uint64_t content_size) {
  return tessera::testing::zstd_zeros_frame({}, content_size);
}

TEST(DeclaredTileSize, OutOfMemoryIsALimitErrorNotABareBadAlloc) {
#if defined(TESSERA_SANITIZED)
  GTEST_SKIP() << "the sanitizer runtime needs far more address space than the limit this test sets";
#else
  // A genuine 512 MiB tile under a 192 MiB address-space limit: the allocation fails, and the
  // user gets the documented LimitError text (with its error kind), not std::bad_alloc.
  TempDir dir("tet-out-of-memory");
  const std::uint64_t size = std::uint64_t{512} << 20;
  const fs::path file = write_crafted(dir, size, size, size, zeros_frame(size));
  const RunResult r = tessera::testing::run_process(
      {"prlimit", "--as=" + std::to_string(std::uint64_t{192} << 20), tessera::testing::cli_path(), "tet", "query",
       R"({"dataset":"x","sum":[]})", "-t", file.string(), "-x", "-q"},
      {.env = {{"TESSERA_ERROR_KIND", "1"}}});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find(kOutOfMemoryText), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: out of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LimitError"), std::string::npos) << r.err;
#endif
}

TEST(DeclaredTileSize, FrameDeclaringMoreThanTheTileFails) {
  TempDir dir("tet-declared");
  const auto payload = codec::zstd_compress(std::vector<std::byte>(300000, std::byte{7}));
  const fs::path file = write_crafted(dir, 1000, 1000, 1000, payload);
  const RunResult r = sum_query(file);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("chunk 0: decoded payload length 300000 != raw_byte_len 1000"), std::string::npos) << r.err;
}

TEST(ExportChunks, ChunkLongerThanTheArrayIsNotPaddedToItsFullLength) {
  // 3 elements in a chunk declared 2^31 long: one tile either way; the Zarr chunk is clamped to 3.
  TempDir dir("tet-export-clamp");
  const std::vector<std::byte> values{std::byte{1}, std::byte{2}, std::byte{3}};
  const fs::path file = write_crafted(dir, 3, std::uint64_t{1} << 31, 3, codec::zstd_compress(values));
  const fs::path out = dir.path() / "out.zarr";
  const RunResult r = run_cli({"tet", "export", file.string(), out.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(tessera::testing::rss_above_idle_cli_kib(r), kAddedRssLimitKib) << r.err;
  const std::string meta = tessera::testing::read_file_text(out / "x" / "zarr.json");
  EXPECT_NE(meta.find("\"chunk_shape\": [\n        3\n      ]"), std::string::npos) << meta;
  // zstandard (an independent decoder) reads the chunk back as the three values.
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 not available";
  const RunResult py = tessera::testing::run_python(
      "import sys, zstandard\n"
      "print(list(zstandard.ZstdDecompressor().decompress(open(sys.argv[1], 'rb').read())))\n",
      {(out / "x" / "c" / "0").string()});
  ASSERT_EQ(py.rc, 0) << py.err;
  EXPECT_EQ(py.out, "[1, 2, 3]\n");
}

TEST(ExportChunks, UndecodableZstdChunkFailsTheExport) {
  // An interior tile is copied without re-encoding; its payload must still be proven to decode.
  TempDir dir("tet-export-damaged");
  const std::vector<std::byte> garbage(13, std::byte{0xFF});
  const fs::path file = write_crafted(dir, 4, 4, 4, garbage);
  const fs::path out = dir.path() / "out.zarr";
  const RunResult r = run_cli({"tet", "export", file.string(), out.string()});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("chunk 0: zstd error"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "zarr.json")) << "a failed export must not publish its root";
}

}  // namespace
}  // namespace tessera::tet
