// `tessera cells convert --10x-mtx` (spec deltacells.md §7): MatrixMarket directories written
// by scipy (plain and gzip) convert to datasets whose cells, read back with `tessera cells get`,
// equal the source columns under the stored gene order (checked in Python); the tiles are
// byte-identical however the cells are split into directories and however many threads encode
// them; the band-wise transpose gives the same rows at any memory budget; malformed inputs are
// clean errors naming the file and line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/mtx_source.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::read_file_bytes;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::run_python;
using tessera::testing::TempDir;
using tessera::testing::write_file_text;

// write ROOT N_CELLS N_GENES SPLITS GZ SEED: a seeded cells × genes count matrix (with a few
// large counts and tied gene totals) split into SPLITS directories ROOT/part_<k>, each a
// genes × cells MatrixMarket file; the whole matrix is also saved as ROOT/expected.npz.
// check ROOT DATASET JSON: the `cells get --json` output of every cell equals the matrix with
// its columns permuted by gene_order.npy, and the order is the stable sort by decreasing total.
const char* kScript = R"PY(
import gzip, json, os, shutil, sys
import numpy as np, scipy.io, scipy.sparse as sp
mode = sys.argv[1]
if mode == 'write':
    root, n_cells, n_genes, splits, gz, seed = sys.argv[2], *map(int, sys.argv[3:8])
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, n_genes + 1) ** 0.8
    dense = (rng.random((n_cells, n_genes)) < 0.3 * pop[rng.permutation(n_genes)]) * rng.integers(1, 9, (n_cells, n_genes))
    dense[rng.random((n_cells, n_genes)) < 0.002] = 70000
    dense[:, n_genes - 1] = 0
    dense[:, n_genes - 2] = 0
    dense[0, n_genes - 2] = dense[1, n_genes - 1] = 1   # a tie: two genes with total 1
    m = sp.csr_matrix(dense)
    np.savez(os.path.join(root, 'expected.npz'), data=m.data, indices=m.indices, indptr=m.indptr, shape=m.shape)
    cuts = np.linspace(0, n_cells, splits + 1).round().astype(int)
    for k in range(splits):
        d = os.path.join(root, 'part_%d' % k)
        os.makedirs(d)
        scipy.io.mmwrite(os.path.join(d, 'matrix.mtx'), sp.coo_matrix(dense[cuts[k]:cuts[k + 1]].T), field='integer')
        with open(os.path.join(d, 'features.tsv'), 'w') as f:
            for g in range(n_genes): f.write('ENSG%05d\tSYM%d\tGene Expression\n' % (g, g % (n_genes - 3)))
        with open(os.path.join(d, 'barcodes.tsv'), 'w') as f:
            for c in range(cuts[k], cuts[k + 1]): f.write('CELL%06d-1\n' % c)
        if gz:
            for name in ('matrix.mtx', 'features.tsv', 'barcodes.tsv'):
                with open(os.path.join(d, name), 'rb') as src, gzip.open(os.path.join(d, name + '.gz'), 'wb') as dst:
                    shutil.copyfileobj(src, dst)
                os.remove(os.path.join(d, name))
else:
    root, dataset, got = sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
    z = np.load(os.path.join(root, 'expected.npz'))
    m = sp.csr_matrix((z['data'], z['indices'], z['indptr']), shape=tuple(z['shape'])).toarray()
    order = np.load(os.path.join(dataset, 'gene_order.npy'))
    assert (order == np.argsort(-m.sum(axis=0), kind='stable')).all(), 'gene order'
    stored = m[:, order]
    ip, ix, vals = np.array(got['indptr']), np.array(got['indices']), np.array(got['values'])
    assert len(ip) == m.shape[0] + 1, 'rows'
    for c in range(m.shape[0]):
        row = np.zeros(m.shape[1], dtype=np.int64)
        row[ix[ip[c]:ip[c + 1]]] = vals[ip[c]:ip[c + 1]]
        assert (row == stored[c]).all(), 'cell %d' % c
        assert (np.diff(ix[ip[c]:ip[c + 1]]) > 0).all(), 'sorted %d' % c
    names = open(os.path.join(dataset, 'var_names.txt')).read().split('\n')[:-1]
    assert names == ['ENSG%05d' % g for g in order], 'var names'
    print('ok')
)PY";

void write_matrix(const TempDir& root, int n_cells, int n_genes, int splits, bool gz, int seed) {
  const auto r = run_python(kScript, {"write", root.path().string(), std::to_string(n_cells), std::to_string(n_genes),
                                      std::to_string(splits), gz ? "1" : "0", std::to_string(seed)});
  ASSERT_EQ(r.rc, 0) << r.err;
}

