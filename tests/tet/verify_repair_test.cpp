// verify and repair (spec tet.md §2, §6.3, §8.4): the facts the spec pins on the generated
// files, the plan.tet repair, and one hand-made corrupt file per structural rule (S1–S14) and per
// semantic rule (§1.9 B), each checked through `tessera tet info` (exact error text) and through
// verify (failing check and recommendation).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/layout.hpp"
#include "tessera/tet/repair.hpp"
#include "tessera/tet/verify.hpp"

namespace tessera::tet {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using testing::run_cli;
using testing::TempDir;

fs::path fixture(const std::string& relative) { return testing::tet_fixture(relative); }

Bytes fixture_bytes(const std::string& relative) { return testing::read_file_bytes(fixture(relative)); }

VerifyReport verify_file(const fs::path& path, bool deep = false) {
  VerifyOptions options;
  options.deep_decode = deep;
  return verify(*io::open_file(path.string()), options);
}

VerifyReport verify_bytes(const Bytes& bytes, const std::string& name = "case.tet") {
  return verify(*io::memory_source(bytes, name));
}

const Finding* find_check(const VerifyReport& r, const std::string& check) {
  for (const auto& f : r.findings)
    if (f.check == check) return &f;
  return nullptr;
}

std::vector<std::string> codes(const VerifyReport& r) {
  std::vector<std::string> out;
  for (const auto& rec : r.recommendations) out.push_back(rec.code);
  return out;
}

template <typename T>
void put(Bytes& b, std::size_t offset, T value) {
  store_le<T>(b.data() + offset, value);
}

void append_text(Bytes& b, std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  b.insert(b.end(), p, p + text.size());
}

// The 16-byte footer tail: u64 history_json_len, u32 version, "THST".
void append_tail(Bytes& b, std::uint64_t json_len, std::uint32_t version = 1) {
  append_le<std::uint64_t>(b, json_len);
  append_le<std::uint32_t>(b, version);
  append_text(b, "THST");
}

void append_footer(Bytes& b, std::string_view json) {
  append_text(b, json);
  append_tail(b, json.size());
}

// sample.tet (tet.md §1.11): superblock fields at 4/8/12/16/24, blob length at 32, the record
// at 40 (name 56–66, shape 72/80, chunk_shape 88/96), TIDX at 104, entries at 136 and 240
// (coords +8, payload_offset +72, raw +80, stored +88, codec +96), payloads 344–367.
constexpr std::size_t kFlags = 12, kIndexOffset = 16, kIndexLength = 24, kBlobLen = 32;
constexpr std::size_t kRecord = 40, kShape = 72, kIndex = 104, kEntry0 = 136, kEntry1 = 240;

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
  EXPECT_EQ(skipped->detail, "decode-check skipped for chunks 128..144 (limit 128); re-run with --deep or "
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
  EXPECT_EQ(run.out, "file: " + path_.string() + "\nsize: 404 bytes\nstatus: failed\nchecks:\n  parse                  FAIL (" +
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
  const auto run = run_cli({"tet", "repair", path_.string(), "--apply", "invalid_layout", "--apply", "bogus"});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "repair finished but verification still failed\n");
  const std::string skipped = ": no in-place repair for this code; re-convert or rewrite required\n";
  EXPECT_EQ(run.out, "file: " + path_.string() + "\nmode: apply\n  [invalid_layout] skipped" + skipped +
                         "  [bogus] skipped" + skipped + "verify_after: failed\n");
  EXPECT_EQ(fs::file_size(path_), 404u);
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
                          path_.string() + " --apply footer_invalid --dry-run\n\nUse: tessera tet repair <path> --apply <code>\n");
  const auto sample = fixture("sample.tet").string();
  const auto empty_plan = run_cli({"tet", "repair", sample});
  EXPECT_EQ(empty_plan.rc, 0);
  EXPECT_EQ(empty_plan.out, "file: " + sample +
                                "\nrepair plan:\n  (no recommendations \u2014 run tessera tet verify first or file is "
                                "ok)\n");
  EXPECT_EQ(run_cli({"tet", "repair", "--json", sample}).out, "{\n  \"path\": \"" + sample + "\",\n  \"actions\": []\n}");
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

// ---- corrupt files: every structural and semantic rule ------------------------------------------

struct CorruptCase {
  std::string name;
  std::function<Bytes()> make;
  std::string error;           // exact text, or its prefix when `prefix_only`
  std::string check;           // the failing verify check
  std::string recommendation;  // expected code, empty for none
  bool prefix_only = false;
};

Bytes sample_with(const std::function<void(Bytes&)>& patch) {
  Bytes b = fixture_bytes("sample.tet");
  patch(b);
  return b;
}

// sample.tet with flag bit 0 set and `footer` appended (the footer bytes, tail included).
Bytes sample_with_footer(const std::function<void(Bytes&)>& append) {
  return sample_with([&](Bytes& b) {
    put<std::uint32_t>(b, kFlags, 1);
    append(b);
  });
}

std::vector<CorruptCase> corrupt_cases() {
  const std::string layout = "invalid_layout", footer = "footer_invalid";
  const std::string ds = "dataset 0 (\"temperature\"): ";
  return {
      {"S1_Short", [] { return sample_with([](Bytes& b) { b.resize(20); }); },
       "file too short for superblock: need 32 bytes, got 20", "parse", layout},
      {"S2_Magic", [] { return sample_with([](Bytes& b) { b[0] = std::byte{'X'}; }); },
       "bad magic: expected TETR, got [88, 69, 84, 82]", "parse", layout},
      {"S3_LayoutVersion", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, 4, 2); }); },
       "unsupported layout_version: 2 (only 1 is supported)", "parse", layout},
      {"S4_IndexRegion", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kIndexLength, 10000); }); },
       "chunk index region is out of bounds for file length 368: offset 104, length 10000", "parse", layout},
      {"S6_NoDirectory",
       [] {
         return sample_with([](Bytes& b) {
           b.resize(36);
           put<std::uint64_t>(b, kIndexOffset, 32);
           put<std::uint64_t>(b, kIndexLength, 0);
         });
       },
       "dataset_count is 1 but dataset directory is missing (file length 36)", "parse", layout},
      {"S7_BlobTooLong", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kBlobLen, 10000); }); },
       "file too short for catalog: need 10040 bytes, got 368", "parse", layout},
      {"S8_RecordOutsideBlob", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kRecord, 100); }); },
       "file too short for catalog: need 156 bytes, got 104", "parse", layout},
      {"S8_Ndim", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kRecord + 8, 9); }); },
       "ndim 9 out of range (max 8)", "parse", layout},
      {"S8_NameUtf8", [] { return sample_with([](Bytes& b) { b[56] = std::byte{0xFF}; }); },
       "invalid UTF-8 in dataset name", "parse", layout},
      {"S9_BlobMismatch", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kBlobLen, 72); }); },
       "dataset blob length mismatch: declared 72, parsed 64", "parse", layout},
      {"S10_IndexOffset", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kIndexOffset, 112); }); },
       "chunk index offset mismatch: superblock says 112, expected 104", "parse", layout},
      {"S11_IndexTooShort", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kIndexLength, 16); }); },
       "file too short for catalog: need 136 bytes, got 120", "parse", layout},
      {"S11_IndexMagic", [] { return sample_with([](Bytes& b) { b[kIndex + 3] = std::byte{'Y'}; }); },
       "bad chunk index magic: expected TIDX, got [84, 73, 68, 89]", "parse", layout},
      {"S11_IndexVersion", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kIndex + 4, 2); }); },
       "unsupported chunk index version: 2", "parse", layout},
      {"S11_EntryCount", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kIndex + 8, 3); }); },
       "chunk index entry count 3 does not fit in region length 240", "parse", layout},
      {"S12_FooterMissing", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kFlags, 1); }); },
       "superblock history flag set but footer missing", "parse", footer},
      {"S12_FooterVersion", [] { return sample_with_footer([](Bytes& b) { append_tail(b, 0, 2); }); },
       "unsupported history footer version 2", "parse", footer},
      {"S12_FooterOutOfBounds", [] { return sample_with_footer([](Bytes& b) { append_tail(b, 1000); }); },
       "history footer out of bounds", "parse", footer},
      {"S13_Codec", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kEntry0 + 96, 2); }); },
       "unsupported codec 2 (supported: 0 = raw, 1 = zstd)", "parse", layout},
      {"S13_RawStored", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1 + 88, 4); }); },
       "raw/stored length mismatch for codec=0: raw=8, stored=4", "parse", layout},
      {"S13_PayloadBounds", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1 + 72, 400); }); },
       "chunk payload [400, 408) out of bounds for file length 368", "parse", layout},
      // A footer shrinks the payload region: a payload may not reach into the footer JSON.
      {"S13_PayloadIntoFooter",
       [] {
         return sample_with_footer([](Bytes& b) {
           put<std::uint64_t>(b, kEntry1 + 72, 362);  // [362, 370) crosses the payload end 368
           append_footer(b, "{}");
         });
       },
       "chunk payload [362, 370) out of bounds for file length 368", "parse", layout},
      {"S14_FooterJson", [] { return sample_with_footer([](Bytes& b) { append_footer(b, "{bad"); }); },
       "history footer JSON is invalid: ", "parse", footer, true},
      {"S14_FooterSchema",
       [] { return sample_with_footer([](Bytes& b) { append_footer(b, R"({"history":[{"op":"write"}]})"); }); },
       "history footer JSON is invalid: ", "parse", footer, true},
      {"S14_MetadataRefBounds",
       [] {
         return sample_with_footer(
             [](Bytes& b) { append_footer(b, R"({"history":[],"metadata_ref":{"offset":1000,"len":0}})"); });
       },
       "history footer metadata_ref out of bounds", "parse", footer},
      {"S14_SpillJson",
       [] {
         return sample_with_footer([](Bytes& b) {
           append_text(b, "[1]");
           append_footer(b, R"({"history":[],"metadata_ref":{"offset":368,"len":3}})");
         });
       },
       "history footer metadata spill JSON is invalid: ", "parse", footer, true},
      {"S14_SpillLimits",
       [] {
         return sample_with_footer([](Bytes& b) {
           const std::string spill = R"({"datasets":{"temperature":{"attrs":{"units":""}}}})";
           append_text(b, spill);
           append_footer(b, R"({"history":[],"metadata_ref":{"offset":368,"len":)" + std::to_string(spill.size()) +
                                "}}");
         });
       },
       "history footer metadata exceeds limits: ", "parse", footer, true},
      {"B_DatasetId", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1, 5); }); },
       "chunk 1: dataset_id 5 >= dataset_count 1", "chunk_dataset_ids", "bad_dataset_id"},
      {"B_DtypeTag", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kRecord + 4, 11); }); },
       ds + "unsupported dtype tag 11", "dataset_tensor_bytes", ""},
      {"B_ZeroExtent", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape, 0); }); },
       ds + "zero extent in shape or chunk_shape", "dataset_tensor_bytes", ""},
      {"B_Overflow", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape, std::uint64_t{1} << 62); }); },
       ds + "logical tensor byte length overflow", "dataset_tensor_bytes", ""},
      {"B_OutsideGrid", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1 + 16, 5); }); },
       ds + "chunk 1 coordinate [0, 5] outside grid [1, 2]", "dataset_tensor_bytes", ""},
      {"B_DuplicateCoordinate", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1 + 16, 0); }); },
       ds + "duplicate chunk coordinate [0, 0]", "dataset_tensor_bytes", ""},
      {"B_ChunkCount", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape + 8, 5); }); },
       ds + "chunk count 2 != expected grid 3", "dataset_tensor_bytes", ""},
      {"B_TileSize", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape + 8, 4); }); },
       "dataset 0 chunk 1: raw_byte_len 8 != tile 16", "dataset_tensor_bytes", ""},
  };
}

