// One hand-made corrupt file per structural rule (S1–S14) and per semantic rule (§1.9 B) of
// spec tet.md, each checked through `tessera tet info` (exact error text) and through verify
// (failing check and recommendation), plus verify's behaviour on files that cannot be read whole.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/tet/layout.hpp"
#include "tessera/tet/verify.hpp"
#include "verify_testing.hpp"

namespace tessera::tet {
namespace {

using namespace verify_testing;

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
           append_footer(b,
                         R"({"history":[],"metadata_ref":{"offset":368,"len":)" + std::to_string(spill.size()) + "}}");
         });
       },
       "history footer metadata exceeds limits: ", "parse", footer, true},
      {"B_DatasetId", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kEntry1, 5); }); },
       "chunk 1: dataset_id 5 >= dataset_count 1", "chunk_dataset_ids", "bad_dataset_id"},
      {"B_DtypeTag", [] { return sample_with([](Bytes& b) { put<std::uint32_t>(b, kRecord + 4, 11); }); },
       ds + "unsupported dtype tag 11", "dataset_tensor_bytes", ""},
      {"B_ZeroExtent", [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape, 0); }); },
       ds + "zero extent in shape or chunk_shape", "dataset_tensor_bytes", ""},
      {"B_Overflow",
       [] { return sample_with([](Bytes& b) { put<std::uint64_t>(b, kShape, std::uint64_t{1} << 62); }); },
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
    // The rule's text, then the file it was found in (docs/reliability.md, "Errors name the file").
    EXPECT_EQ(info.err, "error: " + c.error + " (in " + path.string() + ")\n");
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
  EXPECT_EQ(codes(r),
            c.recommendation.empty() ? std::vector<std::string>{} : std::vector<std::string>{c.recommendation});
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

}  // namespace
}  // namespace tessera::tet