std::vector<std::string> parts(const TempDir& root, int splits) {
  std::vector<std::string> out;
  for (int k = 0; k < splits; ++k) out.push_back((root / ("part_" + std::to_string(k))).string());
  return out;
}

tessera::testing::RunResult convert(const std::vector<std::string>& inputs, const fs::path& out,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"cells", "convert", "--10x-mtx"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (const char* a : {"--no-obs", "--no-var", "--output"}) args.push_back(a);
  args.push_back(out.string());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args);
}

void check_against_source(const TempDir& root, const fs::path& dataset, int n_cells) {
  const auto got = run_cli({"cells", "get", dataset.string(), "0:" + std::to_string(n_cells), "--json"});
  ASSERT_EQ(got.rc, 0) << got.err;
  write_file_text(root / "got.json", got.out);
  const auto r = run_python(kScript, {"check", root.path().string(), dataset.string(), (root / "got.json").string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

TEST(MtxConvert, PlainAndGzipMatchTheSource) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "needs python3 with numpy and scipy";
  for (const bool gz : {false, true}) {
    TempDir root("mtx-convert");
    write_matrix(root, 230, 40, 1, gz, gz ? 7 : 3);
    const auto r = convert(parts(root, 1), root / "out", {"--tile-size", "64", "--chunks", "3", "--level", "3"});
    ASSERT_EQ(r.rc, 0) << r.err;
    const std::string p = parts(root, 1)[0];
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex("^1 files: " + p + " \\.\\.\\. " + p +
                          "\n230 cells x 40 genes \\(cells per file: min 230, max 230\\)\n"
                          "4 tiles, written by [0-9]+ worker\\(s\\) with [0-9]+ compression thread\\(s\\) each\n"
                          "gene order: summing the counts of 1 of 1 files \\(230 cells\\)\n\\[tile 1/4\\] 64 cells, ")))
        << r.out;
    EXPECT_NE(r.out.find("[tile 4/4] 38 cells, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("done: 4 tiles, "), std::string::npos) << r.out;
    check_against_source(root, root / "out", 230);
    // Random cells in any order, through the text form.
    const auto some = run_cli({"cells", "get", (root / "out").string(), "229,0,117,64,63,5"});
    ASSERT_EQ(some.rc, 0) << some.err;
    EXPECT_EQ(std::count(some.out.begin(), some.out.end(), '\n'), 6);
    const auto verify = run_cli({"cells", "verify", (root / "out").string()});
    EXPECT_EQ(verify.rc, 0) << verify.err;
    const std::string manifest = read_file_text(root / "out/manifest.json");
    EXPECT_NE(manifest.find("\"source\": \"10x-mtx\""), std::string::npos) << manifest;
  }
}

TEST(MtxConvert, TilesIndependentOfSplitAndThreads) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "needs python3 with numpy and scipy";
  std::vector<std::vector<std::byte>> reference;
  std::vector<std::byte> reference_order;
  int run = 0;
  for (const int splits : {1, 3, 7}) {
    TempDir root("mtx-split");
    write_matrix(root, 300, 50, splits, splits == 3, 11);
    for (const char* threads : {"1", "2"}) {
      const fs::path out = root / ("out" + std::string(threads));
      const auto r = convert(parts(root, splits), out,
                             {"--tile-size", "45", "--chunks", "2", "--level", "5", "--workers", threads, "--threads",
                              threads, "--sort-genes-max-files", "0", "--quiet"});
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_EQ(r.out, "");
      std::vector<std::vector<std::byte>> tiles;
      for (int t = 0; t < 7; ++t) {
        char name[32];
        std::snprintf(name, sizeof name, "tiles/tile_%06d.dct", t);
        tiles.push_back(read_file_bytes(out / name));
      }
      const auto order = read_file_bytes(out / "gene_order.npy");
      if (run++ == 0) {
        reference = tiles;
        reference_order = order;
        check_against_source(root, out, 300);
      } else {
        EXPECT_EQ(tiles, reference) << splits << " directories, " << threads << " threads";
        EXPECT_EQ(order, reference_order);
      }
    }
  }
}

TEST(MtxConvert, GeneOrderFromASubsetOfFiles) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "needs python3 with numpy and scipy";
  TempDir root("mtx-subset");
  write_matrix(root, 300, 50, 7, false, 13);
  // linspace(0, 6, 3).round() = files 0, 3, 6, of 43 + 42 + 43 cells.
  const auto r = convert(parts(root, 7), root / "out", {"--tile-size", "100", "--sort-genes-max-files", "3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\ngene order: summing the counts of 3 of 7 files (128 cells)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(cells per file: min 42, max 43)"), std::string::npos) << r.out;
  const auto v = run_cli({"cells", "verify", (root / "out").string()});
  EXPECT_EQ(v.rc, 0) << v.err;
}

