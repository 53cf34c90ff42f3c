// verify and repair (spec tet.md §2, §6.3, §8.4): the facts the spec pins on the generated
// files, the plan.tet repair, and the CLI surface of verify and of `tessera info|verify`.
// One hand-made corrupt file per rule lives in corrupt_file_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/tet/layout.hpp"
#include "tessera/tet/repair.hpp"
#include "tessera/tet/verify.hpp"
#include "verify_testing.hpp"

namespace tessera::tet {
namespace {

using namespace verify_testing;
// ---- §8.4 facts ---------------------------------------------------------------------------------

TEST(VerifyFacts, EmptyFile) {
  const auto path = fixture("generated/empty.tet");
  const auto info = run_cli({"tet", "info", "-q", path.string()});
  EXPECT_EQ(info.rc, 0);
  EXPECT_EQ(info.out, "path=" + path.string() + " file_len=32 layout=1 datasets=0 chunks=0 history=0");
  const auto json = nlohmann::json::parse(run_cli({"tet", "info", "--json", path.string()}).out);
  EXPECT_EQ(json["summary"]["file_execution"],
            nlohmann::json({{"memory_budget_bytes", 0}, {"memory_budget_percent_bps", 0}}));

  const VerifyReport r = verify_file(path);
  EXPECT_TRUE(r.ok);
  ASSERT_NE(find_check(r, "chunk_decode"), nullptr);
  EXPECT_EQ(find_check(r, "chunk_decode")->detail, "decoded 0 chunk(s)");
  EXPECT_EQ(find_check(r, "footer")->detail, "absent");
  ASSERT_TRUE(r.summary);
  EXPECT_EQ(r.summary->dataset_count, 0u);
  EXPECT_EQ(r.summary->chunk_count, 0u);
}

TEST(VerifyFacts, LargeQuickDecodesTheFirst128AndWarns) {
  const VerifyReport quick = verify_file(fixture("large.tet"));
  EXPECT_TRUE(quick.ok);
  const Finding* skipped = find_check(quick, "chunk_decode_skipped");
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->severity, Severity::Warning);
  EXPECT_TRUE(skipped->ok);
  EXPECT_EQ(skipped->detail,
            "decode-check skipped for chunks 128..144 (limit 128); re-run with --deep or "
            "VerifyOptions::deep_decode");
  EXPECT_EQ(find_check(quick, "chunk_decode")->detail, "decoded 128 of 144 chunk(s)");
  EXPECT_FALSE(quick.summary->deep_chunk_decode);
  EXPECT_TRUE(quick.recommendations.empty());  // warnings produce no recommendation