class CorruptFile : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptFile, InfoFailsWithTheRuleTextAndVerifyReportsIt) {
  const CorruptCase& c = GetParam();
  TempDir dir("tet-corrupt");
  const fs::path path = dir / "case.tet";
  const Bytes bytes = c.make();
  testing::write_file_bytes(path, bytes);

  const auto info = run_cli({"tet", "info", path.string()});
  EXPECT_EQ(info.rc, 1);
  EXPECT_EQ(info.out, "");
  if (c.prefix_only) {
    EXPECT_EQ(info.err.rfind("error: " + c.error, 0), 0u) << info.err;
    EXPECT_EQ(info.err.back(), '\n');
  } else {
    EXPECT_EQ(info.err, "error: " + c.error + "\n");
  }

  const VerifyReport r = verify_bytes(bytes);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.summary);  // every rule here ends the run
  ASSERT_FALSE(r.findings.empty());
  const Finding& last = r.findings.back();
  EXPECT_EQ(last.check, c.check);
  EXPECT_EQ(last.severity, Severity::Error);
  EXPECT_FALSE(last.ok);
  ASSERT_TRUE(last.detail);
  if (c.prefix_only) {
    EXPECT_EQ(last.detail->rfind(c.error, 0), 0u) << *last.detail;
  } else {
    EXPECT_EQ(*last.detail, c.error);
  }
  if (c.check == "parse") {
    EXPECT_EQ(r.findings.size(), 1u);
  }
  EXPECT_EQ(codes(r), c.recommendation.empty() ? std::vector<std::string>{}
                                               : std::vector<std::string>{c.recommendation});
}