TEST(MtxSource, BandsGiveTheSameRowsAtAnyBudget) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "needs python3 with numpy and scipy";
  TempDir root("mtx-band");
  write_matrix(root, 200, 30, 3, true, 5);
  std::vector<MtxDirectory> dirs;
  for (const auto& p : parts(root, 3)) dirs.push_back(scan_mtx_directory(p));
  MtxCsrSource whole(dirs);
  MtxCsrSource banded(dirs, {.memory_budget = 16 * 40});
  CsrBlock a, b;
  for (std::uint64_t first = 0; first < 200; first += 17) {
    const std::uint64_t count = std::min<std::uint64_t>(17, 200 - first);
    whole.read_rows(first, count, a);
    banded.read_rows(first, count, b);
    ASSERT_EQ(a.indptr, b.indptr) << first;
    ASSERT_EQ(a.indices, b.indices) << first;
    ASSERT_EQ(std::get<std::vector<std::int64_t>>(a.values), std::get<std::vector<std::int64_t>>(b.values)) << first;
  }
  EXPECT_EQ(whole.matrix_passes(), 6u);  // one count and one band pass per directory
  EXPECT_GT(banded.matrix_passes(), 6u);
  EXPECT_EQ(dirs[1].barcodes.front(), "CELL000067-1");
  EXPECT_EQ(dirs[0].feature_types[0], "Gene Expression");
}

TEST(MtxSource, NamesMadeUniqueTheAnnDataWay) {
  EXPECT_EQ(make_names_unique({"a", "b", "a", "a-1", "a"}), (std::vector<std::string>{"a", "b", "a-2", "a-1", "a-3"}));
  EXPECT_EQ(make_names_unique({"x", "y"}), (std::vector<std::string>{"x", "y"}));
}

// A hand-written directory: the matrix text, 3 genes, 2 barcodes.
fs::path hand_dir(const TempDir& root, const std::string& name, const std::string& matrix,
                  const std::string& genes = "g0\tA\ng1\tB\ng2\tC\n", const std::string& barcodes = "c0\nc1\n") {
  const fs::path d = root / name;
  fs::create_directories(d);
  write_file_text(d / "matrix.mtx", matrix);
  write_file_text(d / "genes.tsv", genes);
  write_file_text(d / "barcodes.tsv", barcodes);
  return d;
}

