// Third-party check: zarrita (the npm Zarr v3 reader, run with node) reads the dense `morton` and
// `count` arrays of every conformance store that has them — sharded leaves, unsharded leaf
// columns, the 2-D raster leaf — with exactly the values tessera decodes. Skipped when node or
// tests/zarr/node/node_modules is missing (`npm ci --prefix tests/zarr/node` installs it).
#include <gtest/gtest.h>

#include <map>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::zarr {
namespace {

namespace fs = std::filesystem;

TEST(ZarrZarrita, DenseMortonAndCountArraysMatch) {
  const fs::path node_dir = testing::source_dir() / "tests/zarr/node";
  if (!fs::exists(node_dir / "node_modules/zarrita"))
    GTEST_SKIP() << "zarrita is not installed: run `npm ci --prefix tests/zarr/node`";
  if (testing::run_process({"node", "--version"}).rc != 0) GTEST_SKIP() << "node is not on PATH";

  // Store root → dense morton/count arrays in it.
  std::map<fs::path, std::vector<std::string>> wanted;
  for (const auto& fa : test::all_fixture_arrays()) {
    const std::string name = fs::path(fa.path).filename().string();
    if (name == "morton" || name == "count") wanted[fa.root].push_back(fa.path);
  }
  ASSERT_GE(wanted.size(), 12u);
  std::size_t arrays = 0;
  for (const auto& [root, paths] : wanted) {
    SCOPED_TRACE(root.string());
    std::vector<std::string> argv = {"node", (node_dir / "read_dense.mjs").string(), root.string()};
    argv.insert(argv.end(), paths.begin(), paths.end());
    const auto run = testing::run_process(argv);
    ASSERT_EQ(run.rc, 0) << run.err;
    const auto result = codec::json::parse_strict(run.out, "zarrita output");
    io::DirectoryStore store(root.string());
    for (const std::string& path : paths) {
      SCOPED_TRACE(path);
      const Array array = Array::open(store, path);
      const auto& theirs = result.at(path);
      EXPECT_EQ(theirs["dtype"].get<std::string>(), array.data_type().name);
      EXPECT_EQ(theirs["shape"].get<std::vector<std::uint64_t>>(), array.shape());
      EXPECT_EQ(theirs["values"].get<std::vector<std::string>>(), test::decimal_values(array));
      ++arrays;
    }
  }
  EXPECT_GE(arrays, 30u);
}

}  // namespace
}  // namespace tessera::zarr