INSTANTIATE_TEST_SUITE_P(Rules, CorruptFile, ::testing::ValuesIn(corrupt_cases()),
                         [](const ::testing::TestParamInfo<CorruptCase>& info) { return info.param.name; });

TEST(CorruptFileVerify, SemanticFailureListsEveryDatasetFirst) {
  const VerifyReport r = verify_bytes(sample_with([](Bytes& b) { put<std::uint32_t>(b, kRecord + 4, 11); }));
  std::vector<std::string> checks;
  for (const auto& f : r.findings) checks.push_back(f.check);
  EXPECT_EQ(checks, (std::vector<std::string>{"superblock", "dataset_directory", "chunk_index", "chunk_payloads",
                                              "chunk_dataset_ids", "dataset_tensor_bytes"}));
  const auto quiet = render_verify_quiet(r);
  EXPECT_EQ(quiet, "path=case.tet status=failed datasets=? chunks=? recommendations=0");
}

TEST(CorruptFileVerify, S5EmptyCatalogReadsOnlyTheSuperblock) {
  // dataset_count 0: the directory and index are not read, so sample.tet's bytes are ignored.
  TempDir dir("tet-corrupt");
  const fs::path path = dir / "case.tet";
  testing::write_file_bytes(path, sample_with([](Bytes& b) { put<std::uint32_t>(b, 8, 0); }));
  const auto info = run_cli({"tet", "info", "-q", path.string()});
  EXPECT_EQ(info.rc, 0) << info.err;
  EXPECT_EQ(info.out, "path=" + path.string() + " file_len=368 layout=1 datasets=0 chunks=0 history=0");
  EXPECT_TRUE(verify_file(path).ok);
}