TEST(MtxConvert, RealAndPatternFieldsHoldingIntegers) {
  TempDir root("mtx-fields");
  const auto real =
      hand_dir(root, "real", "%%MatrixMarket matrix coordinate real general\n% c\n3 2 3\n1 1 2.0\n3 1 1e0\n2 2 5\n");
  auto r = convert({real.string()}, root / "o1", {"--no-sort-genes", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_cli({"cells", "get", (root / "o1").string(), "0:2"});
  EXPECT_EQ(r.out, "0\t2\t0:2 2:1\n1\t1\t1:5\n");
  const auto pattern = hand_dir(root, "pattern", "%%MatrixMarket matrix coordinate pattern general\n3 2 2\n2 1\n3 2\n");
  r = convert({pattern.string()}, root / "o2", {"--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_cli({"cells", "get", (root / "o2").string(), "0:2", "--names"});
  EXPECT_EQ(r.out, "0\t1\tg1:1\n1\t1\tg2:1\n");  // tie of totals: source order kept
}

TEST(MtxConvert, RecursivePatternsAndGeneSymbols) {
  TempDir root("mtx-glob");
  const std::string m = "%%MatrixMarket matrix coordinate integer general\n3 2 2\n1 1 4\n3 2 1\n";
  const std::string genes = "g0\tA\ng1\tA\ng2\tA-1\n";
  for (const char* d : {"a/x1", "a/b/x10", "a/b/x2", ".hidden/x3", "a/.h/x4"}) hand_dir(root, d, m, genes);
  const auto r = convert({(root / "**" / "x*").string()}, root / "out", {"--10x-var-names", "gene_symbols"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first, "3 files: " + (root / "a/b/x2").string() + " ... " + (root / "a/x1").string());
  EXPECT_NE(r.out.find("6 cells x 3 genes (cells per file: min 2, max 2)"), std::string::npos) << r.out;
  // Totals 12, 0, 3: the order is g0, g2, g1; symbols A, A, A-1 made unique: A, A-2, A-1.
  EXPECT_EQ(read_file_text(root / "out/var_names.txt"), "A\nA-1\nA-2\n");
  const auto g = run_cli({"cells", "get", (root / "out").string(), "0:2", "--names"});
  EXPECT_EQ(g.out, "0\t1\tA:4\n1\t1\tA-1:1\n");
}

TEST(MtxConvert, MalformedInputsAreCleanErrors) {
  TempDir root("mtx-bad");
  const std::string head = "%%MatrixMarket matrix coordinate integer general\n3 2 2\n";
  struct Case {
    std::string name, matrix, expect;
  };
  const std::vector<Case> cases = {
      {"fraction", "%%MatrixMarket matrix coordinate real general\n3 2 1\n1 1 1.5\n",
       "matrix.mtx: line 3: value '1.5' is not an integer count"},
      {"negative", head + "1 1 -4\n2 2 1\n", "matrix.mtx: line 3: negative count -4"},
      {"row", head + "4 1 1\n2 2 1\n", "matrix.mtx: line 3: row 4 outside 1..3"},
      {"column", head + "1 1 1\n2 0 1\n", "matrix.mtx: line 4: column 0 outside 1..2"},
      {"fewer", head + "1 1 1\n", "matrix.mtx: line 3: the size line declares 2 entries, the file holds 1"},
      {"more", head + "1 1 1\n2 2 1\n3 1 1\n", "matrix.mtx: line 5: more entries than the 2 the size line declares"},
      {"banner", "3 2 0\n", "matrix.mtx: line 1: missing the '%%MatrixMarket' banner"},
      {"text", head + "1 x 1\n2 2 1\n", "matrix.mtx: line 3: column 'x' is not a non-negative integer"},
      {"array", "%%MatrixMarket matrix array integer general\n3 2\n",
       "matrix.mtx: line 1: only coordinate MatrixMarket files are supported"},
  };
  for (const auto& c : cases) {
    const auto d = hand_dir(root, c.name, c.matrix);
    const auto r = convert({d.string()}, root / ("out_" + c.name), {"--quiet"});
    EXPECT_EQ(r.rc, 1) << c.name;
    EXPECT_NE(r.err.find((d / c.expect).string()), std::string::npos) << c.name << ": " << r.err;
    EXPECT_FALSE(fs::exists(root / ("out_" + c.name))) << c.name;
  }
  const auto genes = hand_dir(root, "genes", head + "1 1 1\n2 2 1\n", "g0\ng1\n");
  auto r = convert({genes.string()}, root / "o", {"--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("genes.tsv: 2 features, but "), std::string::npos) << r.err;
  const auto bars = hand_dir(root, "bars", head + "1 1 1\n2 2 1\n", "g0\ng1\ng2\n", "c0\n");
  r = convert({bars.string()}, root / "o", {"--quiet"});
  EXPECT_NE(r.err.find("barcodes.tsv: 1 barcodes, but "), std::string::npos) << r.err;
  const auto other = hand_dir(root, "other", head + "1 1 1\n2 2 1\n", "g0\tA\ngX\tB\ng2\tC\n");
  const auto good = hand_dir(root, "good", head + "1 1 1\n2 2 1\n");
  r = convert({good.string(), other.string()}, root / "o", {"--quiet", "--no-sort-files"});
  EXPECT_NE(
      r.err.find("gene identifiers differ from " + (good / "genes.tsv").string() + " (gene 1 is 'gX', expected 'g1')"),
      std::string::npos)
      << r.err;
  // A truncated gzip stream.
  const auto gz = hand_dir(root, "gz", "");
  fs::remove(gz / "matrix.mtx");
  std::string big = head;
  for (int i = 0; i < 2000; ++i) big += "% padding line " + std::to_string(i) + "\n";
  const auto w =
      run_python("import gzip,sys; b=gzip.compress(sys.argv[2].encode()); open(sys.argv[1],'wb').write(b[:len(b)//2])",
                 {(gz / "matrix.mtx.gz").string(), big});
  ASSERT_EQ(w.rc, 0) << w.err;
  r = convert({gz.string()}, root / "o", {"--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("matrix.mtx.gz"), std::string::npos) << r.err;
  r = convert({(root / "nothing*").string()}, root / "o", {"--quiet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no input matches"), std::string::npos) << r.err;
  EXPECT_THROW(scan_mtx_directory((root / "missing").string()), FormatError);
}

}  // namespace
}  // namespace tessera::cells
