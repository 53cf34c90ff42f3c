// A manifest's cell counts are numbers from a file. A manifest that claims far more cells per tile
// than its tiles hold (consistent with itself: tile_size, tile_cells and n_cells all agree) must
// fail with the tile's own rule (D2) before the epoch loader buffers a cell index per claimed cell:
// 3 x 2^27 claimed cells would cost 3 GiB of indices. Checked through the CLI, with the child's
// own peak resident set size.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::run_cli;
using tessera::testing::RunResult;

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

TEST(LyingManifest, EpochRefusesTileCellsTheTileDoesNotHold) {
  tessera::testing::TempDir dir("cells-lying-manifest");
  const fs::path ds = dir.path() / "ds";
  fs::copy(tessera::testing::conformance_dir() / "deltacells" / "dataset_small", ds, fs::copy_options::recursive);
  std::string manifest = tessera::testing::read_file_text(ds / "manifest.json");
  const std::string claim = std::to_string(std::uint64_t{1} << 27);
  replace_once(manifest, "\"n_cells\": 10", "\"n_cells\": " + std::to_string(std::uint64_t{3} << 27));
  replace_once(manifest, "\"tile_size\": 4", "\"tile_size\": " + claim);
  replace_once(manifest, "\"tile_cells\": [\n    4,\n    4,\n    2\n  ]",
               "\"tile_cells\": [\n    " + claim + ",\n    " + claim + ",\n    " + claim + "\n  ]");
  tessera::testing::write_file_text(ds / "manifest.json", manifest);

  const RunResult r = run_cli({"cells", "epoch", ds.string(), "--batch-size", "4", "--no-shuffle"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("tile 0 does not match the manifest: 4 cells x 6 genes, manifest says " + claim + " x 6"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tile_000000.dct"), std::string::npos) << r.err;
  // Far below the claimed cells' cost, far above what epoch adds to the CLI's own footprint.
  EXPECT_LT(tessera::testing::rss_above_idle_cli_kib(r), 192 * 1024) << r.err;
}

}  // namespace
}  // namespace tessera::cells
