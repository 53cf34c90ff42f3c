// The converter's obs and var inputs end to end: the h5ad obs table, cell names and var table
// are read in the isolated scan process and travel back through its pipe (every column kind,
// validity, categories); `tessera cells get --obs` then returns anndata's values, and
// `var.parquet` holds anndata's var rows. 10x MatrixMarket: obs is the barcodes, var the
// symbols or ids and feature types.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "obs_input_support.hpp"
#include "support/testing.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::cells {
namespace {

using obs_input::test::fixture;
using obs_input::test::have_anndata;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::TempDir;
using tessera::testing::write_file_text;

// Compares a `get --json` obs array with the fixture's expectation for that column.
void expect_obs_json(const nlohmann::json& got, const nlohmann::json& want) {
  const std::string name = want["name"].get<std::string>();
  ASSERT_EQ(got.size(), want["values"].size()) << name;
  for (std::size_t r = 0; r < got.size(); ++r) {
    const auto& w = want["values"][r];
    const auto& g = got[r];
    if (want["kind"] == "category") {
      const int code = w.get<int>();
      if (code < 0) {
        EXPECT_TRUE(g.is_null()) << name << " row " << r;
      } else {
        EXPECT_EQ(g, want["categories"][code]) << name << " row " << r;
      }
      continue;
    }
    const bool nan = w.is_string() && w.get<std::string>() == "nan";
    if (w.is_null() || nan) {
      EXPECT_TRUE(g.is_null()) << name << " row " << r << ": " << g.dump();
      continue;
    }
    const std::string text = w.get<std::string>();
    if (want["kind"] == "bool") {
      EXPECT_EQ(g, text == "True") << name << " row " << r;
    } else if (want["kind"] == "string") {
      EXPECT_EQ(g, text) << name << " row " << r;
    } else if (want.value("dtype", "") == "float") {  // printed with float32's shortest digits
      EXPECT_EQ(static_cast<float>(g.get<double>()), static_cast<float>(std::strtod(text.c_str(), nullptr)))
          << name << " row " << r;
    } else if (g.is_number_float()) {
      EXPECT_EQ(g.get<double>(), std::strtod(text.c_str(), nullptr)) << name << " row " << r;
    } else {
      EXPECT_EQ(g.dump(), text) << name << " row " << r;
    }
  }
}

TEST(ConvertObs, H5adObsAndVarThroughTheScanProcess) {
  if (!have_anndata()) GTEST_SKIP() << "/usr/bin/python3 lacks anndata, h5py, scipy or pandas";
  TempDir dir;
  ASSERT_TRUE(fixture({"h5ad", (dir / "a.h5ad").string(), (dir / "a.json").string(), "--cells", "40"}));
  const auto want = nlohmann::json::parse(read_file_text(dir / "a.json"));
  auto r = run_cli({"cells", "convert", "--h5ad-glob", (dir / "a.h5ad").string(), "--output", (dir / "ds").string(),
                    "--tile-size", "16", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string columns;
  for (const auto& c : want["obs"]) columns += (columns.empty() ? "" : ",") + c["name"].get<std::string>();
  r = run_cli({"cells", "get", (dir / "ds").string(), "0:40", "--json", "--obs", columns + ",obs_names", "--cache-dir",
               (dir / "cache").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto got = nlohmann::json::parse(r.out)["obs"];
  for (const auto& c : want["obs"]) expect_obs_json(got[c["name"].get<std::string>()], c);
  EXPECT_EQ(got["obs_names"], want["obs_names"]);

  // var.parquet: anndata's var rows (stored in gene order), keyed by the index.
  const auto src = io::open_file((dir / "ds/var.parquet").string());
  const VarTable var = read_var_parquet(*src, 6);
  EXPECT_EQ(var.index_name, "gene_ids");
  std::map<std::string, std::uint64_t> row_of;
  for (std::uint64_t i = 0; i < var.index.length; ++i) row_of[std::string(var.index.string(i))] = i;
  ASSERT_EQ(var.column_names.size(), want["var"].size());
  for (std::size_t c = 0; c < var.columns.size(); ++c) {
    const auto& w = want["var"][c];
    ASSERT_EQ(var.column_names[c], w["name"].get<std::string>());
    for (std::size_t i = 0; i < want["var_index"].size(); ++i) {
      const std::uint64_t row = row_of.at(want["var_index"][i].get<std::string>());
      const auto& v = w["values"][i];
      if (w["kind"] == "category") {
        if (v.get<int>() < 0) {
          EXPECT_FALSE(var.columns[c].is_valid(row));
        } else {
          EXPECT_EQ(var.columns[c].string(row), w["categories"][v.get<int>()].get<std::string>());
        }
      } else if (v.is_null() || v == "nan") {
        EXPECT_FALSE(var.columns[c].is_valid(row)) << w["name"] << " row " << i;
      } else {
        EXPECT_EQ(obs_input::test::python_text(var.columns[c], row), v.get<std::string>()) << w["name"] << " row " << i;
      }
    }
  }
}

TEST(ConvertObs, ExcludedAndUnsupportedColumns) {
  if (!have_anndata()) GTEST_SKIP() << "/usr/bin/python3 lacks anndata, h5py, scipy or pandas";
  TempDir dir;
  ASSERT_TRUE(fixture({"broken", dir.path().string()}));
  const std::string input = (dir / "unsupported.h5ad").string();
  auto r = run_cli({"cells", "convert", "--h5ad-glob", input, "--output", (dir / "a").string(), "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("--obs-exclude matrix"), std::string::npos) << r.err;
  r = run_cli({"cells", "convert", "--h5ad-glob", input, "--output", (dir / "b").string(), "--quiet", "--obs-exclude",
               "matrix,nested"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(read_file_text(dir / "b/obs/schema.json").find(R"("name": "x")"), std::string::npos);
  EXPECT_EQ(read_file_text(dir / "b/obs/schema.json").find("matrix"), std::string::npos);
  r = run_cli({"cells", "convert", "--h5ad-glob", (dir / "short_column.h5ad").string(), "--output",
               (dir / "c").string(), "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("obs/x: 3 rows, but the index has 4"), std::string::npos) << r.err;
}

TEST(ConvertObs, TenxMtxBarcodesAndFeatures) {
  TempDir dir;
  std::filesystem::create_directories(dir / "m");
  write_file_text(dir / "m/matrix.mtx", "%%MatrixMarket matrix coordinate integer general\n3 2 2\n1 1 5\n3 2 1\n");
  write_file_text(dir / "m/features.tsv", "g0\tA\tGene Expression\ng1\tB\tAntibody Capture\ng2\tA\tGene Expression\n");
  write_file_text(dir / "m/barcodes.tsv", "AAC-1\nGGT-1\n");
  auto r = run_cli({"cells", "convert", "--10x-mtx", (dir / "m").string(), "--output", (dir / "ds").string(), "--quiet",
                    "--no-sort-genes", "--10x-var-names", "gene_symbols"});
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_cli({"cells", "get", (dir / "ds").string(), "0:2", "--json", "--obs", "obs_names", "--cache-dir",
               (dir / "cache").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["obs"]["obs_names"], nlohmann::json::array({"AAC-1", "GGT-1"}));
  const auto src = io::open_file((dir / "ds/var.parquet").string());
  const VarTable var = read_var_parquet(*src, 3);
  EXPECT_EQ(var.column_names, (std::vector<std::string>{"gene_ids", "feature_types"}));
  EXPECT_EQ(var.index_name, "");
  ASSERT_EQ(var.index.length, 3u);
  EXPECT_EQ(var.index.string(1), "B");
  EXPECT_EQ(var.index.string(2), "A-1");
  EXPECT_EQ(var.columns[0].string(2), "g2");
  EXPECT_EQ(var.columns[1].string(1), "Antibody Capture");
}

}  // namespace
}  // namespace tessera::cells