TEST(CorruptFileVerify, TD11StrayTailWithFlagClearIsIgnored) {
  TempDir dir("tet-corrupt");
  const fs::path path = dir / "case.tet";
  Bytes b = fixture_bytes("sample.tet");
  append_tail(b, 0, 7);  // a THST tail with an unsupported version, flag bit 0 clear
  testing::write_file_bytes(path, b);
  const auto info = run_cli({"tet", "info", "-q", path.string()});
  EXPECT_EQ(info.rc, 0) << info.err;
  EXPECT_EQ(info.out, "path=" + path.string() + " file_len=384 layout=1 datasets=1 chunks=2 history=0");
  const VerifyReport r = verify_file(path);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(find_check(r, "footer")->detail, "absent");
}

TEST(CorruptFileVerify, DuplicatePayloadOffsetIsAnErrorWithoutRecommendation) {
  // Entry 1 reads the first 8 bytes of entry 0's payload: the file still opens (overlap is
  // ignored on read) but verify flags it, and the order warning comes with it.
  const Bytes bytes = sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1 + 72, 344); });
  const VerifyReport r = verify_bytes(bytes);
  EXPECT_FALSE(r.ok);
  const Finding* dup = find_check(r, "payload_offsets");
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ(dup->detail, "duplicate payload_offset at chunk index 1");
  const Finding* order = find_check(r, "payload_order");
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->severity, Severity::Warning);
  EXPECT_EQ(order->detail, "chunk payloads are not contiguous in index order (linear scan may not apply)");
  EXPECT_TRUE(r.recommendations.empty());
  ASSERT_TRUE(r.summary);  // non-fatal: the run reaches the end

  const auto text = render_verify_text(r);
  EXPECT_NE(text.find("\n  payload_offsets        FAIL (duplicate payload_offset at chunk index 1)\n"),
            std::string::npos);
  EXPECT_NE(text.find("\n  payload_order          warn (chunk payloads are not contiguous"), std::string::npos);
}

