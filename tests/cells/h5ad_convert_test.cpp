// `tessera cells convert --h5ad-glob / --10x-h5` (spec deltacells.md §7): AnnData files written by
// Debian's python3-anndata (CSR, CSC and dense X, integer and float dtypes, layers and raw) and
// Cell Ranger HDF5 files written with h5py (v3 and multi-genome v2) convert to datasets whose
// cells, read back with `tessera cells get` for random cell lists, equal the source rows exactly
// (checked in Python, tests/cells/h5ad_fixtures.py). Counts above 65,535 and more than 65,536
// genes exercise both exception kinds of version 2 (and version 1 refuses them). The tiles are
// byte-identical however the cells are split into files, whatever their layouts, and however many
// threads encode them; the CSC transpose gives the same rows at any memory budget; and the
// conformance dataset `dataset_small` is reproduced byte for byte from h5ad input.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "anndata_support.hpp"
#include "support/features.hpp"
#include "support/testing.hpp"
#include "tessera/cells/concat_source.hpp"
#include "tessera/cells/manifest.hpp"
#include "tessera/cells/transpose_source.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/h5ad.hpp"
#include "tessera/interop/tenx_h5.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::read_file_bytes;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::run_process;
using tessera::testing::TempDir;
using tessera::testing::write_file_text;

std::string fixtures() { return test::h5ad_fixtures_script(); }

using test::have_anndata;

void fixture(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/python3", fixtures()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run_process(argv);
  ASSERT_EQ(r.rc, 0) << r.err;
}

std::vector<std::string> parts(const TempDir& root, int splits, const char* ext = ".h5ad") {
  std::vector<std::string> out;
  for (int k = 0; k < splits; ++k) out.push_back((root / ("part_" + std::to_string(k) + ext)).string());
  return out;
}

tessera::testing::RunResult convert(const char* kind, const std::vector<std::string>& inputs, const fs::path& out,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"cells", "convert", kind};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (const char* a : {"--no-obs", "--no-var", "--output"}) args.push_back(a);
  args.push_back(out.string());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args);
}

// A random list of cells (repeats, any order) plus a range, in `cells get` syntax.
std::string random_cells(int n_cells, unsigned seed) {
  std::mt19937 rng(seed);
  std::string list;
  for (int i = 0; i < 25; ++i) list += std::to_string(rng() % static_cast<unsigned>(n_cells)) + ",";
  const int lo = static_cast<int>(rng() % static_cast<unsigned>(n_cells));
  return list + std::to_string(lo) + ":" + std::to_string(std::min(n_cells, lo + 7)) + ",0," +
         std::to_string(n_cells - 1);
}

// `cells get` of random cell lists (and of every cell) equals the source rows, checked in Python.
void check_cells(const TempDir& root, const fs::path& dataset, int n_cells, std::vector<std::string> flags = {}) {
  for (const std::string& cells :
       {random_cells(n_cells, 7), random_cells(n_cells, 8), "0:" + std::to_string(n_cells)}) {
    const auto got = run_cli({"cells", "get", dataset.string(), cells, "--json"});
    ASSERT_EQ(got.rc, 0) << got.err;
    write_file_text(root / "got.json", got.out);
    std::vector<std::string> argv{
        "/usr/bin/python3",           fixtures(), "check", root.path().string(), dataset.string(),
        (root / "got.json").string(), cells};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto r = run_process(argv);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.out, "ok\n");
  }
  const auto v = run_cli({"cells", "verify", dataset.string()});
  EXPECT_EQ(v.rc, 0) << v.err;
}

std::vector<std::vector<std::byte>> tiles_of(const fs::path& dataset) {
  std::vector<std::vector<std::byte>> tiles;
  for (int t = 0;; ++t) {
    char name[32];
    std::snprintf(name, sizeof name, "tiles/tile_%06d.dct", t);
    if (!fs::exists(dataset / name)) return tiles;
    tiles.push_back(read_file_bytes(dataset / name));
  }
}

#define NEED_ANNDATA() \
  if (!have_anndata()) GTEST_SKIP() << "needs /usr/bin/python3 with anndata, h5py and scipy"

