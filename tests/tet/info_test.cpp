// `tessera tet info` text outputs the golden cases do not cover (spec tet.md §6.2): every section,
// the chunk limit, history rows with parents and params, verbose coordinate labels, `--grep` and
// `--dataset` filtering with renumbering, name cutting and code-point padding. The expected texts
// are written from the spec's rules and examples.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet/info.hpp"
#include "tessera/tet/layout.hpp"

namespace tessera::tet {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using testing::run_cli;
using testing::TempDir;

fs::path fixture(const std::string& relative) { return testing::tet_fixture(relative); }

std::string info(std::vector<std::string> flags, const fs::path& path) {
  flags.insert(flags.begin(), {"tet", "info"});
  flags.push_back(path.string());
  const auto run = run_cli(flags);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.err, "");
  return run.out;
}

std::string header(const fs::path& path, std::uint64_t size, int datasets, int chunks) {
  return "file: " + path.string() + "\nsize: " + std::to_string(size) +
         " bytes  layout_version: 1  datasets: " + std::to_string(datasets) + "  chunks: " + std::to_string(chunks) +
         "\n";
}

const std::string kDatasetsHeader =
    "datasets:\n   id  name                  dtype  shape             chunk_shape   chunks\n";
const std::string kChunksHeader = "     #  dataset       coords           raw      stored  codec  offset\n";

// labeled.tet up to its payload region end (600, §1.11) with a new footer.
fs::path labeled_with_footer(const TempDir& dir, const std::string& footer_json) {
  Bytes b = testing::read_file_bytes(fixture("generated/labeled.tet"));
  b.resize(600);
  const auto* p = reinterpret_cast<const std::byte*>(footer_json.data());
  b.insert(b.end(), p, p + footer_json.size());
  append_le<std::uint64_t>(b, footer_json.size());
  append_le<std::uint32_t>(b, 1);
  for (char c : std::string("THST")) b.push_back(static_cast<std::byte>(c));
  const fs::path path = dir / "labeled_variant.tet";
  testing::write_file_bytes(path, b);
  return path;
}

// A one-dataset, one-chunk raw file built from the format structures (zero payload).
fs::path single_chunk_file(const TempDir& dir, const std::string& name, std::uint32_t tag,
                           std::vector<std::uint64_t> shape) {
  DatasetRecord record{name, tag, shape, shape};
  Bytes blob;
  record.append_to(blob);
  std::uint64_t tile = dtype_size(*dtype_from_tag(tag));
  for (auto extent : shape) tile *= extent;
  const std::uint64_t index_offset = align8(40 + blob.size());
  Bytes b(Superblock::kSize);
  Superblock{1, 1, 0, index_offset, ChunkIndexHeader::kSize + ChunkEntry::kSize}.encode_to(b.data());
  append_le<std::uint64_t>(b, blob.size());
  b.insert(b.end(), blob.begin(), blob.end());
  b.resize(index_offset + ChunkIndexHeader::kSize + ChunkEntry::kSize);
  ChunkIndexHeader{1, 1, 0, 0}.encode_to(b.data() + index_offset);
  ChunkEntry entry;
  entry.payload_offset = b.size();
  entry.raw_byte_len = entry.stored_byte_len = tile;
  entry.encode_to(b.data() + index_offset + ChunkIndexHeader::kSize);
  b.resize(b.size() + tile);
  const fs::path path = dir / "built.tet";
  testing::write_file_bytes(path, b);
  return path;
}

TEST(InfoText, SpecExampleOnSample) {
  const auto path = fixture("sample.tet");
  EXPECT_EQ(info({}, path), header(path, 368, 1, 2) + "\n" + kDatasetsHeader +
                                "    0  temperature           f32    2\u00d73               2\u00d72           2\n");
  EXPECT_EQ(info({"--chunks"}, path), header(path, 368, 1, 2) + "\nchunks:\n" + kChunksHeader +
                                          "     0  temperature   0,0               16          16    raw  344\n"
                                          "     1  temperature   0,1                8           8    raw  360\n");
}

