// `ragged verify` must not say `ok` about a store it could not verify: an empty directory, a
// deltacells dataset, an export whose root zarr.json was never written, a leaf whose array lost its
// zarr.json (its chunks become unreachable), or a stamp naming a sidecar the leaf does not hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;
using tessera::testing::run_cli;
using tessera::testing::RunResult;

fs::path minimal_leaf() {
  return tessera::testing::conformance_dir() / "zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr";
}

RunResult verify(const fs::path& store) { return run_cli({"ragged", "verify", store.string(), "--text"}); }

void expect_failed(const fs::path& store, const std::string& finding) {
  const RunResult r = verify(store);
  EXPECT_EQ(r.rc, 1) << store << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find(finding), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed: "), std::string::npos) << r.out;
}

class VerifyVerdict : public ::testing::Test {
 protected:
  fs::path copy_of_minimal_leaf() {
    const fs::path leaf = dir_.path() / "11213.zarr";
    fs::copy(minimal_leaf(), leaf, fs::copy_options::recursive);
    return leaf;
  }
  tessera::testing::TempDir dir_{"ragged-verify-verdict"};
};

TEST_F(VerifyVerdict, IntactLeafIsOk) {
  const RunResult r = verify(copy_of_minimal_leaf());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST_F(VerifyVerdict, EmptyDirectoryIsNotAStore) {
  fs::create_directories(dir_.path() / "empty");
  expect_failed(dir_.path() / "empty", "FAIL zarr.json: metadata: the store has no root zarr.json");
}

TEST_F(VerifyVerdict, DeltacellsDatasetIsNotAStore) {
  const fs::path ds = dir_.path() / "ds";
  fs::copy(tessera::testing::conformance_dir() / "deltacells/dataset_small", ds, fs::copy_options::recursive);
  expect_failed(ds, "the store has no root zarr.json");
}

TEST_F(VerifyVerdict, ExportWithoutItsRootIsNotCommitted) {
  const fs::path out = dir_.path() / "export.zarr";
  const RunResult exported =
      run_cli({"tet", "export", tessera::testing::tet_fixture("generated/zstd_f64_3d.tet").string(), out.string()});
  ASSERT_EQ(exported.rc, 0) << exported.err;
  ASSERT_EQ(verify(out).rc, 0);
  fs::remove(out / "zarr.json");  // the root is the export's last write
  expect_failed(out, "the store has no root zarr.json");
}

TEST_F(VerifyVerdict, ArrayWithoutItsZarrJsonLeavesOrphanChunks) {
  const fs::path leaf = copy_of_minimal_leaf();
  fs::remove(leaf / "6/h_tdigest/zarr.json");
  expect_failed(leaf, "FAIL 6/h_tdigest/c/0: metadata: an object that belongs to no array or group");
}

TEST_F(VerifyVerdict, StampNamingAMissingSidecarFails) {
  const fs::path leaf = copy_of_minimal_leaf();
  std::string root = tessera::testing::read_file_text(leaf / "zarr.json");
  const auto at = root.find("\"coverage.moc\"");
  ASSERT_NE(at, std::string::npos);
  root.replace(at, 14, "\"coverage.mod\"");  // one flipped bit in the name
  tessera::testing::write_file_text(leaf / "zarr.json", root);
  expect_failed(leaf,
                "FAIL coverage.mod: coverage: the commit stamp names this sidecar, but the leaf does not hold it");
  expect_failed(leaf, "FAIL coverage.moc: metadata: an object that belongs to no array or group");
}

// An array whose zarr.json declares 2^62 elements fails the structural checks; verify must not
// then walk it to its declared end to compare content hashes with the stats sidecar (it used to
// run until killed). `timeout` turns such a walk into exit status 124.
TEST_F(VerifyVerdict, DamagedShapeIsReportedNotHashed) {
  const fs::path leaf = copy_of_minimal_leaf();
  const RunResult hashes = run_cli({"ragged", "hashes", leaf.string()});
  ASSERT_EQ(hashes.rc, 0) << hashes.err;
  tessera::testing::write_file_text(dir_.path() / "stats.json", hashes.out);
  const fs::path meta = leaf / "6/h_tdigest/zarr.json";
  std::string text = tessera::testing::read_file_text(meta);
  const auto at = text.find("\"shape\"");
  ASSERT_NE(at, std::string::npos);
  const auto open = text.find('[', at), close = text.find(']', at);
  text.replace(open, close - open + 1, "[4611686018427387904]");
  tessera::testing::write_file_text(meta, text);
  const RunResult r = tessera::testing::run_process(
      {"timeout", "120", tessera::testing::cli_path(), "ragged", "verify", leaf.string()});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\"hashes\": \"not checked\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("must be a dense uint64 array of the payload's shape"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessera::ragged
