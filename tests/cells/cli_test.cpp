// `tessera cells …` and `tessera info|verify` on deltacells data (spec deltacells.md §9): golden
// outputs for dataset_small, exit codes and messages; and an independent decoder written in
// Python (numpy + zstandard, from §2.6) reading tessera-written v1 and v2 tiles.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "support/testing.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using tessera::testing::read_file_text;
using tessera::testing::run_cli;
using tessera::testing::TempDir;

fs::path small_dir() { return tessera::testing::conformance_dir() / "deltacells/dataset_small"; }

const char* kSmallInfo =
    "cells x genes:  10 x 6\n"
    "tiles:          3 of 4 cells (last: 2)\n"
    "nonzeros:       16 (2 per cell)\n"
    "size:           0.0 MB = 0.08 kB per cell, 49.812 bytes per nonzero\n"
    "layout:         2 chunks per tile, zstd level 19\n"
    "gene order:     stored (gene_order.npy); var names: yes\n"
    "obs:            none\n"
    "var table:      no\n"
    "metadata:       {'source': 'hand-made fixture'}\n"
    "format:         deltacells-dataset version 1\n";

TEST(CellsCli, InfoGolden) {
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"cells", "info"}, std::vector<std::string>{"info"}}) {
    auto args = cmd;
    args.push_back(small_dir().string());
    const auto r = run_cli(args);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out,
              "dataset:        local:" + fs::absolute(small_dir()).lexically_normal().string() + "\n" + kSmallInfo);
    EXPECT_EQ(r.err, "");
  }
  const auto uri = run_cli({"cells", "info", "file://" + small_dir().string()});
  EXPECT_EQ(uri.rc, 0) << uri.err;
  const auto bad = run_cli({"cells", "info", "ftp://host/prefix"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(
      bad.err,
      "error: unsupported URI scheme ftp:// (supported: local paths, file://, http://, https://, s3://, gs://)\n");
}

TEST(CellsCli, VerifyGolden) {
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"cells", "verify"}, std::vector<std::string>{"verify"}}) {
    auto args = cmd;
    args.push_back(small_dir().string());
    const auto r = run_cli(args);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(std::regex_match(
        r.out, std::regex("verified 1/3 tiles\nverified 3/3 tiles\nOK: 3 tiles, 10 cells in [0-9]+\\.[0-9]s\n")))
        << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(CellsCli, VerifyReportsMismatchesAndWarnings) {
  TempDir tmp;
  fs::copy(small_dir(), tmp / "ds", fs::copy_options::recursive);
  fs::permissions(tmp / "ds", fs::perms::owner_all, fs::perm_options::add);
  for (const auto& e : fs::recursive_directory_iterator(tmp / "ds"))
    fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
  std::string manifest = read_file_text(tmp / "ds/manifest.json");
  const std::string good = manifest;
  manifest.replace(manifest.find("\"format\""), 8, "\"extra\": 1,\n  \"format\"");
  tessera::testing::write_file_text(tmp / "ds/manifest.json", manifest);
  auto r = run_cli({"cells", "verify", (tmp / "ds").string(), "--threads", "2"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("warning: manifest.json has keys outside the format (extra)"), std::string::npos) << r.err;
  manifest = good;
  manifest.replace(manifest.find("    8,"), 6, "    9,");
  tessera::testing::write_file_text(tmp / "ds/manifest.json", manifest);
  r = run_cli({"cells", "verify", (tmp / "ds").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "verified 1/3 tiles\n");
  EXPECT_EQ(r.err, "tile 1: nonzero count differs from the manifest\n");
  // A damaged tile: the rule is named.
  tessera::testing::write_file_text(tmp / "ds/manifest.json", good);
  auto tile = tessera::testing::read_file_bytes(tmp / "ds/tiles/tile_000002.dct");
  tile[tile.size() - 3] ^= std::byte{0x40};
  tessera::testing::write_file_bytes(tmp / "ds/tiles/tile_000002.dct", tile);
  r = run_cli({"verify", (tmp / "ds").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("error: tiles/tile_000002.dct: header: CRC-32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(T15)"), std::string::npos) << r.err;
}

TEST(CellsCli, GetJsonMatchesExpected) {
  const auto e = codec::json::parse_strict(
      read_file_text(tessera::testing::conformance_dir() / "deltacells/expected_dataset_small.json"));
  for (const auto& [key, want] : e["get_batch"].items()) {
    const auto r = run_cli({"cells", "get", small_dir().string(), key, "--json"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(codec::json::parse_strict(r.out), want) << r.out;
    EXPECT_NE(r.out.find("\"indptr\": [0, "), std::string::npos) << r.out;
  }
  auto r = run_cli({"cells", "get", small_dir().string(), "7:9,3"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "7\t2\t0:3 3:1\n8\t1\t1:7\n3\t0\t\n");
  r = run_cli({"cells", "get", small_dir().string(), "0", "--names"});
  EXPECT_EQ(r.out, "0\t2\tGD:5 GA:1\n");
  r = run_cli({"cells", "get", small_dir().string(), "2,10"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: cell 10 outside the valid range [0, 10)\n");
  r = run_cli({"cells", "get", small_dir().string(), "1,x"});
  EXPECT_EQ(r.rc, 2);
  r = run_cli({"cells", "get", small_dir().string(), "1", "--obs", "cell_type"});
  EXPECT_EQ(r.rc, 1);
}

TEST(CellsCli, ConvertNeedsExactlyOneInputKind) {
  TempDir tmp;
  auto r = run_cli({"cells", "convert", "--h5ad-glob", (tmp / "a.h5ad").string(), "--output", (tmp / "o").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no input matches"), std::string::npos) << r.err;
  r = run_cli({"cells", "convert", "--h5ad-glob", (tmp / "a*.h5ad").string(), "--output", (tmp / "o").string(),
               "--no-obs", "--no-var"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no input matches " + (tmp / "a*.h5ad").string()), std::string::npos) << r.err;
  r = run_cli(
      {"cells", "convert", "--10x-h5", "a.h5", "--output", (tmp / "o").string(), "--no-obs", "--no-var", "--use-raw"});
  EXPECT_EQ(r.rc, 2) << r.err;
  r = run_cli({"cells", "convert", "--h5ad-glob", "a.h5ad", "--output", (tmp / "o").string(), "--no-obs", "--no-var",
               "--10x-genome", "hg19"});
  EXPECT_EQ(r.rc, 2) << r.err;
  r = run_cli({"cells", "convert", "--output", (tmp / "o").string()});
  EXPECT_EQ(r.rc, 2);
  r = run_cli({"cells", "convert", "--h5ad-glob", "a", "--10x-h5", "b", "--output", "o"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(fs::exists(tmp / "o"));
}

TEST(CellsCli, TileFilesAreDetected) {
  const auto tile = tessera::testing::conformance_dir() / "deltacells/tiles/basic_5x10_2chunks.dct";
  auto r = run_cli({"info", tile.string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("cells x genes:  5 x 10\n"), std::string::npos);
  r = run_cli({"verify", tile.string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "OK: tile of 5 cells, 11 nonzeros\n");
  r = run_cli({"verify", (tile.parent_path() / "corrupt/bad_version.dct").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("(T3)"), std::string::npos);
}

// §2.6 in Python: header, entries, indptr, zstandard frames, byte planes, exceptions.
constexpr const char* kPythonDecoder = R"PY(
import json, struct, sys
import numpy as np, zstandard
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'DELTACEL'
version, flags, n_cells, nnz, n_genes, n_chunks, indptr_off, total, crc, res = struct.unpack_from('<IIQQIIQQII', d, 8)
assert total == len(d)
E = 64 if version == 1 else 96
indptr = np.frombuffer(d, '<i8', n_cells + 1, indptr_off)
indices = np.zeros(nnz, np.int64); values = np.zeros(nnz, np.int64)
def frame(off, ln):
    return zstandard.ZstdDecompressor().decompress(d[off:off + ln])
for k in range(n_chunks):
    f = struct.unpack_from('<%dQ' % (E // 8), d, 64 + E * k)
    lo_c, hi_c, lo_n, hi_n = f[:4]; n = hi_n - lo_n
    g = np.frombuffer(frame(f[4], f[5]), np.uint8).astype(np.int64)
    v = np.frombuffer(frame(f[6], f[7]), np.uint8).astype(np.int64)
    gaps = g[:n] | (g[n:] << 8); vals = v[:n] | (v[n:] << 8)
    if version == 2 and f[11]:
        raw = np.frombuffer(frame(f[10], f[11]), '<u4'); kk = len(raw) // 2
        for p, pay in zip(raw[:kk], raw[kk:]): gaps[p] += int(pay)
    if version == 2 and f[9]:
        raw = np.frombuffer(frame(f[8], f[9]), '<u4'); kk = len(raw) // 2
        for p, pay in zip(raw[:kk], raw[kk:]): vals[p] = int(pay)
    for r in range(lo_c, hi_c):
        s, e = indptr[r] - lo_n, indptr[r + 1] - lo_n
        indices[lo_n + s:lo_n + e] = np.cumsum(gaps[s:e])
    values[lo_n:hi_n] = vals
print(json.dumps({'indptr': indptr.tolist(), 'indices': indices.tolist(), 'values': values.tolist()}))
)PY";

TEST(CellsCli, IndependentPythonDecoderReadsTesseraTiles) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "no numpy";
  CsrBlock b;
  std::vector<std::int64_t> values;
  // Cell 0 needs a gap exception and a value exception (v2 only); the v1 matrix drops them.
  const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> rows = {
      {{3, 1}, {70001, 100000}, {70002, 2}}, {}, {{0, 5}, {1, 65535}}, {{79999, 7}}};
  for (const std::uint32_t version : {1u, 2u}) {
    CsrBlock m;
    std::vector<std::int64_t> vals;
    for (const auto& row : rows) {
      for (const auto& [g, v] : row) {
        if (version == 1 && (g >= 65536 || v > 65535)) continue;
        m.indices.push_back(g);
        vals.push_back(v);
      }
      m.indptr.push_back(static_cast<std::int64_t>(m.indices.size()));
    }
    m.values = vals;
    const std::uint64_t n_genes = version == 1 ? 65536 : 80000;
    MemoryCsrSource src(n_genes, m);
    TempDir tmp;
    write_dataset(src, (tmp / "ds").string(), {.version = version, .tile_size = 4, .n_chunks = 2, .level = 5});
    const auto r = tessera::testing::run_python(kPythonDecoder, {(tmp / "ds/tiles/tile_000000.dct").string()});
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto got = codec::json::parse_strict(r.out);
    EXPECT_EQ(got["indptr"].get<std::vector<std::int64_t>>(), m.indptr);
    EXPECT_EQ(got["indices"].get<std::vector<std::int64_t>>(), m.indices);
    EXPECT_EQ(got["values"].get<std::vector<std::int64_t>>(), vals);
    const auto info = run_cli({"cells", "info", (tmp / "ds").string()});
    EXPECT_NE(info.out.find("format:         deltacells-dataset version " + std::to_string(version)),
              std::string::npos);
  }
}

// `cells epoch` walks the same epoch the library's iterator yields: every cell once, the nonzeros
// of the whole matrix, and the batch count the batch size implies; bad options exit 2 or 1.
TEST(CellsCli, EpochVisitsEveryCellOnce) {
  const auto r = run_cli({"cells", "epoch", small_dir().string(), "--batch-size", "3", "--seed", "5", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto got = codec::json::parse_strict(r.out);
  EXPECT_EQ(got["cells"].get<std::uint64_t>(), 10u);
  EXPECT_EQ(got["nnz"].get<std::uint64_t>(), 16u);
  EXPECT_EQ(got["batches"].get<std::uint64_t>(), 4u);  // tiles of 4, 4, 2 cells in batches of 3, spanning tiles
  const auto two = run_cli({"cells", "epoch", small_dir().string(), "--batch-size", "3", "--batches", "2", "--json"});
  EXPECT_EQ(codec::json::parse_strict(two.out)["cells"].get<std::uint64_t>(), 6u);
  const auto ranked = run_cli({"cells", "epoch", small_dir().string(), "--world-size", "2", "--rank", "1", "--json"});
  ASSERT_EQ(ranked.rc, 0) << ranked.err;
  EXPECT_LT(codec::json::parse_strict(ranked.out)["cells"].get<std::uint64_t>(), 10u);
  EXPECT_EQ(run_cli({"cells", "epoch", small_dir().string(), "--batch-size", "0"}).rc, 2);
  const auto bad = run_cli({"cells", "epoch", small_dir().string(), "--values", "int8"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("--values must be float32 or int32"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cells