TEST(InfoText, AllSectionsOnLabeled) {
  const auto path = fixture("generated/labeled.tet");
  const std::string expected = header(path, 999, 1, 4) +
                               "\nlayout:\n"
                               "  layout_version:    1\n"
                               "  dataset_count:     1\n"
                               "  flags:             1 (history_footer=true)\n"
                               "  chunk_index_offset: 104\n"
                               "  chunk_index_length: 448\n"
                               "\nexecution (file defaults):\n"
                               "  (engine defaults \u2014 25% host RAM when unset in query JSON)\n"
                               "\nfile metadata:\n"
                               "  tool: conformance-gen\n"
                               "  library_version: 0.1.9\n"
                               "  created_at: 1795971365\n"
                               "\n" +
                               kDatasetsHeader +
                               "    0  temperature           f32    4\u00d73               3\u00d72           4\n"
                               "       dim_names: time, station\n"
                               "       coords: station(3 labels), time(4 labels)\n"
                               "       _FillValue: 5\n"
                               "       units: K\n"
                               "\nchunks:\n" +
                               kChunksHeader +
                               "     0  temperature   0,0               24          24    raw  552\n"
                               "     1  temperature   0,1               12          12    raw  576\n"
                               "     2  temperature   1,0                8           8    raw  588\n"
                               "     3  temperature   1,1                4           4    raw  596\n"
                               "\nhistory:\n"
                               "    1  write  gen_extra  at=1795971365\n";
  EXPECT_EQ(info({"--all"}, path), expected);
  // Explicit section flags print in the fixed order, whatever the order on the command line.
  EXPECT_EQ(info({"--history", "--execution", "--chunks", "--datasets", "--layout"}, path), expected);
}

TEST(InfoText, ChunkLimit) {
  const auto path = fixture("generated/multi_dataset.tet");
  const std::string head = header(path, 2016, 5, 14) + "\nchunks:\n";
  EXPECT_EQ(info({"--chunks", "-n", "1"}, path),
            head + "  (showing 1 of 14; use -n 0 for all)\n" + kChunksHeader +
                "     0  ints/i32      0,0               16          16    raw  1792\n");
  // Default limit 32 > 14 rows: no "showing" line; -n 0 shows all too.
  const std::string all = info({"--chunks"}, path);
  EXPECT_EQ(all.find("(showing"), std::string::npos);
  EXPECT_EQ(all, info({"--chunks", "--limit", "0"}, path));
  EXPECT_NE(all.find("\n    13  u64_vec       1                  8           8    raw  2008\n"), std::string::npos);
  EXPECT_NE(all.find("\n     6  ints/i64      0                 24          33   zstd  1852\n"), std::string::npos);

  const std::string large = info({"--chunks"}, fixture("large.tet"));
  EXPECT_NE(large.find("  (showing 32 of 144; use -n 0 for all)\n"), std::string::npos);
}

TEST(InfoText, ExecutionSettings) {
  const auto path = fixture("generated/multi_dataset.tet");
  EXPECT_EQ(info({"--execution"}, path), header(path, 2016, 5, 14) +
                                             "\nexecution (file defaults):\n"
                                             "  memory_budget_percent: 40\n"
                                             "  memory_budget_bytes: 1048576\n");
  TempDir dir("tet-info");
  Bytes b = testing::read_file_bytes(path);
  store_le<std::uint16_t>(b.data() + 304 + 16, 1250);  // TIDX memory_budget_percent_bps
  store_le<std::uint32_t>(b.data() + 304 + 20, 0);     // TIDX memory_budget_bytes
  testing::write_file_bytes(dir / "budget.tet", b);
  EXPECT_EQ(info({"--execution"}, dir / "budget.tet"),
            header(dir / "budget.tet", 2016, 5, 14) + "\nexecution (file defaults):\n  memory_budget_percent: 12.5\n");
}

TEST(InfoText, HistoryRowsWithParentsAndParams) {
  TempDir dir("tet-info");
  const auto path =
      labeled_with_footer(dir, R"({"history":[{"op":"convert","source":"h5","at":"1","parents":["a.h5","b.h5"],)"
                               R"("params":{"mode":"fast","level":"3"}},["write","legacy","2"]]})");
  EXPECT_EQ(info({"--history"}, path), header(path, fs::file_size(path), 1, 4) +
                                           "\nhistory:\n"
                                           "    1  convert  h5  at=1\n"
                                           "       parents: a.h5, b.h5\n"
                                           "       level: 3\n"
                                           "       mode: fast\n"
                                           "    2  write  legacy  at=2\n");
  EXPECT_EQ(info({"--history"}, fixture("sample.tet")),
            header(fixture("sample.tet"), 368, 1, 2) + "\nhistory:\n  (none)\n");
}

