// `tessera ragged info|verify|cell|tensors|hashes` and `tessera info|verify` on Zarr stores
// (spec zagg-ragged.md §8), checked against the fixtures' expected JSON, zagg's own read_tensors
// goldens (byte for byte, .npy headers included), and corrupted copies of a leaf.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/features.hpp"
#include "support/testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::run_cli;
using testing::TempDir;

fs::path spec_dir() { return testing::conformance_dir() / "zagg" / "tests" / "data" / "spec"; }
fs::path leaf(const std::string& fixture) { return spec_dir() / fixture / "1/1/2/1/3/11213.zarr"; }
fs::path strata() { return testing::conformance_dir() / "zagg" / "moczarr" / "tests" / "data"; }
fs::path strata_leaf() { return strata() / "strata_hive/4/3/3/1/4/43314.zarr"; }

json run_json(const std::vector<std::string>& args, int expected_rc = 0) {
  const auto run = run_cli(args);
  EXPECT_EQ(run.rc, expected_rc) << run.err;
  EXPECT_TRUE(!run.out.empty() && run.out.back() == '\n');
  return json::parse(run.out);
}

json expected(const std::string& fixture) {
  return json::parse(testing::read_file_text(spec_dir() / (fixture + ".expected.json")));
}

TEST(RaggedCell, EveryPopulatedCellOfMinimalMatchesTheExpectedDigest) {
  const json exp = expected("minimal");
  for (const auto& cell : exp["cells"]) {
    const auto index = cell["index"].get<int>();
    const json out = run_json({"ragged", "cell", leaf("minimal").string(), "6/h_tdigest", std::to_string(index)});
    EXPECT_EQ(out["field"], "6/h_tdigest");
    EXPECT_EQ(out["index"], index);
    EXPECT_EQ(out["morton"], cell["morton"]);
    // Digest rows compare exactly: the CLI prints float32 widened to double, as the fixture does.
    EXPECT_EQ(out["rows"], cell["h_tdigest"]) << "cell " << index;
    EXPECT_EQ(out["reads"], 2) << "a cell in a present inner chunk costs the index and the chunk";
  }
}

TEST(RaggedCell, AbsentInnerChunkCostsOneReadAndDecodesEmpty) {
  const json out = run_json({"ragged", "cell", leaf("minimal").string(), "6/h_tdigest", "9"});
  EXPECT_EQ(out["rows"], json::array());
  EXPECT_EQ(out["reads"], 1);
  EXPECT_EQ(out["morton"], nullptr) << "chunk 2 was never written, so its morton words read 0";
}

TEST(RaggedCell, MortonIdHiveShardAndChunkRowColAddressTheSameCell) {
  const std::string root = (spec_dir() / "minimal").string();
  const json by_index = run_json({"ragged", "cell", leaf("minimal").string(), "6/h_tdigest", "5"});
  const json by_morton =
      run_json({"ragged", "cell", root, "--shard", "11213", "--field", "h_tdigest", "--morton", "1121322"});
  EXPECT_EQ(by_morton, by_index);
  EXPECT_EQ(by_index["decimal"], "1121322");
  // Cell 5 is rank 1 of chunk 1 (id 112132): rank 1 → (x, y) = (1, 0) → row 0, col 1.
  const json by_chunk = run_json(
      {"ragged", "cell", leaf("minimal").string(), "6/h_tdigest", "--chunk", "112132", "--row", "0", "--col", "1"});
  EXPECT_EQ(by_chunk, by_index);
}

TEST(RaggedCell, CompanionsDecodeLocationAndTimeWords) {
  const json exp = expected("kitchen_sink");
  const json& cell = exp["cells"][0];
  const json out = run_json({"ragged", "cell", leaf("kitchen_sink").string(), "6/h_tdigest_signal",
                             std::to_string(cell["index"].get<int>()), "--companions"});
  ASSERT_TRUE(out.contains("locations"));
  ASSERT_TRUE(cell.contains("h_tdigest_signal_locations")) << cell.dump();
  EXPECT_EQ(out["locations"], cell["h_tdigest_signal_locations"]);
  EXPECT_EQ(out["rows"], cell["h_tdigest_signal"]);
}

