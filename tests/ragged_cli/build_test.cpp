// `tessera ragged build` (spec §6.1, §6.1a, §6.3, §8.4): random point sets round-trip through
// the CLI and tessera's readers to exactly what an independent numpy implementation of the
// spec's algorithms computes (tdigest_reference.py beside this file); bad rows are counted by
// reason or stop a --strict build; numcodecs/zstandard and zarrita read what tessera wrote;
// option conflicts are usage errors; leaves need --overwrite to be replaced.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/ragged/toc.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;
using testing::run_cli;
using testing::TempDir;

constexpr int kCell = 12, kShard = 8, kChunk = 10;

struct Points {
  std::string csv;  // what the build reads (plus the reference's helper columns)
  std::uint64_t rows = 0;
  std::uint64_t good = 0;
  std::map<std::string, std::uint64_t> bad;  // reason → rows
};

// Random points: a dense patch (cells far above delta) and a sparse scatter (cells of 1–3
// points), with some bad rows of every kind. `flux` adds a weight column; `sigma` says whether
// the build reads the sigma column (else a bad sigma is not a bad row).
Points make_points(std::uint64_t seed, bool flux, bool sigma = true) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> value(20, 4);
  Points p;
  std::ostringstream out;
  out.precision(17);
  out << "lat,lon,value,sigma,t" << (flux ? ",w" : "") << ",cell,point,toc,ok\n";
  const auto row = [&](double lat, double lon, const std::string& v, const std::string& sigma, const std::string& t,
                       const std::string& w, const char* fault) {
    ++p.rows;
    std::string cell = "0", point = "0", toc_word = "0";
    if (!fault) {
      const std::uint64_t id = *geo::point_nested29(lat, lon, geo::Latitude::Authalic);
      point = std::to_string(morton::point_from_nested29(id));
      cell = std::to_string(morton::from_nested(id >> (2 * (29 - kCell)), kCell));
      toc_word = std::to_string(toc::encode_timestamp(toc::from_unix_ns(std::stoll(t))));
      ++p.good;
    } else {
      ++p.bad[fault];
    }
    out << lat << "," << lon << "," << v << "," << sigma << "," << t << (flux ? "," + w : "") << "," << cell << ","
        << point << "," << toc_word << "," << (fault ? 0 : 1) << "\n";
  };
  const auto num = [](double x) {
    std::ostringstream s;
    s.precision(17);
    s << x;
    return s.str();
  };
  const auto time = [&] { return std::to_string(1557800158250000000LL + static_cast<std::int64_t>(u(rng) * 1e12)); };
  for (int i = 0; i < 6000; ++i)
    row(-70.02 + 0.04 * u(rng), 10.0 + 0.05 * u(rng), num(value(rng)), num(0.1 + u(rng)), time(), num(0.5 + u(rng)),
        nullptr);
  for (int i = 0; i < 600; ++i)
    row(-70.3 + 0.6 * u(rng), 9.7 + 0.6 * u(rng), num(value(rng)), num(0.1 + u(rng)), time(), num(0.5 + u(rng)),
        nullptr);
  // Ties: the same value many times in one cell keeps its input order.
  for (int i = 0; i < 50; ++i) row(-70.0, 10.01, "21.5", "1", time(), "1", nullptr);
  row(NAN, 10, "1", "1", time(), "1", "non_finite_coordinate");
  row(95, 10, "1", "1", time(), "1", "latitude_out_of_range");
  row(-70, 10, "nan", "1", time(), "1", "non_finite_value");
  row(-70, 10, "", "1", time(), "1", "non_finite_value");
  row(-70, 10, "1", "-1", time(), "1", sigma ? "bad_sigma" : nullptr);
  row(-70, 10, "1", "1", "x", "1", "bad_time");
  if (flux) row(-70, 10, "1", "1", time(), "0", "bad_weight");
  p.csv = out.str();
  return p;
}

