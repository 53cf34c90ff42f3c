// Folds over chunks larger than a read piece give the same bits through pread copies as through
// the map, and through Auto, which on the 80 MiB dataset times its first pieces both ways and
// mixes them (io/read_path.hpp, query_plan.cpp for_each_raw_piece): rank 1 (a tile is one run),
// runs longer than a piece, pieces of many rows (2 MiB per outer index), pieces of one outer
// index, strided and clipped selections, block-by-block (direct) folds over kept axes, and zstd
// frames copied first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/tet/synth.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera {
namespace {

using codec::json::Json;
using testing::ScopedEnv;

// The execution block of `doc` on `path` through `path_name`, without the host-dependent fields.
Json execute(const std::string& path, const std::string& doc, const char* path_name) {
  const ScopedEnv env("TESSERA_READ_PATH", path_name);
  tet::QueryOptions o;
  o.tet_path = path;
  o.execute = true;
  o.preview = 5;
  Json ex = tet::run_query(tet::parse_query_json(doc), o).tree["execution"];
  ex.erase("memory_budget_bytes");
  ex.erase("host_available_ram_bytes");
  return ex;
}

class ReadPathFold : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    tet::SynthOptions options;
    for (const char* spec : {
             "line:f64:2500000:1000000",          // rank 1: each tile is one 8 MB run
             "wide:f32:10x600000:4x600000",       // a run of 2.4 MB: one row per piece
             "cube:f32:40x512x1024:16x512x1024",  // 80 MiB: Auto measures its pieces
             "four:u16:6x5x300x700:3x5x300x700",  // pieces of 2 rows of axis 1, axis 0 walked
             "half:f16:19x1100x520:16x1000x520",  // clipped edge tiles
             "zcube:f32:24x512x1024:16x256x256:zstd:3",
         })
      options.datasets.push_back(tet::parse_synth_spec(spec));
    options.seed = 7;
    file_ = (dir_->path() / "big.tet").string();
    tet::synth_write(file_, options);
  }
  static void TearDownTestSuite() { delete dir_; }
  static void expect_same_bits(const std::string& doc) {
    const Json mapped = execute(file_, doc, "mmap");
    const Json copied = execute(file_, doc, "pread");
    EXPECT_EQ(mapped.dump(), copied.dump()) << doc;
    EXPECT_EQ(mapped, execute(file_, doc, "auto")) << doc;
  }
  static testing::TempDir* dir_;
  static std::string file_;
};
testing::TempDir* ReadPathFold::dir_ = nullptr;
std::string ReadPathFold::file_;

TEST_F(ReadPathFold, RankOneTilesAreOneRunEach) {
  expect_same_bits(R"({"dataset":"line","mean":[]})");
  expect_same_bits(R"({"dataset":"line","var":[],"selection":[{"start":17,"stop":2400001,"step":3}]})");
  expect_same_bits(R"({"dataset":"line","arg_max":[]})");
}

TEST_F(ReadPathFold, RunsLongerThanAPieceAreNeverSplit) {
  expect_same_bits(R"({"dataset":"wide","sum":[]})");
  expect_same_bits(R"({"dataset":"wide","mean":[1]})");
  expect_same_bits(
      R"({"dataset":"wide","mean":[0],"selection":[{"start":1,"stop":9,"step":2},{"start":5,"stop":599999}]})");
}

TEST_F(ReadPathFold, PiecesOfManyRowsAndBlockByBlockFolds) {
  expect_same_bits(R"({"dataset":"cube","mean":[]})");
  expect_same_bits(R"({"dataset":"cube","mean":[0]})");  // kept cells span blocks: direct folds
  expect_same_bits(R"({"dataset":"cube","std":[1]})");
  expect_same_bits(R"({"dataset":"cube","min":[2]})");
  expect_same_bits(
      R"({"dataset":"cube","sum":[0,2],"selection":[{"start":3,"stop":37,"step":2},{"start":5,"stop":500,"step":3},{"start":1,"stop":1000}]})");
}

TEST_F(ReadPathFold, OuterAxesWalkedOneIndexAtATime) {
  expect_same_bits(R"({"dataset":"four","mean":[]})");
  expect_same_bits(R"({"dataset":"four","sum":[1,3]})");
  expect_same_bits(
      R"({"dataset":"four","max":[0],"selection":[{"start":1,"stop":6},{"start":0,"stop":5,"step":2},{"start":7,"stop":290},{"start":0,"stop":700,"step":9}]})");
}

TEST_F(ReadPathFold, ClippedEdgeTilesAndHalfFloats) {
  expect_same_bits(R"({"dataset":"half","mean":[]})");
  expect_same_bits(R"({"dataset":"half","nan_mean":[0]})");
}

TEST_F(ReadPathFold, ZstdFramesCopiedFirstDecodeTheSame) {
  expect_same_bits(R"({"dataset":"zcube","mean":[]})");
  expect_same_bits(R"({"dataset":"zcube","var":[0]})");
}

}  // namespace
}  // namespace tessera