TEST(CorruptFileVerify, UndecodableChunkIsReportedPerChunk) {
  Bytes bytes = fixture_bytes("generated/zstd_f64_3d.tet");
  const Layout L = parse_layout(*io::memory_source(bytes));
  std::memset(bytes.data() + L.entries[2].payload_offset, 0, 4);  // break the zstd frame magic
  const VerifyReport r = verify_bytes(bytes);
  EXPECT_FALSE(r.ok);
  const Finding* f = find_check(r, "chunk_decode");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->ok);
  EXPECT_EQ(f->detail->rfind("chunk 2: ", 0), 0u) << *f->detail;
  ASSERT_EQ(codes(r), std::vector<std::string>{"chunk_decode_failed"});
  EXPECT_EQ(r.recommendations[0].message, "Chunk payload could not be decoded: " + *f->detail);
  EXPECT_EQ(r.recommendations[0].fix->summary, "Re-convert from the original HDF5/NetCDF/Zarr source.");
  EXPECT_EQ(r.recommendations[0].fix->command, "tessera tet convert <source> <output.tet>");
  ASSERT_TRUE(r.summary);
}

TEST(CorruptFileVerify, ImpossibleTileSizeIsAFindingNotACrash) {
  // sample.tet reshaped to one zstd chunk of [2^60, 1] f32: a 4 EiB tile the check must not
  // try to allocate; its 16 stored bytes are no zstd frame.
  Bytes b = fixture_bytes("sample.tet");
  for (std::size_t axis_offset : {kShape, kShape + 16}) {  // shape, chunk_shape
    put<std::uint64_t>(b, axis_offset, std::uint64_t{1} << 60);
    put<std::uint64_t>(b, axis_offset + 8, 1);
  }
  put<std::uint64_t>(b, kIndexLength, 32 + 104);
  put<std::uint64_t>(b, kIndex + 8, 1);  // entry_count
  put<std::uint64_t>(b, kEntry0 + 80, std::uint64_t{1} << 62);
  put<std::uint32_t>(b, kEntry0 + 96, 1);
  const VerifyReport r = verify_bytes(b);
  const Finding* f = find_check(r, "chunk_decode");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->ok);
  EXPECT_EQ(f->detail->rfind("chunk 0: ", 0), 0u) << *f->detail;
  EXPECT_EQ(codes(r), std::vector<std::string>{"chunk_decode_failed"});
}

TEST(CorruptFileVerify, InlineMetadataOverTheLimitsFailsFooterMetadata) {
  // Inline metadata limits are not enforced on open (§1.9 C), only by verify.
  Bytes b = fixture_bytes("generated/labeled.tet");
  b.resize(600);  // payload region end (§1.11)
  append_footer(b, R"({"history":[],"metadata":{"datasets":{"temperature":{"attrs":{"units":""}}}}})");
  TempDir dir("tet-corrupt");
  const fs::path path = dir / "case.tet";
  testing::write_file_bytes(path, b);
  EXPECT_EQ(run_cli({"tet", "info", "-q", path.string()}).rc, 0);
  const VerifyReport r = verify_file(path);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(find_check(r, "footer")->detail, "history footer valid");
  EXPECT_EQ(r.findings.back().check, "footer_metadata");
  EXPECT_FALSE(r.findings.back().ok);
  EXPECT_TRUE(r.recommendations.empty());
  EXPECT_FALSE(r.summary);
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
  for (const std::vector<std::string>& args : {std::vector<std::string>{"info", "--json"},
                                               std::vector<std::string>{"info", "--all", "-n", "1"},
                                               std::vector<std::string>{"verify", "-q"},
                                               std::vector<std::string>{"verify", "--deep"}}) {
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

TEST(DetectCli, OtherFormatsAreNotSupportedYet) {
  const auto readme = fixture("README.md").string();
  const auto dir = fixture("sources/zarr").string();
  for (const auto& path : {readme, dir}) {
    for (const char* command : {"info", "verify"}) {
      const auto run = run_cli({command, path});
      EXPECT_EQ(run.rc, 1);
      EXPECT_EQ(run.out, "");
      EXPECT_EQ(run.err, "error: " + path + ": format not supported yet (only .tet is supported in this version)\n");
    }
  }
}

}  // namespace
}  // namespace tessera::tet