  const VerifyReport deep = verify_file(fixture("large.tet"), /*deep=*/true);
  EXPECT_TRUE(deep.ok);
  EXPECT_EQ(find_check(deep, "chunk_decode_skipped"), nullptr);
  EXPECT_EQ(find_check(deep, "chunk_decode")->detail, "decoded 144 chunk(s)");
  EXPECT_TRUE(deep.summary->deep_chunk_decode);
}

TEST(VerifyFacts, DecodeCheckDoesNotDependOnThreads) {
  VerifyOptions serial;
  serial.deep_decode = true;
  serial.threads = 1;
  VerifyOptions parallel = serial;
  parallel.threads = 0;
  const auto src = io::open_file(fixture("large.tet").string());
  EXPECT_EQ(render_verify_json(verify(*src, serial)), render_verify_json(verify(*src, parallel)));
}

TEST(VerifyFacts, LabeledSummary) {
  const VerifyReport r = verify_file(fixture("generated/labeled.tet"));
  EXPECT_TRUE(r.ok);
  ASSERT_TRUE(r.summary);
  EXPECT_EQ(r.summary->history_events, 1u);
  EXPECT_TRUE(r.summary->has_metadata);
  EXPECT_TRUE(r.summary->history_footer);
  EXPECT_EQ(find_check(r, "footer")->detail, "history footer valid");
}

TEST(VerifyFacts, MetaSpillFooterIsValid) {
  const VerifyReport r = verify_file(fixture("generated/meta_spill.tet"));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(find_check(r, "footer")->detail, "history footer valid");
  EXPECT_EQ(find_check(r, "footer_metadata")->detail, "metadata within MetadataLimitsV1");
}

TEST(VerifyFacts, MultiDatasetFileExecution) {
  const auto out = run_cli({"tet", "info", "--json", fixture("generated/multi_dataset.tet").string()});
  ASSERT_EQ(out.rc, 0) << out.err;
  EXPECT_EQ(nlohmann::json::parse(out.out)["summary"]["file_execution"],
            nlohmann::json({{"memory_budget_bytes", 1048576}, {"memory_budget_percent_bps", 4000}}));
}

TEST(VerifyFacts, EveryConformanceFileButPlanVerifiesDeep) {
  int files = 0;
  for (const fs::path& dir : {fixture(""), fixture("generated")}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".tet" || entry.path().filename() == "plan.tet") continue;
      ++files;
      const auto run = run_cli({"tet", "verify", "--deep", "-q", entry.path().string()});
      EXPECT_EQ(run.rc, 0) << entry.path() << "\n" << run.out << run.err;
      EXPECT_NE(run.out.find(" status=ok "), std::string::npos) << run.out;
      EXPECT_EQ(run.err, "");
    }
  }
  EXPECT_EQ(files, 11);
}

// ---- plan.tet and repair --------------------------------------------------------------------------

class RepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "plan.tet";
    testing::write_file_bytes(path_, fixture_bytes("plan.tet"));
  }
  TempDir dir_{"tet-repair"};
  fs::path path_;
};

TEST_F(RepairTest, VerifyRecommendsFooterInvalid) {
  const VerifyReport r = verify_file(path_);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].check, "parse");
  ASSERT_EQ(codes(r), std::vector<std::string>{"footer_invalid"});
  EXPECT_EQ(r.recommendations[0].fix->command,
            "tessera tet repair " + path_.string() + " --apply footer_invalid --dry-run");
  EXPECT_FALSE(r.summary);

  const auto run = run_cli({"tet", "verify", path_.string()});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "verification failed\n");
  EXPECT_EQ(run.out, "file: " + path_.string() +
                         "\nsize: 404 bytes\nstatus: failed\nchecks:\n  parse                  FAIL (" +
                         *r.findings[0].detail +
                         ")\nrecommendations:\n  [footer_invalid] History/metadata footer is present but malformed.\n"
                         "       \u2192 Strip the invalid footer (truncate after chunk payloads).\n"
                         "       \u2192 tessera tet repair " +
                         path_.string() + " --apply footer_invalid --dry-run\n");
}

TEST_F(RepairTest, ApplyTruncatesClearsTheFlagAndVerifies) {
  const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "footer_invalid"});
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.out, "file: " + path_.string() +
                         "\nmode: apply\n  [footer_invalid] applied: truncated to 360 bytes and cleared history footer "
                         "flag\nverify_after: ok\n");
  const Bytes after = testing::read_file_bytes(path_);
  ASSERT_EQ(after.size(), 360u);
  EXPECT_EQ(load_le<std::uint32_t>(after.data() + kFlags), 0u);
  const Bytes before = fixture_bytes("plan.tet");
  EXPECT_TRUE(std::equal(after.begin() + 16, after.end(), before.begin() + 16));  // only the flags changed
  EXPECT_TRUE(verify_file(path_).ok);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator{}), 1);
}