std::vector<std::string> build_args(const fs::path& csv, const fs::path& store, bool flux, bool sigma = true) {
  std::vector<std::string> a = {"ragged",          "build",
                                "--input",         csv.string(),
                                "--out",           store.string(),
                                "--value-col",     "value",
                                "--time-col",      "t",
                                "--time-format",   "unix-ns",
                                "--located",       "--stats",
                                "--per-cell-time", "observed",
                                "--cell-order",    std::to_string(kCell),
                                "--shard-order",   std::to_string(kShard),
                                "--chunk-order",   std::to_string(kChunk),
                                "--delta",         "32"};
  if (sigma) a.insert(a.end(), {"--sigma-col", "sigma"});
  if (flux) a.insert(a.end(), {"--weight-col", "w", "--gain-name", "test-gain", "--gain-version", "2"});
  return a;
}

template <typename T>
std::vector<T> dense(const io::Store& store, const std::string& path) {
  const auto bytes = zarr::Array::open(store, path).read_all();
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// The flux case builds without --sigma-col, so both means (plain and inverse-variance) are checked.
void check_round_trip(bool flux) {
  TempDir dir("ragged-build");
  const bool sigma = !flux;
  const Points points = make_points(flux ? 2 : 1, flux, sigma);
  testing::write_file_text(dir / "points.csv", points.csv);
  const auto run = run_cli(build_args(dir / "points.csv", dir / "store", flux, sigma));
  ASSERT_EQ(run.rc, 0) << run.err;
  const Json report = Json::parse(run.out);
  EXPECT_EQ(report["rows"]["read"].get<std::uint64_t>(), points.rows);
  EXPECT_EQ(report["rows"]["accepted"].get<std::uint64_t>(), points.good);
  for (const auto& [reason, n] : points.bad)
    EXPECT_EQ(report["rows"]["rejected_by_reason"].value(reason, std::uint64_t{0}), n) << reason;
  ASSERT_GE(report["leaves"].size(), 2u);

  const fs::path script = testing::source_dir() / "tests/ragged_cli/tdigest_reference.py";
  std::vector<std::string> argv = {
      "/usr/bin/python3", script.string(), (dir / "points.csv").string(), "32", (dir / "reference.json").string(),
      "located"};
  if (sigma) argv.push_back("sigma");
  const auto ref_run = testing::run_process(argv);
  ASSERT_EQ(ref_run.rc, 0) << ref_run.err;
  const Json ref = Json::parse(testing::read_file_text(dir / "reference.json"));

  std::vector<std::string> stat_names = {"min", "max", "mean", "variance", "q25", "q50", "q75"};
  if (sigma) stat_names.push_back("sigma");
  std::uint64_t cells = 0, observations = 0;
  for (const Json& leaf_report : report["leaves"]) {
    const std::string leaf = leaf_report["leaf"].get<std::string>();
    SCOPED_TRACE(leaf);
    io::DirectoryStore store((dir / "store" / leaf).string());
    EXPECT_TRUE(hive::is_committed(hive::read_commit_stamp(store)));
    const std::string g = std::to_string(kCell);
    const auto morton_words = dense<std::uint64_t>(store, g + "/morton");
    const auto count = dense<std::int32_t>(store, g + "/count");
    const auto observed = dense<std::uint64_t>(store, g + "/observed");
    std::map<std::string, std::vector<float>> stats;
    for (const std::string& s : stat_names) stats[s] = dense<float>(store, g + "/h_" + s);
    if (!sigma) {
      EXPECT_FALSE(store.exists(g + "/h_sigma/zarr.json"));
    }
    const RaggedArray digests = RaggedArray::open(store, g + "/h_tdigest");
    EXPECT_EQ(digests.weights(), flux ? Weights::Flux : Weights::Counts);
    const RaggedArray locations = RaggedArray::open(store, g + "/h_tdigest_locations");
    const RaggedArray times = RaggedArray::open(store, g + "/h_tdigest_times");
    for (std::uint64_t i = 0; i < count.size(); ++i) {
      if (count[i] == 0) {
        EXPECT_TRUE(std::isnan(stats["mean"][i]));
        EXPECT_EQ(digests.read_cell(static_cast<std::int64_t>(i)).rows, 0u);
        continue;
      }
      const std::string word = std::to_string(morton_words[i]);
      SCOPED_TRACE("cell " + word);
      ASSERT_TRUE(ref.contains(word));
      const Json& want = ref[word];
      ++cells;
      observations += static_cast<std::uint64_t>(count[i]);
      EXPECT_EQ(count[i], want["count"].get<std::int32_t>());
      const auto rows = digests.read_cell(static_cast<std::int64_t>(i)).values<float>();
      ASSERT_EQ(rows.size(), 2 * want["rows"].size());
      double weight_sum = 0;
      for (std::size_t r = 0; r < want["rows"].size(); ++r) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(rows[2 * r]), want["rows"][r][0].get<std::uint32_t>()) << "row " << r;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(rows[2 * r + 1]), want["rows"][r][1].get<std::uint32_t>())
            << "row " << r;
        weight_sum += rows[2 * r + 1];
      }
      if (!flux) {
        EXPECT_EQ(weight_sum, static_cast<double>(count[i]));  // Σweights = the exact count
      }
      const auto locs = locations.read_cell(static_cast<std::int64_t>(i)).values<std::uint64_t>();
      const auto tims = times.read_cell(static_cast<std::int64_t>(i)).values<std::uint64_t>();
      ASSERT_EQ(locs.size(), want["locations"].size());
      ASSERT_EQ(tims.size(), want["times"].size());
      for (std::size_t r = 0; r < locs.size(); ++r) {
        EXPECT_EQ(std::to_string(locs[r]), want["locations"][r].get<std::string>());
        EXPECT_EQ(std::to_string(tims[r]), want["times"][r].get<std::string>());
      }
      EXPECT_EQ(std::to_string(observed[i]), want["observed"].get<std::string>());
      for (const std::string& s : stat_names)
        EXPECT_EQ(std::bit_cast<std::uint32_t>(stats[s][i]), want["stats"][s].get<std::uint32_t>()) << s;
    }
    // The recorded content hashes verify.
    const Json record = Json::parse(testing::read_file_text((dir / "store" / leaf).parent_path() / "stats.json"));
    EXPECT_EQ(verify_hashes(hash_tree(store), parse_content_hashes(record)).outcome, HashVerification::Outcome::Ok);
    EXPECT_EQ(record["content_hashes"]["combined"], leaf_report["combined_hash"]);
    // tessera's verifier accepts the leaf.
    const auto verify = run_cli({"ragged", "verify", (dir / "store" / leaf).string()});
    EXPECT_EQ(verify.rc, 0) << verify.out << verify.err;
  }
  EXPECT_EQ(cells, ref.size());
  EXPECT_EQ(observations, points.good);
}