TEST(RaggedCell, BadAddressesAreClearErrors) {
  const std::string l = leaf("minimal").string();
  auto run = run_cli({"ragged", "cell", l, "6/h_tdigest", "16"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("16"), std::string::npos) << run.err;
  run = run_cli({"ragged", "cell", (spec_dir() / "minimal").string(), "6/h_tdigest", "0"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("--shard"), std::string::npos) << run.err;
  EXPECT_EQ(run_cli({"ragged", "cell", l, "6/h_tdigest"}).rc, 2) << "no cell address";
  EXPECT_EQ(run_cli({"ragged", "cell", l, "6/h_tdigest", "--row", "0"}).rc, 2) << "--row needs --chunk";
  run = run_cli({"ragged", "cell", l, "--field", "h_tdigest", "abc"});
  EXPECT_EQ(run.rc, 2) << "with --field the positional is the INDEX";
  EXPECT_NE(run.err.find("'abc'"), std::string::npos) << run.err;
}

TEST(RaggedTensors, NpyOutputIsByteIdenticalToZaggsGoldens) {
  if (!fs::exists(strata_leaf())) GTEST_SKIP() << "no strata fixture";
  TempDir dir;
  for (const std::string stratum : {"signal", "noise"}) {
    const auto out = dir / stratum;
    run_json({"ragged", "tensors", strata_leaf().string(), "--field", "h_tdigest_" + stratum, "--npy", out.string()});
    for (const std::string name : {"tensors", "masks", "windows", "morton"})
      EXPECT_EQ(testing::read_file_bytes(out / (name + ".npy")),
                testing::read_file_bytes(strata() / "strata_goldens" / (stratum + "_" + name + ".npy")))
          << stratum << " " << name;
  }
  const auto block = dir / "block";
  const json summary = run_json({"ragged", "tensors", strata_leaf().string(), "--field", "h_tdigest_signal",
                                 "--block-order", "4", "--npy-single", "--npy", block.string()});
  ASSERT_EQ(summary["blocks"].size(), 1u);
  EXPECT_EQ(summary["blocks"][0]["decimal"], "43314");
  EXPECT_EQ(summary["blocks"][0]["morton"], "5345772757688778756");
  for (const auto& [mine, golden] : std::vector<std::pair<std::string, std::string>>{
           {"tensors", "tensor"}, {"masks", "mask"}, {"windows", "window"}, {"morton", "morton"}})
    EXPECT_EQ(testing::read_file_bytes(block / (mine + ".npy")),
              testing::read_file_bytes(strata() / "strata_goldens" / ("signal_block_" + golden + ".npy")))
        << mine;
}

TEST(RaggedTensors, JsonSummaryAndIncludedTensorsAgreeWithTheNpyFiles) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "no numpy";
  const json out =
      run_json({"ragged", "tensors", strata_leaf().string(), "--field", "h_tdigest_noise", "--include-tensors"});
  EXPECT_EQ(out["params"]["n_bins"], 128);
  EXPECT_EQ(out["params"]["dtype"], "uint32");
  EXPECT_EQ(out["has_exact_occupancy"], true);
  ASSERT_EQ(out["blocks"].size(), 3u);
  std::vector<json> tensors, masks;
  for (const auto& b : out["blocks"]) {
    tensors.push_back(b["tensor"]);
    masks.push_back(b["mask"]);
  }
  const auto golden = strata() / "strata_goldens";
  const auto check = testing::run_python(
      "import json, sys, numpy as np\n"
      "t = np.array(json.loads(sys.argv[1]), dtype=np.uint32); m = np.array(json.loads(sys.argv[2]), dtype=np.uint8)\n"
      "assert np.array_equal(t, np.load(sys.argv[3])), 'tensor'\n"
      "assert np.array_equal(m, np.load(sys.argv[4])), 'mask'\n",
      {json(tensors).dump(), json(masks).dump(), (golden / "noise_tensors.npy").string(),
       (golden / "noise_masks.npy").string()});
  EXPECT_EQ(check.rc, 0) << check.err;
}

TEST(RaggedTensors, PngHeatmapsDecodeToTheMaskColours) {
  TESSERA_REQUIRE_FEATURE(Png);
  if (!testing::have_python_numpy()) GTEST_SKIP() << "no numpy";
  TempDir dir;
  run_json({"ragged", "tensors", strata_leaf().string(), "--field", "h_tdigest_signal", "--block-order", "4", "--png",
            dir.path().string(), "--png-cell-px", "2"});
  const auto png = dir / "block_0_43314.png";
  ASSERT_TRUE(fs::exists(png));
  // Decode with zlib in Python (no PNG library needed: RGBA8, filter none on every row).
  const auto check = testing::run_python(
      "import sys, zlib, struct\n"
      "b = open(sys.argv[1], 'rb').read(); assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
      "pos, idat, ihdr = 8, b'', None\n"
      "while pos < len(b):\n"
      "    n, kind = struct.unpack('>I4s', b[pos:pos+8]); body = b[pos+8:pos+8+n]; pos += 12 + n\n"
      "    if kind == b'IHDR': ihdr = struct.unpack('>IIBBBBB', body)\n"
      "    if kind == b'IDAT': idat += body\n"
      "    assert kind != b'tIME'\n"
      "w, h, depth, ctype = ihdr[:4]; assert (w, h, depth, ctype) == (8, 8, 8, 6), ihdr\n"
      "raw = zlib.decompress(idat); stride = 1 + 4 * w\n"
      "px = lambda x, y: tuple(raw[y*stride + 1 + 4*x: y*stride + 5 + 4*x])\n"
      "assert all(raw[y*stride] == 0 for y in range(h))\n"
      // mask rows [2,0,0,1],[2,0,0,0],[0,0,0,1],[0,0,0,2]; image row 0 shows tensor row 3.
      "assert px(6, 0)[3] == 255 and px(6, 0)[0] == px(6, 0)[1]  # tensor (3,3): data, gray\n"
      "assert px(0, 0) == (0, 0, 0, 0)  # tensor (3,0): nothing\n"
      "assert px(6, 2) == (40, 80, 160, 255)  # tensor (2,3): observed empty\n"
      "assert px(0, 6)[3] == 255  # tensor (0,0): data\n",
      {png.string()});
  EXPECT_EQ(check.rc, 0) << check.err;
}

TEST(RaggedTensors, UsageErrorsNameTheProblem) {
  const std::string l = leaf("minimal").string();
  auto run = run_cli({"ragged", "tensors", l, "6/h_tdigest", "--fit", "sideways"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("sideways"), std::string::npos) << run.err;
  run = run_cli({"ragged", "tensors", l, "6/h_tdigest", "--n-bins", "2"});
  EXPECT_EQ(run.rc, 1) << "the window does not fit two bins under fit=raise";
  EXPECT_NE(run.err.find("degrade_resolution"), std::string::npos) << run.err;
}

TEST(RaggedHashes, EveryFixtureReproducesItsRecordedHashes) {
  for (const std::string fixture : {"minimal", "flux", "kitchen_sink", "temporal", "column"}) {
    const json exp = expected(fixture);
    const json out = run_json({"ragged", "hashes", leaf(fixture).string()});
    EXPECT_EQ(out["arrays"], exp["content_hashes"]["arrays"]) << fixture;
    EXPECT_EQ(out["combined"], exp["content_hashes"]["combined"]) << fixture;
    const json verified = run_json({"ragged", "hashes", leaf(fixture).string(), "--verify", "--expected",
                                    (spec_dir() / (fixture + ".expected.json")).string()});
    EXPECT_EQ(verified["outcome"], "ok") << fixture;
  }
}

TEST(RaggedHashes, ColumnsVerifyAgainstTheirStatsSidecar) {
  const auto column = spec_dir() / "minimal/1/1/2/1/3/all.pyramid.zarr";
  const json verified = run_json({"ragged", "hashes", column.string(), "--verify"});
  EXPECT_EQ(verified["outcome"], "ok");
}

TEST(RaggedHashes, AlteredRecordIsAMismatchWithExitOne) {
  TempDir dir;
  json exp = expected("minimal");
  exp["content_hashes"]["arrays"]["6/count"] = std::string(64, '0');
  exp["content_hashes"]["arrays"]["6/gone"] = std::string(64, '1');
  testing::write_file_text(dir / "record.json", exp.dump());
  const json out = run_json(
      {"ragged", "hashes", leaf("minimal").string(), "--verify", "--expected", (dir / "record.json").string()}, 1);
  EXPECT_EQ(out["outcome"], "mismatch");
  EXPECT_EQ(out["mismatch"], json::array({"6/count"}));
  EXPECT_EQ(out["missing"], json::array({"6/gone"}));
  // A leaf with no stats sidecar has nothing recorded.
  EXPECT_EQ(run_json({"ragged", "hashes", leaf("minimal").string(), "--verify"}, 1)["outcome"], "unrecorded");
}

TEST(RaggedInfo, LeafReportsStampCoverageAndArrays) {
  const json out = run_json({"ragged", "info", leaf("minimal").string(), "--deep"});
  EXPECT_EQ(out["kind"], "leaf");
  EXPECT_EQ(out["shard"], "11213");
  EXPECT_EQ(out["shard_word"], "1233986297899515908");
  EXPECT_EQ(out["stamp"]["cells_with_data"], 4);
  EXPECT_EQ(out["coverage"]["box"], json::array({"112131", "1121322", "1121344", nullptr}));
  EXPECT_EQ(out["coverage"]["occupied_cells"], 4);
  EXPECT_EQ(out["has_exact_occupancy"], true);
  EXPECT_EQ(out["groups"], json::array({"6"}));
  bool saw_digest = false;
  for (const auto& array : out["arrays"]) {
    EXPECT_EQ(array["K"], 4);
    EXPECT_EQ(array["present_chunks"], 3) << array["path"] << ": inner chunk 2 is absent everywhere";
    if (array["path"] == "6/h_tdigest") {
      saw_digest = true;
      EXPECT_EQ(array["ragged"]["element"]["shape"], json::array({-1, 2}));
      EXPECT_EQ(array["ragged"]["weights"], "counts");
      EXPECT_EQ(array["ragged"]["deep"]["populated_cells"], 4);
      EXPECT_EQ(array["ragged"]["deep"]["rows"], 18 + 1 + 5 + 17);
      EXPECT_EQ(array["ragged"]["deep"]["weight_sum"], 346.0);
    }
  }
  EXPECT_TRUE(saw_digest);
}

TEST(RaggedInfo, HiveRootListsItsLeaves) {
  const json out = run_json({"ragged", "info", (spec_dir() / "minimal").string(), "--list-leaves"});
  EXPECT_EQ(out["kind"], "hive");
  EXPECT_EQ(out["manifest"]["cell_order"], 6);
  ASSERT_EQ(out["leaves"].size(), 1u) << "the all.pyramid.zarr column is not a leaf";
  EXPECT_EQ(out["leaves"][0]["path"], "1/1/2/1/3/11213.zarr");
  EXPECT_EQ(out["leaves"][0]["status"], "committed");
}

TEST(RaggedVerify, EveryFixtureLeafAndColumnVerifies) {
  for (const std::string fixture : {"minimal", "flux", "kitchen_sink", "temporal", "column"}) {
    const json out = run_json({"ragged", "verify", leaf(fixture).string()});
    EXPECT_EQ(out["ok"], true) << fixture << ": " << out.dump();
    EXPECT_GT(out["checked"]["chunks"].get<int>(), 0);
    const auto column = spec_dir() / fixture / "1/1/2/1/3/all.pyramid.zarr";
    const json col = run_json({"ragged", "verify", column.string()});
    EXPECT_EQ(col["ok"], true) << fixture << " column";
    EXPECT_EQ(col["checked"]["hashes"], "ok") << "the column's stats sidecar records its hashes";
  }
  EXPECT_EQ(run_json({"ragged", "verify", strata_leaf().string()})["ok"], true);
}

// A private copy of the minimal leaf to damage.
fs::path copy_leaf(const TempDir& dir) {
  const auto target = dir / "11213.zarr";
  fs::copy(leaf("minimal"), target, fs::copy_options::recursive);
  return target;
}

TEST(RaggedVerify, DamageIsReportedNamingTheObjectAndRule) {
  TempDir dir;
  const auto copy = copy_leaf(dir);
  // Flip a byte inside the first inner chunk of the digest shard (zstd frame → decode failure).
  auto shard = testing::read_file_bytes(copy / "6/h_tdigest/c/0");
  shard[6] ^= std::byte{0x5a};
  testing::write_file_bytes(copy / "6/h_tdigest/c/0", shard);
  // Move a morton word to the wrong place: swap cells 0 and 1.
  auto morton = testing::read_file_bytes(copy / "6/morton/c/0");
  std::swap_ranges(morton.begin(), morton.begin() + 8, morton.begin() + 8);
  testing::write_file_bytes(copy / "6/morton/c/0", morton);

  const json out = run_json({"ragged", "verify", copy.string()}, 1);
  EXPECT_EQ(out["ok"], false);
  std::set<std::string> rules;
  for (const auto& f : out["failures"])
    rules.insert(f["rule"].get<std::string>() + " " + f["object"].get<std::string>());
  EXPECT_TRUE(rules.contains("chunk 6/h_tdigest/c/0")) << out.dump(2);
  EXPECT_TRUE(rules.contains("morton 6/morton")) << out.dump(2);
  const auto text = run_cli({"verify", copy.string(), "--text"});
  EXPECT_EQ(text.rc, 1);
  EXPECT_NE(text.out.find("FAIL 6/h_tdigest/c/0: chunk: "), std::string::npos) << text.out;
}

TEST(RaggedVerify, MissingSidecarBitIsACoverageFailure) {
  TempDir dir;
  const auto copy = copy_leaf(dir);
  // Rewrite coverage.moc without cell 15 (a4 00 instead of a4 01): cell 15 holds data.
  const auto check = testing::run_python(
      "import sys, zstandard\n"
      "open(sys.argv[1], 'wb').write(zstandard.ZstdCompressor(level=3).compress(bytes([0xa4, 0x00])))\n",
      {(copy / "coverage.moc").string()});
  if (check.rc != 0) GTEST_SKIP() << "python3-zstandard unavailable: " << check.err;
  const json out = run_json({"ragged", "verify", copy.string()}, 1);
  bool found = false;
  for (const auto& f : out["failures"])
    found = found || (f["rule"] == "coverage" &&
                      f["message"].get<std::string>().find("cell 15 holds data") != std::string::npos);
  EXPECT_TRUE(found) << out.dump(2);
}

TEST(DetectRagged, InfoAndVerifyDispatchOnZarrStores) {
  const auto a = run_cli({"info", leaf("minimal").string()});
  const auto b = run_cli({"ragged", "info", leaf("minimal").string()});
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto v = run_cli({"verify", (spec_dir() / "minimal").string(), "--shard", "11213"});
  EXPECT_EQ(v.rc, 0) << v.err;
  EXPECT_EQ(json::parse(v.out)["ok"], true);
}

}  // namespace
}  // namespace tessera