TEST_F(RepairTest, DryRunLeavesTheFile) {
  const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "footer_invalid", "--dry-run", "--json"});
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.out, "{\n  \"path\": \"" + path_.string() +
                         "\",\n  \"dry_run\": true,\n  \"actions\": [\n    {\n      \"code\": \"footer_invalid\",\n"
                         "      \"applied\": false,\n      \"dry_run\": true,\n      \"message\": \"would truncate to "
                         "360 bytes and clear history footer flag (from 404 bytes)\"\n    }\n  ],\n"
                         "  \"verify_after_ok\": null\n}");
  EXPECT_EQ(fs::file_size(path_), 404u);
}

TEST_F(RepairTest, NonRepairableCodeIsSkippedAndTheFailureReported) {
  const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "invalid_layout"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "repair finished but verification still failed\n");
  const std::string skipped = ": no in-place repair for this code; re-convert or rewrite required\n";
  EXPECT_EQ(run.out, "file: " + path_.string() + "\nmode: apply\n  [invalid_layout] skipped" + skipped +
                         "verify_after: failed\n");
  EXPECT_EQ(fs::file_size(path_), 404u);
}

// A code verify never recommends is a malformed command line: exit 2 before the file is read.
TEST_F(RepairTest, UnknownCodeIsAUsageError) {
  for (const char* code : {"nonsense", "bogus"}) {
    const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "invalid_layout", "--apply", code});
    EXPECT_EQ(run.rc, 2) << code;
    EXPECT_EQ(run.out, "");
    EXPECT_NE(run.err.find(std::string("unknown repair code '") + code + "'"), std::string::npos) << run.err;
    EXPECT_EQ(fs::file_size(path_), 404u);
  }
}

TEST_F(RepairTest, ValidFooterIsNeverStripped) {
  const fs::path labeled = dir_ / "labeled.tet";
  const Bytes original = fixture_bytes("generated/labeled.tet");
  testing::write_file_bytes(labeled, original);
  const auto run = run_cli({"tet", "repair", labeled.string(), "--apply", "footer_invalid"});
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.out, "file: " + labeled.string() +
                         "\nmode: apply\n  [footer_invalid] skipped: not recommended by verify for this file; nothing "
                         "to repair\nverify_after: ok\n");
  EXPECT_EQ(testing::read_file_bytes(labeled), original);
}

TEST_F(RepairTest, PlanTextAndEmptyPlan) {
  const auto plan = run_cli({"tet", "repair", path_.string()});
  EXPECT_EQ(plan.rc, 0);
  EXPECT_EQ(plan.out, "file: " + path_.string() +
                          "\nrepair plan:\n  [repairable] footer_invalid \u2014 Strip the invalid footer (truncate "
                          "after chunk payloads). \u2014 try: tessera tet repair " +
                          path_.string() +
                          " --apply footer_invalid --dry-run\n\nUse: tessera tet repair <path> --apply <code>\n");
  const auto sample = fixture("sample.tet").string();
  const auto empty_plan = run_cli({"tet", "repair", sample});
  EXPECT_EQ(empty_plan.rc, 0);
  EXPECT_EQ(empty_plan.out, "file: " + sample +
                                "\nrepair plan:\n  (no recommendations \u2014 run tessera tet verify first or file is "
                                "ok)\n");
  EXPECT_EQ(run_cli({"tet", "repair", "--json", sample}).out,
            "{\n  \"path\": \"" + sample + "\",\n  \"actions\": []\n}");
}

TEST_F(RepairTest, VerifyRepairFixesAndReportsTheSecondRun) {
  const auto run = run_cli({"tet", "verify", "--repair", "-q", path_.string()});
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.out, "path=" + path_.string() + " status=ok datasets=1 chunks=2 recommendations=0");
  EXPECT_EQ(run.err, "");  // -q keeps the repair text off stderr
  EXPECT_EQ(fs::file_size(path_), 360u);
}