TEST(RaggedBuild, RoundTripMatchesAnIndependentNumpyDigest) { check_round_trip(false); }

TEST(RaggedBuild, FluxRoundTripMatchesTheReference) { check_round_trip(true); }

TEST(RaggedBuild, NumcodecsZstandardAndZarritaReadWhatTesseraWrote) {
  TempDir dir("ragged-build");
  const Points points = make_points(3, false);
  testing::write_file_text(dir / "points.csv", points.csv);
  const auto run = run_cli(build_args(dir / "points.csv", dir / "store", false));
  ASSERT_EQ(run.rc, 0) << run.err;
  const Json report = Json::parse(run.out);
  const std::string leaf = report["leaves"][0]["leaf"].get<std::string>();
  const fs::path leaf_dir = dir / "store" / leaf;
  const Json record = Json::parse(testing::read_file_text(leaf_dir.parent_path() / "stats.json"));
  // numcodecs VLenBytes + zstandard unframe every inner chunk of every vlen array; the §7 hash
  // of what they decode equals tessera's.
  const auto py =
      testing::run_python(R"(
import hashlib, json, struct, sys, zstandard, numcodecs, numpy as np
leaf, cells, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {}
for name in ["h_tdigest", "h_tdigest_locations", "h_tdigest_times"]:
    path = f"{leaf}/12/{name}/c/0"
    data = open(path, "rb").read()
    k = cells // chunk
    index = np.frombuffer(data[-(16 * k + 4):-4], dtype="<u8").reshape(k, 2)
    h = hashlib.sha256()
    for off, n in index:
        if off == 2**64 - 1:
            items = [b""] * chunk
        else:
            raw = zstandard.ZstdDecompressor().decompress(data[off:off + n])
            items = list(numcodecs.VLenBytes().decode(raw))
            assert len(items) == chunk
        for item in items:
            h.update(struct.pack("<Q", len(item)))
            h.update(item)
    out["12/" + name] = h.hexdigest()
print(json.dumps(out))
)",
                          {leaf_dir.string(), "256", "16"});  // 4^(12 − 8) cells, inner chunks of 4^(12 − 10)
  if (py.rc != 0 && py.err.find("No module named") != std::string::npos) GTEST_SKIP() << py.err;
  ASSERT_EQ(py.rc, 0) << py.err;
  const Json theirs = Json::parse(py.out);
  for (const auto& [name, hash] : theirs.items()) EXPECT_EQ(hash, record["content_hashes"]["arrays"][name]) << name;

  // zarrita reads the dense arrays.
  const fs::path node_dir = testing::source_dir() / "tests/zarr/node";
  if (!fs::exists(node_dir / "node_modules/zarrita") || testing::run_process({"node", "--version"}).rc != 0)
    GTEST_SKIP() << "zarrita or node missing";
  const auto js = testing::run_process(
      {"node", (node_dir / "read_dense.mjs").string(), leaf_dir.string(), "12/count", "12/morton", "12/h_mean"});
  ASSERT_EQ(js.rc, 0) << js.err;
  const Json dense_json = Json::parse(js.out);
  io::DirectoryStore store(leaf_dir.string());
  const auto count = dense<std::int32_t>(store, "12/count");
  const auto words = dense<std::uint64_t>(store, "12/morton");
  const auto mean = dense<float>(store, "12/h_mean");
  ASSERT_EQ(dense_json["12/count"]["values"].size(), count.size());
  for (std::size_t i = 0; i < count.size(); ++i) {
    EXPECT_EQ(dense_json["12/count"]["values"][i].get<std::string>(), std::to_string(count[i]));
    EXPECT_EQ(dense_json["12/morton"]["values"][i].get<std::string>(), std::to_string(words[i]));
    const std::string m = dense_json["12/h_mean"]["values"][i].get<std::string>();
    if (std::isnan(mean[i])) {
      EXPECT_EQ(m, "NaN");
    } else {
      EXPECT_EQ(static_cast<float>(std::stod(m)), mean[i]);
    }
  }
}