TEST(InfoText, VerboseCoordinateLabels) {
  const auto path = fixture("generated/labeled.tet");
  EXPECT_EQ(info({"--metadata"}, path),
            header(path, 999, 1, 4) +
                "\nfile metadata:\n"
                "  tool: conformance-gen\n"
                "  library_version: 0.1.9\n"
                "  created_at: 1795971365\n\n" +
                kDatasetsHeader +
                "    0  temperature           f32    4\u00d73               3\u00d72           4\n"
                "       dim_names: time, station\n"
                "       station: A, B, C\n"
                "       time: 2024-01-01, 2024-01-02, 2024-01-03, 2024-01-04\n"
                "       _FillValue: 5\n"
                "       units: K\n");

  // At most 12 labels per axis, then the count of the others; an empty axis says so.
  TempDir dir("tet-info");
  std::string labels;
  for (int i = 0; i < 14; ++i) labels += (i ? ",\"l" : "\"l") + std::to_string(i) + "\"";
  const auto many =
      labeled_with_footer(dir, R"({"history":[],"metadata":{"datasets":{"temperature":{"coords":{"0":{"labels":[)" +
                                   labels + R"(]},"1":{"labels":[]}}}}}})");
  const std::string row = "    0  temperature           f32    4\u00d73               3\u00d72           4\n";
  EXPECT_EQ(info({"--metadata"}, many), header(many, fs::file_size(many), 1, 4) + "\n" + kDatasetsHeader + row +
                                            "       0: l0, l1, l2, l3, l4, l5, l6, l7, l8, l9, l10, l11 (+2 more)\n"
                                            "       1: (empty)\n");
  EXPECT_EQ(info({}, many), header(many, fs::file_size(many), 1, 4) + "\n" + kDatasetsHeader + row +
                                "       coords: 0(14 labels), 1(0 labels)\n");
}

TEST(InfoFilter, GrepMatchesNameDtypeAndMetadata) {
  const auto labeled = fixture("generated/labeled.tet");
  for (const char* needle : {"TEMP", "f32", "Station", "2024-01-03", "_fillvalue", "k"}) {
    const std::string out = info({"--grep", needle, "-q"}, labeled);
    EXPECT_NE(out.find(" datasets=1 chunks=4 "), std::string::npos) << needle << ": " << out;
  }
  EXPECT_EQ(info({"--grep", "nothing-like-this"}, labeled),
            header(labeled, 999, 1, 4) +
                "filter: grep~nothing-like-this\n\nfile metadata:\n"
                "  tool: conformance-gen\n  library_version: 0.1.9\n  created_at: 1795971365\n\n"
                "datasets: (no rows match filter)\n");

  // multi_dataset: only i16_sq has "i16" in its name or dtype; it becomes dataset 0.
  const auto multi = fixture("generated/multi_dataset.tet");
  const Layout L = parse_layout(*io::open_file(multi.string()));
  const ChunkEntry& e = L.entries[11];
  ASSERT_EQ(e.dataset_id, 3u);
  EXPECT_EQ(info({"--grep", "I16", "--datasets", "--chunks"}, multi),
            header(multi, 2016, 5, 14) + "filter: grep~I16\n\n" + kDatasetsHeader +
                "    0  i16_sq                i16    4\u00d74               4\u00d74           1\n"
                "\nchunks:\n" +
                kChunksHeader + "     0  i16_sq        0,0               32  " + std::string(10 - 2, ' ') +
                std::to_string(e.stored_byte_len) + "   zstd  " + std::to_string(e.payload_offset) + "\n");
}

