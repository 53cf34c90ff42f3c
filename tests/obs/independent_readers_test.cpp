// Obs shards tessera writes, read by an independent Parquet implementation (parquet-wasm, the
// Rust Apache Parquet crate) to the same values.
#include <gtest/gtest.h>

#include "columnar/columnar_support.hpp"
#include "obs_dataset.hpp"
#include "support/testing.hpp"
#include "tessera/cells/obs_shards.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {
namespace {

using columnar::test::expect_same_values;
using columnar::test::node_dir;
using columnar::test::node_unavailable;
using columnar::test::run_node;

TEST(ObsIndependentReaders, ParquetWasmReadsEveryShard) {
  if (const auto why = node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!std::filesystem::exists(node_dir() / "node_modules/parquet-wasm")) GTEST_SKIP() << "parquet-wasm missing";
  testing::TempDir tmp;
  const Manifest m = test::write_obs_dataset(tmp / "ds", 97, 10, 4, 7);
  io::DirectoryStore store((tmp / "ds").string());
  const auto schema = read_obs_schema(store);
  const auto table = test::random_obs_table(97, 7);
  const auto want = encode_obs_table(table, schema.schema);
  std::uint64_t first = 0;
  for (std::uint64_t s = 0; s < m.obs_shard_bytes.size(); ++s) {
    const auto got = run_node("read_parquet_wasm.mjs", {(tmp / "ds" / obs_shard_key(s)).string()});
    ASSERT_EQ(got["names"], nlohmann::json(schema.schema.names()));
    std::uint64_t rows = 0;
    for (std::uint64_t t = s * 4; t < std::min<std::uint64_t>(m.n_tiles(), (s + 1) * 4); ++t) rows += m.tile_cells[t];
    for (std::size_t c = 0; c < want.size(); ++c)
      expect_same_values(columnar::slice_rows(want[c], first, rows), got["columns"][schema.schema.columns[c].name],
                         obs_shard_key(s) + " column " + schema.schema.columns[c].name);
    first += rows;
  }
  EXPECT_EQ(first, 97u);
}

}  // namespace
}  // namespace tessera::cells
