// `tessera ragged build --layout flat` (spec §6.2): the same rows written as a flat store (one
// sphere-wide array per field at the store root, one object per read chunk keyed by its NESTED
// id) and as a hive decode to the same cells and tensors; `ragged verify` accepts the flat
// store; an existing store needs --overwrite, which replaces the chunks of the
// rebuilt shards (removing stale ones) and leaves other shards' chunks alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;
using testing::run_cli;
using testing::TempDir;

constexpr int kCell = 12, kShard = 8, kChunk = 10;

// Points in a 0.6° box at 70° S (several order-8 shards) with values, sigmas and times.
std::string points_csv(std::uint64_t seed, int n, double lat0, double lon0, double span) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::ostringstream out;
  out.precision(17);
  out << "lat,lon,value,t\n";
  for (int i = 0; i < n; ++i)
    out << lat0 + span * u(rng) << "," << lon0 + span * u(rng) << "," << 20 + 10 * u(rng) << ","
        << 1557800158250000000LL + static_cast<std::int64_t>(u(rng) * 1e12) << "\n";
  return out.str();
}

std::vector<std::string> build_args(const fs::path& csv, const fs::path& store, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"ragged",        "build",
                                "--input",       csv.string(),
                                "--out",         store.string(),
                                "--value-col",   "value",
                                "--time-col",    "t",
                                "--time-format", "unix-ns",
                                "--located",     "--stats",
                                "--cell-order",  std::to_string(kCell),
                                "--shard-order", std::to_string(kShard),
                                "--chunk-order", std::to_string(kChunk),
                                "--delta",       "32"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

Json build(const std::vector<std::string>& args) {
  const auto run = run_cli(args);
  EXPECT_EQ(run.rc, 0) << run.err;
  return run.rc == 0 ? Json::parse(run.out) : Json();
}

std::vector<TensorBlock> tensors(const io::Store& store) {
  TensorOptions t;
  t.n_bins = 16;
  t.fit = FitPolicy::DegradeResolution;
  return RaggedField::open(store, std::to_string(kCell) + "/h_tdigest").read_tensors(t);
}

TEST(RaggedBuildFlat, FlatAndHiveHoldTheSameCells) {
  TempDir dir("ragged-flat");
  testing::write_file_text(dir / "p.csv", points_csv(5, 8000, -70.3, 9.7, 0.6));
  const Json hive = build(build_args(dir / "p.csv", dir / "hive", {}));
  const Json flat = build(build_args(dir / "p.csv", dir / "flat", {"--layout", "flat"}));
  ASSERT_TRUE(hive.is_object() && flat.is_object());
  EXPECT_EQ(flat["layout"], "flat");
  EXPECT_EQ(hive["layout"], "hive");
  ASSERT_GT(hive["leaves"].size(), 1u) << "the points should span several shards";
  EXPECT_EQ(flat["shards_written"], hive["shards_written"]);
  EXPECT_EQ(flat["cells_with_data"], hive["cells_with_data"]);
  EXPECT_FALSE(fs::exists(dir / "flat" / "manifest.json"));

  // The flat store's layout: root group, the DGGS group, sphere-wide arrays, chunk keys = NESTED ids.
  io::DirectoryStore fstore((dir / "flat").string());
  const zarr::Array count = zarr::Array::open(fstore, std::to_string(kCell) + "/count");
  EXPECT_EQ(count.shape()[0], 12 * morton::pow4(kCell));
  EXPECT_FALSE(count.sharded());
  EXPECT_EQ(count.read_chunk_elements(), morton::pow4(kCell - kChunk));
  EXPECT_TRUE(fstore.exists("zarr.json"));
  EXPECT_TRUE(fstore.exists(std::to_string(kCell) + "/zarr.json"));

  // Every populated cell of every leaf holds the same bytes at its NESTED index of the flat store.
  const RaggedField ff = RaggedField::open(fstore, std::to_string(kCell) + "/h_tdigest");
  EXPECT_TRUE(ff.axis().flat);
  std::vector<TensorBlock> hive_blocks;
  std::uint64_t cells = 0;
  for (const Json& leaf : hive["leaves"]) {
    io::DirectoryStore lstore((dir / "hive" / leaf["leaf"].get<std::string>()).string());
    const std::uint64_t shard = morton::parse_decimal(leaf["shard"].get<std::string>());
    const std::uint64_t base = morton::nested(shard) << (2 * (kCell - kShard));
    const auto counts = zarr::Array::open(lstore, std::to_string(kCell) + "/count").read_all();
    const auto fcounts = count.read_box({{base, base + counts.size() / 4}});
    EXPECT_EQ(fcounts, counts) << "count of shard " << leaf["shard"];
    for (const char* stat : {"h_mean", "h_q50"}) {
      const auto a = zarr::Array::open(lstore, std::to_string(kCell) + "/" + stat).read_all();
      const auto b =
          zarr::Array::open(fstore, std::to_string(kCell) + "/" + stat).read_box({{base, base + a.size() / 4}});
      EXPECT_EQ(a, b) << stat;
    }
    const RaggedField lf = RaggedField::open(lstore, std::to_string(kCell) + "/h_tdigest");
    for (std::uint64_t i = 0; i < counts.size() / 4; ++i) {
      if (load_le<std::int32_t>(counts.data() + 4 * i) == 0) continue;
      ++cells;
      EXPECT_EQ(ff.read_cell(static_cast<std::int64_t>(base + i)).bytes,
                lf.read_cell(static_cast<std::int64_t>(i)).bytes);
      EXPECT_EQ(ff.locations()->read_cell(static_cast<std::int64_t>(base + i)).bytes,
                lf.locations()->read_cell(static_cast<std::int64_t>(i)).bytes);
    }
    for (TensorBlock& b : tensors(lstore)) hive_blocks.push_back(std::move(b));
  }
  EXPECT_EQ(cells, flat["cells_with_data"].get<std::uint64_t>());

  // Tensors: the flat sweep yields the hive's blocks, leaf after leaf, with global starts.
  const std::vector<TensorBlock> flat_blocks = tensors(fstore);
  ASSERT_EQ(flat_blocks.size(), hive_blocks.size());
  for (std::size_t i = 0; i < flat_blocks.size(); ++i) {
    EXPECT_EQ(flat_blocks[i].morton, hive_blocks[i].morton);
    EXPECT_EQ(flat_blocks[i].tensor, hive_blocks[i].tensor);
    EXPECT_EQ(flat_blocks[i].mask, hive_blocks[i].mask);
    EXPECT_EQ(flat_blocks[i].offset, hive_blocks[i].offset);
  }

  const auto verify = run_cli({"ragged", "verify", (dir / "flat").string()});
  EXPECT_EQ(verify.rc, 0) << verify.out << verify.err;
}

TEST(RaggedBuildFlat, AnExistingStoreNeedsOverwriteWhichReplacesOnlyTheRebuiltShards) {
  TempDir dir("ragged-flat");
  testing::write_file_text(dir / "wide.csv", points_csv(7, 6000, -70.3, 9.7, 0.6));
  const Json first = build(build_args(dir / "wide.csv", dir / "flat", {"--layout", "flat"}));
  ASSERT_TRUE(first.is_object());
  const auto again = run_cli(build_args(dir / "wide.csv", dir / "flat", {"--layout", "flat"}));
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;

  // Rebuild from one of the points: its shard keeps only that point's chunk, other shards stay.
  const std::string wide = testing::read_file_text(dir / "wide.csv");
  const std::size_t row_end = wide.find('\n', wide.find('\n') + 1);
  testing::write_file_text(dir / "one.csv", wide.substr(0, row_end + 1));
  const std::string count_path = std::to_string(kCell) + "/count";
  io::DirectoryStore fstore((dir / "flat").string());
  const auto before = fstore.list(count_path + "/c/");
  const Json second = build(build_args(dir / "one.csv", dir / "flat", {"--layout", "flat", "--overwrite"}));
  ASSERT_TRUE(second.is_object());
  ASSERT_EQ(second["leaves"].size(), 1u);
  const std::uint64_t shard = morton::parse_decimal(second["leaves"][0]["shard"].get<std::string>());
  const auto after = fstore.list(count_path + "/c/");
  const std::uint64_t first_chunk = morton::nested(shard) << (2 * (kChunk - kShard));
  const std::uint64_t chunks = morton::pow4(kChunk - kShard);
  std::size_t kept_elsewhere = 0, in_shard = 0;
  for (const std::string& key : before) {
    const std::uint64_t id = std::stoull(key.substr(key.rfind('/') + 1));
    const bool mine = id >= first_chunk && id < first_chunk + chunks;
    if (!mine) {
      ++kept_elsewhere;
      EXPECT_NE(std::find(after.begin(), after.end(), key), after.end()) << key << " of another shard was removed";
    }
  }
  for (const std::string& key : after) {
    const std::uint64_t id = std::stoull(key.substr(key.rfind('/') + 1));
    if (id >= first_chunk && id < first_chunk + chunks) ++in_shard;
  }
  EXPECT_GT(kept_elsewhere, 0u);
  EXPECT_EQ(in_shard, 1u) << "the rebuilt shard keeps only the one chunk with its point";
  EXPECT_EQ(after.size(), kept_elsewhere + 1);
}

}  // namespace
}  // namespace tessera::ragged