TEST(InfoFilter, DatasetFilterRenumbersChunksAndKeepsOnlyTheirMetadata) {
  const auto multi = fixture("generated/multi_dataset.tet");
  EXPECT_EQ(info({"--dataset", "u64", "-q"}, multi),
            "path=" + multi.string() + " file_len=2016 layout=1 datasets=1 chunks=2 history=0");
  const auto json = nlohmann::json::parse(info({"--dataset", "u64", "--json"}, multi));
  EXPECT_EQ(json["filter"], "dataset~u64");
  ASSERT_EQ(json["summary"]["datasets"].size(), 1u);
  EXPECT_EQ(json["summary"]["datasets"][0]["name"], "u64_vec");
  ASSERT_EQ(json["summary"]["chunks"].size(), 2u);
  for (const auto& c : json["summary"]["chunks"]) EXPECT_EQ(c["dataset_id"], 0);  // was 4
  EXPECT_EQ(json["summary"]["superblock"]["dataset_count"], 5);                   // the file's own value

  EXPECT_EQ(info({"--dataset", "I", "--grep", "64"}, multi),
            header(multi, 2016, 5, 14) + "filter: dataset~I grep~64\n\n" + kDatasetsHeader +
                "    0  ints/i64              i64    7                 3             3\n");

  // labeled: a filter that matches keeps the dataset's metadata; the file metadata always stays.
  TempDir dir("tet-info");
  const auto labeled = fixture("generated/labeled.tet");
  const auto kept = nlohmann::json::parse(info({"--dataset", "temp", "--json"}, labeled));
  EXPECT_TRUE(kept["summary"]["metadata"]["datasets"].contains("temperature"));
  const auto dropped = nlohmann::json::parse(info({"--dataset", "zzz", "--json"}, labeled));
  EXPECT_EQ(dropped["summary"]["metadata"],
            nlohmann::json::parse(R"({"file":{"created_at":"1795971365",)"
                                  R"("library_version":"0.1.9","tool":"conformance-gen"}})"));
  EXPECT_EQ(dropped["summary"]["history"].size(), 1u);
  EXPECT_TRUE(dropped["summary"]["chunks"].empty());
}

TEST(InfoJson, KeysAreSortedAtEveryLevel) {
  const std::string out = info({"--json"}, fixture("generated/labeled.tet"));
  EXPECT_NE(out.find("\"history\": [\n      {\n        \"at\": \"1795971365\",\n        \"op\": \"write\",\n"
                     "        \"source\": \"gen_extra\"\n      }\n    ],"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\"temperature\": {\n          \"attrs\": {\n            \"_FillValue\": \"5\",\n"
                     "            \"units\": \"K\"\n          },\n          \"coords\": {"),
            std::string::npos)
      << out;
  EXPECT_NE(out.back(), '\n');
}

TEST(InfoText, NamesAreCutAndPaddedByCodePoints) {
  TempDir dir("tet-info");
  const auto long_name = single_chunk_file(dir, "a_very_long_dataset_name_x", 6, {3});  // u16
  EXPECT_EQ(info({"--datasets", "--chunks"}, long_name),
            header(long_name, fs::file_size(long_name), 1, 1) + "\n" + kDatasetsHeader +
                "    0  a_very_long_dataset\u2026  u16    3                 3             1\n"
                "\nchunks:\n" +
                kChunksHeader + "     0  a_very_long\u2026  0                  6           6    raw  " +
                std::to_string(fs::file_size(long_name) - 6) + "\n");

  // `é` and `×` are two bytes each but one column.
  const auto accented = single_chunk_file(dir, "caf\u00e9", 10, {1, 2, 3, 4, 5, 6, 7, 8});  // u64
  EXPECT_NE(info({}, accented)
                .find("\n    0  caf\u00e9                  u64    "
                      "1\u00d72\u00d73\u00d74\u00d75\u00d76\u00d77\u00d78   "
                      "1\u00d72\u00d73\u00d74\u00d75\u00d76\u00d77\u00d78  1\n"),
            std::string::npos);
}

TEST(InfoText, EmptyFile) {
  const auto path = fixture("generated/empty.tet");
  EXPECT_EQ(info({}, path), header(path, 32, 0, 0) + "\ndatasets: (empty file)\n");
  EXPECT_EQ(info({"--chunks"}, path), header(path, 32, 0, 0) + "\nchunks: (none)\n");
}

}  // namespace
}  // namespace tessera::tet