TEST_F(RepairTest, VerifyRepairPrintsTheRepairTextOnStderr) {
  const auto run = run_cli({"tet", "verify", "--repair", path_.string()});
  EXPECT_EQ(run.rc, 0);
  EXPECT_EQ(run.err, "file: " + path_.string() +
                         "\nmode: apply\n  [footer_invalid] applied: truncated to 360 bytes and cleared history footer "
                         "flag\nverify_after: ok\n\n");
  EXPECT_NE(run.out.find("status: ok\n"), std::string::npos);
}

TEST_F(RepairTest, MissingTailFallsBackToThePayloadEnd) {
  // Flag set on sample.tet, which has no footer: the tail is unusable, so the payload region
  // end comes from the index (the end of the last payload, 368).
  Bytes b = fixture_bytes("sample.tet");
  put<std::uint32_t>(b, kFlags, 1);
  append_text(b, "trailing bytes");
  testing::write_file_bytes(path_, b);
  ASSERT_EQ(codes(verify_file(path_)), std::vector<std::string>{"footer_invalid"});
  const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "footer_invalid"});
  EXPECT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(testing::read_file_bytes(path_), fixture_bytes("sample.tet"));
}

// ---- CLI surface --------------------------------------------------------------------------------

TEST(VerifyCli, QuietAndJsonAreExclusive) {
  const auto sample = fixture("sample.tet").string();
  EXPECT_EQ(run_cli({"tet", "verify", "-q", "--json", sample}).rc, 2);
  EXPECT_EQ(run_cli({"tet", "info", "-q", "--json", sample}).rc, 2);
  EXPECT_EQ(run_cli({"tet", "info", "-n", "-1", sample}).rc, 2);
  EXPECT_EQ(run_cli({"tet", "verify"}).rc, 2);
}

TEST(VerifyCli, MissingFileIsARuntimeError) {
  const auto run = run_cli({"tet", "verify", "/nonexistent/file.tet"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err.rfind("error: ", 0), 0u) << run.err;
}

TEST(DetectCli, TetFilesBehaveLikeTheTetCommands) {
  const auto sample = fixture("sample.tet").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"info", "--json"}, std::vector<std::string>{"info", "--all", "-n", "1"},
        std::vector<std::string>{"verify", "-q"}, std::vector<std::string>{"verify", "--deep"}}) {
    std::vector<std::string> plain = args, tet = args;
    plain.push_back(sample);
    tet.insert(tet.begin(), "tet");
    tet.push_back(sample);
    const auto a = run_cli(plain), b = run_cli(tet);
    EXPECT_EQ(a.rc, b.rc);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.err, b.err);
  }
  const auto plan = fixture("plan.tet").string();
  EXPECT_EQ(run_cli({"verify", "-q", plan}).out, run_cli({"tet", "verify", "-q", plan}).out);
  EXPECT_EQ(run_cli({"verify", "-q", plan}).rc, 1);
}

TEST(DetectCli, UnrecognizedPathsAreRefusedNamingThePath) {
  TempDir tmp("detect-unrecognized");
  const auto readme = (tmp.path() / "README.md").string();  // a file of prose
  testing::write_file_text(readme, "# Notes\n\nNot a format tessera reads.\n");
  const auto dir = fixture("sources/zarr").string();  // a folder of stores, not a store
  for (const auto& path : {readme, dir}) {
    for (const char* command : {"info", "verify"}) {
      const auto run = run_cli({command, path});
      EXPECT_EQ(run.rc, 1);
      EXPECT_EQ(run.out, "");
      EXPECT_EQ(run.err,
                "error: " + path +
                    ": format not recognized (tessera reads .tet files, deltacells datasets and tiles, and Zarr v3 / "
                    "morton-hive stores)\n");
    }
  }
}

TEST(DetectCli, MissingPathIsAUsageErrorAndAMissingFileAnIoError) {
  EXPECT_EQ(run_cli({"info"}).rc, 2);
  EXPECT_EQ(run_cli({"verify"}).rc, 2);
  const auto run = run_cli({"info", "no-such-file.tet"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("no-such-file.tet"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tessera::tet
