// `tessera tet cat` on every conformance `.tet` dataset must produce exactly the values the
// conformance README and spec tet.md §8.4 state. numpy (an independent reader of .npy) loads
// each output and compares it with the array built from the stated formula.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/testing.hpp"

namespace tessera::testing {
namespace {

struct CatCase {
  std::string file;  // relative to the tetration conformance folder
  std::string dataset;
  std::string selection;  // JSON, or empty for the whole dataset
  std::string expected;   // numpy expression for the expected array
};

const std::vector<CatCase>& cases() {
  static const std::vector<CatCase> kCases = {
      {"sample.tet", "temperature", "", "np.arange(1, 7, dtype='<f4').reshape(2, 3)"},
      {"multichunk_u8.tet", "a", "", "np.arange(1, 7, dtype='|u1').reshape(2, 3)"},
      {"multichunk_u32.tet", "a", "", "np.arange(1, 7, dtype='<u4').reshape(2, 3)"},
      {"multichunk_f16.tet", "a", "", "np.arange(1, 7, dtype='<f2').reshape(2, 3)"},
      {"large.tet", "a", "", "np.arange(2176, dtype='<f4').reshape(34, 64)"},
      {"large.tet", "a", R"([{"start":1,"stop":33,"step":4},{"start":3,"stop":60,"step":7}])",
       "np.arange(2176, dtype='<f4').reshape(34, 64)[1:33:4, 3:60:7]"},
      {"generated/zstd_f64_3d.tet", "cube", "", "(0.5 * np.arange(60)).astype('<f8').reshape(5, 4, 3)"},
      {"generated/zstd_f64_3d.tet", "cube", R"([{"step":2},{"start":1},{"stop":2}])",
       "(0.5 * np.arange(60)).astype('<f8').reshape(5, 4, 3)[::2, 1:, :2]"},
      {"generated/multi_dataset.tet", "ints/i32", "", "np.arange(-7, 8, dtype='<i4').reshape(3, 5)"},
      {"generated/multi_dataset.tet", "ints/i64", "", "(np.arange(7, dtype='<i8') * 10**12)"},
      {"generated/multi_dataset.tet", "u16_cube", "", "(65535 - np.arange(8)).astype('<u2').reshape(2, 2, 2)"},
      {"generated/multi_dataset.tet", "i16_sq", "", "(-1000 * np.arange(16)).astype('<i2').reshape(4, 4)"},
      {"generated/multi_dataset.tet", "u64_vec", "", "np.array([1, 2**63 - 1, 42], dtype='<u8')"},
      {"generated/qc_f32.tet", "qc", "",
       "np.array([1, np.nan, 3, np.inf, -2, -np.inf, np.nan, 8], dtype='<f4').reshape(2, 4)"},
      {"generated/labeled.tet", "temperature", "", "np.arange(12, dtype='<f4').reshape(4, 3)"},
      {"generated/labeled.tet", "temperature",
       R"([{"start_label":"2024-01-02","stop_label":"2024-01-04"},{"start_label":"B"}])",
       "np.array([[4, 5], [7, 8]], dtype='<f4')"},
      {"generated/meta_spill.tet", "d0", "", "np.arange(4, dtype='<f4')"},
      {"generated/meta_spill.tet", "d1", "", "np.arange(10, 14, dtype='<f4')"},
  };
  return kCases;
}

TEST(TetCatValues, EveryConformanceDatasetMatchesNumpy) {
  if (!have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is required";
  TempDir tmp;
  const auto dir = conformance_dir() / "tetration";
  std::string checks = "import numpy as np, sys\nbad = []\n";
  for (std::size_t i = 0; i < cases().size(); ++i) {
    const CatCase& c = cases()[i];
    const auto out = tmp / ("case" + std::to_string(i) + ".npy");
    std::vector<std::string> args = {"tet", "cat", (dir / c.file).string(), c.dataset, "--out", out.string()};
    if (!c.selection.empty()) {
      args.push_back("--selection");
      args.push_back(c.selection);
    }
    const RunResult r = run_cli(args);
    ASSERT_EQ(r.rc, 0) << c.file << " " << c.dataset << ": " << r.err;
    EXPECT_EQ(r.out, "");
    checks += "got = np.load(r'" + out.string() + "')\nexp = " + c.expected + "\n";
    checks +=
        "if got.dtype != exp.dtype or got.shape != exp.shape or not np.array_equal(got, exp, equal_nan=got.dtype.kind "
        "== 'f'):\n";
    checks += "    bad.append(('" + c.file + "', '" + c.dataset + "', " + std::to_string(i) +
              ", str(got.dtype), got.shape, got.ravel()[:8].tolist()))\n";
  }
  checks += "print(bad)\nsys.exit(1 if bad else 0)\n";
  const RunResult py = run_python(checks);
  EXPECT_EQ(py.rc, 0) << py.out << py.err;
  EXPECT_EQ(py.out, "[]\n");
}

TEST(TetCatValues, EmptyFileReportsTheMissingDataset) {
  TempDir tmp;
  const RunResult r = run_cli({"tet", "cat", (conformance_dir() / "tetration/generated/empty.tet").string(), "x",
                               "--out", (tmp / "x.npy").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: dataset \"x\" not found; available: (none)\n");
  EXPECT_FALSE(std::filesystem::exists(tmp / "x.npy"));
}

TEST(TetCatValues, CorruptFooterFailsBeforeWriting) {
  TempDir tmp;
  const RunResult r = run_cli(
      {"tet", "cat", (conformance_dir() / "tetration/plan.tet").string(), "a", "--out", (tmp / "a.npy").string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("error: history footer JSON is invalid: ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "a.npy"));
}

TEST(TetCatValues, SelectionErrorsFollowTheQueryRules) {
  TempDir tmp;
  const auto sample = (conformance_dir() / "tetration/sample.tet").string();
  const auto out = (tmp / "s.npy").string();
  struct Bad {
    std::string selection;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {R"([{"stop":100},{}])", "error: selection[0].stop must be <= shape[0] (2), got 100\n"},
      {R"([{}])", "error: selection must specify exactly 2 axes (one per dataset dimension), got 1\n"},
      {R"([{"step":0},{}])", "error: selection[0].step must be >= 1, got 0\n"},
      {R"([{"start":1,"stop":1},{}])", "error: selection[0]: start must be < stop when both set (got 1 >= 1)\n"},
      {R"([{"start":2},{}])", "error: selection[0].start must be < shape[0] (2), got 2\n"},
      {R"([{"start_label":"x"},{}])", "error: selection coordinate labels require footer metadata for this dataset\n"},
  };
  for (const auto& b : bad) {
    const RunResult r = run_cli({"tet", "cat", sample, "temperature", "--out", out, "--selection", b.selection});
    EXPECT_EQ(r.rc, 1) << b.selection;
    EXPECT_EQ(r.err, b.message) << b.selection;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  // Usage errors (missing required arguments) exit 2.
  EXPECT_EQ(run_cli({"tet", "cat", sample, "temperature"}).rc, 2);
}

}  // namespace
}  // namespace tessera::testing