TEST(H5adConvert, CsrCscAndDenseMatchTheSource) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  struct Case {
    const char* layout;
    const char* dtype;
  };
  for (const Case c : {Case{"csr", "float32"}, Case{"csc", "int32"}, Case{"dense", "float64"}, Case{"dense", "uint16"},
                       Case{"csc", "float32"}}) {
    SCOPED_TRACE(std::string(c.layout) + " " + c.dtype);
    TempDir root("h5ad-layout");
    fixture({"write", root.path().string(), "--cells", "230", "--genes", "40", "--layouts", c.layout, "--dtype",
             c.dtype, "--seed", "3"});
    const auto r =
        convert("--h5ad-glob", parts(root, 1), root / "out", {"--tile-size", "64", "--chunks", "3", "--level", "3"});
    ASSERT_EQ(r.rc, 0) << r.err;
    const std::string p = parts(root, 1)[0];
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex("^1 files: " + p + " \\.\\.\\. " + p +
                          "\n230 cells x 40 genes \\(cells per file: min 230, max 230\\)\n"
                          "4 tiles, written by [0-9]+ worker\\(s\\) with [0-9]+ compression thread\\(s\\) each\n"
                          "gene order: summing the counts of 1 of 1 files \\(230 cells\\)\n\\[tile 1/4\\] 64 cells, ")))
        << r.out;
    check_cells(root, root / "out", 230);
    const std::string manifest = read_file_text(root / "out/manifest.json");
    EXPECT_NE(
        manifest.find("\"metadata\": {\n    \"source\": \"h5ad\",\n    \"n_source_files\": 1,\n    \"first_file\": \"" +
                      p + "\",\n    \"last_file\": \"" + p +
                      "\",\n    \"sort_genes\": true,\n    \"sort_genes_n_files\": 1\n  }"),
        std::string::npos)
        << manifest;
  }
}

