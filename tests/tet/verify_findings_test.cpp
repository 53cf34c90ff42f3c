// `tet verify` must not pass a file that readers misread: two datasets of one name (readers find
// only the first) or chunk payloads that share bytes (two chunks decode from one payload, so the
// data differs from what was written: a sum of 20 instead of 28 in the campaign's case).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::tet {
namespace {

namespace fs = std::filesystem;
using tessera::testing::run_cli;
using tessera::testing::RunResult;

fs::path patched_copy(const tessera::testing::TempDir& dir, const std::string& fixture,
                      const std::function<void(std::vector<std::byte>&)>& patch) {
  auto bytes = tessera::testing::read_file_bytes(tessera::testing::tet_fixture(fixture));
  patch(bytes);
  const fs::path path = dir.path() / fs::path(fixture).filename();
  tessera::testing::write_file_bytes(path, bytes);
  return path;
}

TEST(VerifyFindings, DuplicateDatasetNameFails) {
  tessera::testing::TempDir dir("tet-verify-names");
  // multi_dataset.tet: "ints/i64" (offset 112) renamed to the earlier "ints/i32", same length.
  const fs::path file = patched_copy(dir, "generated/multi_dataset.tet", [](std::vector<std::byte>& b) {
    const std::string name = "ints/i32";
    for (std::size_t i = 0; i < name.size(); ++i) b[112 + i] = static_cast<std::byte>(name[i]);
  });
  const RunResult r = run_cli({"tet", "verify", file.string()});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("dataset 1 (\"ints/i32\"): the name of an earlier dataset"), std::string::npos) << r.out;
}

TEST(VerifyFindings, OverlappingPayloadsFail) {
  tessera::testing::TempDir dir("tet-verify-overlap");
  // sample.tet: chunk 1's payload moved from 360 into chunk 0's [344, 360).
  const fs::path file = patched_copy(dir, "sample.tet", [](std::vector<std::byte>& b) {
    store_le<std::uint64_t>(b.data() + 104 + 32 + 104 + 72, 352);
  });
  const RunResult r = run_cli({"tet", "verify", "--deep", file.string()});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("chunk 0 payload [344, 360) overlaps chunk 1 at 352"), std::string::npos) << r.out;
}

TEST(VerifyFindings, ConformanceFilesHaveNoSuchFindings) {
  for (const char* fixture : {"sample.tet", "large.tet", "generated/multi_dataset.tet", "generated/meta_spill.tet"}) {
    const RunResult r = run_cli({"tet", "verify", "--deep", tessera::testing::tet_fixture(fixture).string()});
    EXPECT_EQ(r.rc, 0) << fixture << "\n" << r.out << r.err;
    EXPECT_EQ(r.out.find("dataset_names"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("overlaps"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace tessera::tet
