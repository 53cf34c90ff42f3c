// `cells verify` decodes every chunk of every tile to validate it, but keeps nothing: its memory
// is bounded by the largest chunk per thread, not by the tile. A tile of 24 million nonzeros would
// take 192 MB of int32 output buffers decoded whole (a 400-million-nonzero tile, 3.2 GB); the
// child's peak resident set size, above what the CLI takes to start, shows verify does not
// allocate them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/tile_encoder.hpp"

namespace tessera::cells {
namespace {

// Writes a tile of `cells` x `genes_per_cell` nonzeros to `path`.
void write_large_tile(const std::filesystem::path& path, std::uint64_t cells, std::uint64_t genes_per_cell) {
  std::vector<std::int64_t> indptr(cells + 1);
  std::vector<std::uint32_t> indices(cells * genes_per_cell), values(indices.size());
  for (std::uint64_t c = 0; c < cells; ++c) {
    indptr[c + 1] = static_cast<std::int64_t>((c + 1) * genes_per_cell);
    for (std::uint64_t g = 0; g < genes_per_cell; ++g) {
      indices[c * genes_per_cell + g] = static_cast<std::uint32_t>(2 * g + c % 2);
      values[c * genes_per_cell + g] = static_cast<std::uint32_t>(1 + (c + g) % 7);
    }
  }
  const auto tile =
      encode_tile({indptr, indices, values, 2 * genes_per_cell}, {.level = 1, .n_chunks = 64, .threads = 0});
  tessera::testing::write_file_bytes(path, tile);
}

TEST(CellsVerifyMemory, LargeTileIsCheckedChunkByChunk) {
  tessera::testing::TempDir dir("cells-verify-memory");
  const auto path = dir.path() / "big.dct";
  // Built in a forked child: a spawned CLI's peak RSS counts its parent's high-water mark
  // (posix_spawn shares the parent's memory until exec), so this process must stay small.
  const auto built = tessera::testing::run_in_child([&] { write_large_tile(path, 24'000, 1'000); });
  ASSERT_EQ(built.rc, 0) << built.err;
  const auto r = tessera::testing::run_cli({"cells", "verify", path.string(), "--threads", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("24000000 nonzeros"), std::string::npos) << r.out;
  // What verify adds to the CLI's start-up footprint must stay far below the 192 MB the decoded
  // tile would take.
  EXPECT_LT(tessera::testing::rss_above_idle_cli_kib(r), 64 * 1024)
      << "verify held the decoded tile (peak " << r.peak_rss_kib << " KiB)";
}

}  // namespace
}  // namespace tessera::cells