TEST(H5adConvert, CountsAbove65535AndMoreThan65536Genes) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  TempDir root("h5ad-big");
  fixture({"write", root.path().string(), "--cells", "60", "--genes", "70000", "--splits", "3", "--layouts",
           "csr,csc,dense", "--dtype", "int32", "--big", "--seed", "5"});
  // Sorted genes: value exceptions only; source order: gap exceptions too (a first gap of 69,999
  // and one inside a cell).
  auto r = convert("--h5ad-glob", {(root / "part_*.h5ad").string()}, root / "sorted",
                   {"--tile-size", "16", "--chunks", "2", "--level", "3", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(root, root / "sorted", 60);
  r = convert("--h5ad-glob", {(root / "part_*.h5ad").string()}, root / "unsorted",
              {"--tile-size", "16", "--chunks", "2", "--level", "3", "--quiet", "--no-sort-genes"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(root, root / "unsorted", 60, {"--no-sort"});
  // The exception frames are there: tile 0 holds cells 1 and 2 (gexc) and counts of 70,000+ (vexc).
  const auto info = run_cli({"cells", "info", (root / "unsorted/tiles/tile_000000.dct").string()});
  ASSERT_EQ(info.rc, 0) << info.err;
  EXPECT_NE(info.out.find("gexc"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("vexc"), std::string::npos) << info.out;
  // Version 1 cannot hold them and says so.
  r = convert("--h5ad-glob", {(root / "part_*.h5ad").string()}, root / "v1", {"--format-version", "1", "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("version 2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root / "v1"));
}

TEST(H5adConvert, LayersAndRaw) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  TempDir root("h5ad-where");
  fixture({"write", (root.path()).string(), "--cells", "90", "--genes", "30", "--splits", "2", "--layouts", "csc,csr",
           "--where", "layer", "--seed", "9"});
  auto r =
      convert("--h5ad-glob", parts(root, 2), root / "layer", {"--layer", "counts", "--tile-size", "40", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(root, root / "layer", 90);
  EXPECT_NE(read_file_text(root / "layer/manifest.json")
                .find("\"sort_genes_n_files\": 2,\n    \"x_source\": \"layers/counts\"\n"),
            std::string::npos);
  r = convert("--h5ad-glob", parts(root, 2), root / "missing", {"--layer", "spliced", "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("part_0.h5ad: layers/spliced: missing (layers: counts, other)"), std::string::npos) << r.err;

  TempDir raw("h5ad-raw");
  fixture({"write", raw.path().string(), "--cells", "50", "--genes", "30", "--layouts", "dense", "--where", "raw"});
  r = convert("--h5ad-glob", parts(raw, 1), raw / "out", {"--use-raw", "--tile-size", "20", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(raw, raw / "out", 50);
  EXPECT_NE(read_file_text(raw / "out/manifest.json").find("\"x_source\": \"raw/X\""), std::string::npos);
  // Layer selection is an h5ad option: a command-line error for other inputs.
  r = convert("--10x-mtx", {raw.path().string()}, raw / "o", {"--layer", "x"});
  EXPECT_EQ(r.rc, 2) << r.err;
}

TEST(H5adConvert, TilesIndependentOfSplitLayoutAndThreads) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  std::vector<std::vector<std::byte>> reference;
  std::vector<std::byte> reference_order, reference_names;
  int run = 0;
  struct Split {
    int files;
    const char* layouts;
  };
  for (const Split s : {Split{1, "csr"}, Split{3, "csc,dense,csr"}, Split{7, "dense,csr,csc"}}) {
    TempDir root("h5ad-split");
    fixture({"write", root.path().string(), "--cells", "300", "--genes", "50", "--splits", std::to_string(s.files),
             "--layouts", s.layouts, "--seed", "11"});
    for (const char* threads : {"1", "2"}) {
      const fs::path out = root / ("out" + std::string(threads));
      const auto r = convert("--h5ad-glob", {(root / "part_*.h5ad").string()}, out,
                             {"--tile-size", "45", "--chunks", "2", "--level", "5", "--workers", threads, "--threads",
                              threads, "--sort-genes-max-files", "0", "--quiet"});
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_EQ(r.out, "");
      const auto tiles = tiles_of(out);
      ASSERT_EQ(tiles.size(), 7u);
      const auto order = read_file_bytes(out / "gene_order.npy");
      const auto names = read_file_bytes(out / "var_names.txt");
      if (run++ == 0) {
        reference = tiles;
        reference_order = order;
        reference_names = names;
        check_cells(root, out, 300);
      } else {
        EXPECT_EQ(tiles, reference) << s.files << " files, " << threads << " threads";
        EXPECT_EQ(order, reference_order);
        EXPECT_EQ(names, reference_names);
      }
    }
  }
}

TEST(H5adConvert, NaturalOrderAndGeneOrderFromASubset) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  TempDir root("h5ad-natural");
  fixture({"write", root.path().string(), "--cells", "330", "--genes", "20", "--splits", "11", "--seed", "2"});
  // part_10 sorts after part_9; linspace(0, 10, 3).round() = files 0, 5, 10 (30 cells each).
  const auto r = convert("--h5ad-glob", {(root / "part_1*.h5ad").string(), (root / "part_[02-9].h5ad").string()},
                         root / "out", {"--tile-size", "100", "--sort-genes-max-files", "3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "11 files: " + (root / "part_0.h5ad").string() + " ... " + (root / "part_10.h5ad").string());
  EXPECT_NE(r.out.find("\ngene order: summing the counts of 3 of 11 files (90 cells)\n"), std::string::npos) << r.out;
  // Every cell in order: compare against the source with the order the subset gives.
  const auto all = run_cli({"cells", "get", (root / "out").string(), "0:330", "--json"});
  ASSERT_EQ(all.rc, 0) << all.err;
  const auto one = convert("--h5ad-glob", {(root / "part_*.h5ad").string()}, root / "same",
                           {"--tile-size", "100", "--no-sort-genes", "--quiet"});
  ASSERT_EQ(one.rc, 0) << one.err;
  check_cells(root, root / "same", 330, {"--no-sort"});
}

TEST(TenxH5Convert, V3AndV2MatchTheSource) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  TempDir root("tenx-v3");
  fixture({"tenx", root.path().string(), "--cells", "150", "--genes", "40", "--splits", "2", "--seed", "4"});
  auto r = convert("--10x-h5", parts(root, 2, ".h5"), root / "ids", {"--tile-size", "64"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("150 cells x 40 genes (cells per file: min 75, max 75)"), std::string::npos) << r.out;
  check_cells(root, root / "ids", 150);
  EXPECT_NE(read_file_text(root / "ids/manifest.json").find("\"source\": \"10x-h5\""), std::string::npos);
  r = convert("--10x-h5", parts(root, 2, ".h5"), root / "symbols", {"--10x-var-names", "gene_symbols", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(root, root / "symbols", 150, {"--symbols"});
  r = convert("--10x-h5", parts(root, 2, ".h5"), root / "g", {"--10x-genome", "GRCh38", "--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("this file has one 'matrix' group"), std::string::npos) << r.err;

  TempDir v2("tenx-v2");
  fixture({"tenx", v2.path().string(), "--cells", "80", "--genes", "25", "--v2-genomes", "hg19,mm10"});
  r = convert("--10x-h5", parts(v2, 1, ".h5"), v2 / "o", {"--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("several genomes (hg19, mm10); choose one with --10x-genome"), std::string::npos) << r.err;
  r = convert("--10x-h5", parts(v2, 1, ".h5"), v2 / "o", {"--10x-genome", "hg19", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  check_cells(v2, v2 / "o", 80);
  r = convert("--10x-h5", parts(v2, 1, ".h5"), v2 / "p", {"--10x-genome", "GRCm39", "--quiet"});
  EXPECT_NE(r.err.find("no genome 'GRCm39' (genomes: hg19, mm10)"), std::string::npos) << r.err;
}

TEST(H5adSource, CscBandsGiveTheSameRowsAtAnyBudget) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  TempDir root("h5ad-band");
  fixture({"write", root.path().string(), "--cells", "200", "--genes", "30", "--splits", "2", "--layouts", "csc",
           "--dtype", "int64", "--seed", "6"});
  std::vector<std::unique_ptr<CsrBlockSource>> whole_parts, banded_parts;
  for (const auto& p : parts(root, 2)) {
    const auto scan = interop::scan_h5ad(p);
    EXPECT_EQ(scan.layout, interop::H5adLayout::Csc);
    whole_parts.push_back(interop::open_h5ad_matrix(scan));
    banded_parts.push_back(interop::open_h5ad_matrix(scan, {.memory_budget = 16 * 40}));
  }
  ConcatCsrSource whole(std::move(whole_parts)), banded(std::move(banded_parts));
  ASSERT_EQ(whole.n_cells(), 200u);
  CsrBlock a, b;
  for (std::uint64_t first = 0; first < 200; first += 17) {
    const std::uint64_t count = std::min<std::uint64_t>(17, 200 - first);
    whole.read_rows(first, count, a);
    banded.read_rows(first, count, b);
    ASSERT_EQ(a.indptr, b.indptr) << first;
    ASSERT_EQ(a.indices, b.indices) << first;
    ASSERT_EQ(std::get<std::vector<std::int64_t>>(a.values), std::get<std::vector<std::int64_t>>(b.values)) << first;
  }
  auto& part = dynamic_cast<TransposedCsrSource&>(banded.part(0));
  EXPECT_GT(part.passes(), 2u);  // the counting pass and several bands
  EXPECT_EQ(dynamic_cast<TransposedCsrSource&>(whole.part(0)).passes(), 2u);
}

// §10: the conformance dataset's source matrix, written as h5ad in every layout and split, converts
// to a byte-identical dataset (libzstd 1.5.4); the manifest differs only in `metadata`.
TEST(H5adConvert, ReproducesTheConformanceDataset) {
  TESSERA_REQUIRE_FEATURE(Hdf5);
  NEED_ANNDATA();
  const fs::path fixture_dir = tessera::testing::conformance_dir() / "deltacells";
  const fs::path expected = fixture_dir / "dataset_small";
  const std::string script = R"PY(
import json, os, sys, warnings
warnings.simplefilter('ignore')
import anndata, numpy as np, pandas as pd, scipy.sparse as sp
e = json.load(open(sys.argv[1]))
m = np.array(e['source_matrix_dense_source_gene_order'])
names = e['source_var_names']
root = sys.argv[2]
for layout in ('csr', 'csc', 'dense'):
    for splits in (1, 2, 3):
        d = os.path.join(root, '%s_%d' % (layout, splits))
        os.makedirs(d)
        cuts = np.linspace(0, m.shape[0], splits + 1).round().astype(int)
        for k in range(splits):
            x = m[cuts[k]:cuts[k + 1]].astype(np.float32)
            x = sp.csr_matrix(x) if layout == 'csr' else sp.csc_matrix(x) if layout == 'csc' else x
            obs = pd.DataFrame(index=['c%d' % c for c in range(cuts[k], cuts[k + 1])])
            anndata.AnnData(X=x, obs=obs, var=pd.DataFrame(index=names)).write_h5ad(os.path.join(d, 'shard_%d.h5ad' % k))
)PY";
  TempDir root("h5ad-conformance");
  const auto w = tessera::testing::run_python(
      script, {(fixture_dir / "expected_dataset_small.json").string(), root.path().string()});
  ASSERT_EQ(w.rc, 0) << w.err;
  const auto expected_manifest = Manifest::parse(read_file_text(expected / "manifest.json"));
  for (const char* layout : {"csr", "csc", "dense"}) {
    for (int splits = 1; splits <= 3; ++splits) {
      SCOPED_TRACE(std::string(layout) + " in " + std::to_string(splits) + " files");
      const fs::path in = root / (std::string(layout) + "_" + std::to_string(splits));
      const fs::path out = root / (std::string("out_") + layout + std::to_string(splits));
      const auto r =
          convert("--h5ad-glob", {(in / "shard_*.h5ad").string()}, out,
                  {"--format-version", "1", "--tile-size", "4", "--chunks", "2", "--level", "19", "--quiet"});
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_EQ(read_file_bytes(out / "gene_order.npy"), read_file_bytes(expected / "gene_order.npy"));
      EXPECT_EQ(read_file_bytes(out / "var_names.txt"), read_file_bytes(expected / "var_names.txt"));
      auto got = Manifest::parse(read_file_text(out / "manifest.json"));
      EXPECT_EQ(got.metadata["source"], "h5ad");
      EXPECT_EQ(got.metadata["n_source_files"], splits);
      got.metadata = expected_manifest.metadata;
      EXPECT_EQ(got.serialize(), expected_manifest.serialize());
      const auto tiles = tiles_of(out);
      ASSERT_EQ(tiles.size(), 3u);
      if (ZSTD_versionNumber() == 10504) {
        EXPECT_EQ(tiles, tiles_of(expected));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cells