TEST(RaggedBuild, NpyColumnsBuildTheSameLeavesAsCsv) {
  TempDir dir("ragged-build");
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> lat, lon, value;
  std::ostringstream csv;
  csv.precision(17);
  csv << "lat,lon,value\n";
  for (int i = 0; i < 3000; ++i) {
    lat.push_back(-70.02 + 0.04 * u(rng));
    lon.push_back(10.0 + 0.05 * u(rng));
    value.push_back(100 * u(rng));
    csv << lat.back() << "," << lon.back() << "," << value.back() << "\n";
  }
  testing::write_file_text(dir / "p.csv", csv.str());
  fs::create_directories(dir / "cols");
  for (const auto& [name, col] : {std::pair{"lat", &lat}, std::pair{"lon", &lon}, std::pair{"value", &value}}) {
    const std::uint64_t shape[] = {col->size()};
    std::string bytes = codec::npy_header(DType::F64, shape);
    bytes.append(reinterpret_cast<const char*>(col->data()), col->size() * 8);
    testing::write_file_text(dir / "cols" / (std::string(name) + ".npy"), bytes);
  }
  const std::vector<std::string> common = {"--value-col",   "value", "--cell-order", "12",
                                           "--shard-order", "8",     "--delta",      "64"};
  std::vector<std::string> a = {"ragged", "build", "--input", (dir / "p.csv").string(), "--out", (dir / "a").string()};
  std::vector<std::string> b = {"ragged",    "build", "--input", (dir / "cols").string(), "--out", (dir / "b").string(),
                                "--threads", "1"};
  a.insert(a.end(), common.begin(), common.end());
  b.insert(b.end(), common.begin(), common.end());
  const auto ra = run_cli(a), rb = run_cli(b);
  ASSERT_EQ(ra.rc, 0) << ra.err;
  ASSERT_EQ(rb.rc, 0) << rb.err;
  const Json ja = Json::parse(ra.out), jb = Json::parse(rb.out);
  EXPECT_EQ(ja["leaves"], jb["leaves"]);
  EXPECT_EQ(ja["rows"]["accepted"].get<int>(), 3000);
  // The default chunk order is min(cell, shard + 4): 12 here, so the read chunk is one cell.
  io::DirectoryStore leaf((dir / "a" / ja["leaves"][0]["leaf"].get<std::string>()).string());
  EXPECT_EQ(zarr::Array::open(leaf, "12/count").read_chunk_elements(), 1u);
  EXPECT_TRUE(zarr::Array::open(leaf, "12/count").sharded());
  // The per-inner-chunk geometry holds the same values: identical content hashes (spec §6.2).
  std::vector<std::string> c = {
      "ragged",      "build",         "--input", (dir / "p.csv").string(), "--out", (dir / "c").string(),
      "--unsharded", "--chunk-order", "10"};
  std::vector<std::string> d = {
      "ragged", "build", "--input", (dir / "p.csv").string(), "--out", (dir / "d").string(), "--chunk-order", "10"};
  c.insert(c.end(), common.begin(), common.end());
  d.insert(d.end(), common.begin(), common.end());
  const auto rc = run_cli(c), rd = run_cli(d);
  ASSERT_EQ(rc.rc, 0) << rc.err;
  ASSERT_EQ(rd.rc, 0) << rd.err;
  EXPECT_EQ(Json::parse(rc.out)["leaves"], Json::parse(rd.out)["leaves"]);
  io::DirectoryStore unsharded((dir / "c" / ja["leaves"][0]["leaf"].get<std::string>()).string());
  EXPECT_FALSE(zarr::Array::open(unsharded, "12/count").sharded());
  EXPECT_EQ(zarr::Array::open(unsharded, "12/count").read_chunk_elements(), 16u);
}

TEST(RaggedBuild, StrictStopsAtTheFirstBadRowNamingFileAndRow) {
  TempDir dir("ragged-build");
  testing::write_file_text(dir / "p.csv", "lat,lon,value\n-70,10,1\n-70,10,2\n91,10,3\n-70,10,nan\n");
  const auto run = run_cli({"ragged", "build", "--input", (dir / "p.csv").string(), "--out", (dir / "s").string(),
                            "--value-col", "value", "--strict"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("p.csv: row 3:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("latitude"), std::string::npos) << run.err;
  for (const auto& e : fs::recursive_directory_iterator(dir / "s"))
    EXPECT_NE(e.path().extension(), ".zarr") << e.path();
  // Without --strict the same input builds, counting the two bad rows.
  const auto ok = run_cli(
      {"ragged", "build", "--input", (dir / "p.csv").string(), "--out", (dir / "s").string(), "--value-col", "value"});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const Json report = Json::parse(ok.out);
  EXPECT_EQ(report["rows"]["rejected"].get<int>(), 2);
  EXPECT_EQ(report["rows"]["rejected_by_reason"]["latitude_out_of_range"].get<int>(), 1);
  EXPECT_EQ(report["rows"]["rejected_by_reason"]["non_finite_value"].get<int>(), 1);
}

TEST(RaggedBuild, ConflictingOptionsAreUsageErrorsAndLeavesNeedOverwrite) {
  TempDir dir("ragged-build");
  testing::write_file_text(dir / "p.csv", "lat,lon,value,w,s\n-70,10,1,1,1\n-70,10,2,1,1\n");
  const std::vector<std::string> base = {
      "ragged", "build", "--input", (dir / "p.csv").string(), "--out", (dir / "s").string(), "--value-col", "value"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_cli(a);
  };
  EXPECT_EQ(with({"--weight-col", "w"}).rc, 2);
  EXPECT_EQ(with({"--sigma-col", "s"}).rc, 2);
  EXPECT_EQ(with({"--timed"}).rc, 2);
  EXPECT_EQ(with({"--latitude", "spherical"}).rc, 2);
  EXPECT_EQ(with({"--field", "count"}).rc, 2);
  EXPECT_FALSE(fs::exists(dir / "s"));
  const auto missing = with({"--lat-col", "latitude"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("no column 'latitude'"), std::string::npos) << missing.err;

  ASSERT_EQ(with({}).rc, 0);
  const auto again = with({});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  EXPECT_EQ(with({"--overwrite"}).rc, 0);
  // A different geometry cannot be added to the store.
  const auto other = with({"--overwrite", "--cell-order", "18"});
  EXPECT_EQ(other.rc, 1);
  EXPECT_NE(other.err.find("cell_order"), std::string::npos) << other.err;
}

}  // namespace
}  // namespace tessera::ragged
