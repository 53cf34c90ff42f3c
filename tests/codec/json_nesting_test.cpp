// The JSON/TOML nesting limit (docs/reliability.md): every document kind tessera reads rejects
// over-deep text with a typed error naming the document, before any tree is built, instead of
// exhausting the stack. Each reader is driven the way users reach it (dataset open, array open,
// hive manifest read, .tet open, selection and query documents, the CLI).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "support/testing.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet_query/query_document.hpp"
#include "tessera/tet_query/selection.hpp"
#include "tessera/zarr/array.hpp"
#include "tet/verify_testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using codec::json::kMaxNestingDepth;

// Deep enough to overflow an 8 MiB stack in any recursive walk of the tree.
constexpr std::size_t kHostile = 100000;

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nested_objects(std::size_t depth) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}

// `text` with its only occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(JsonNesting, DepthIsCountedOutsideStrings) {
  EXPECT_EQ(codec::json::nesting_depth("1"), 0u);
  EXPECT_EQ(codec::json::nesting_depth("[]"), 1u);
  EXPECT_EQ(codec::json::nesting_depth(R"({"a":[1,{"b":[]}],"c":{}})"), 4u);
  EXPECT_EQ(codec::json::nesting_depth(R"(["[[[{{{", "\"[[", "\\"])"), 1u);
  EXPECT_EQ(codec::json::nesting_depth(nested_objects(kHostile)), kHostile);
}

TEST(JsonNesting, ParseStrictAcceptsTheLimitAndRejectsOneMore) {
  EXPECT_NO_THROW(codec::json::parse_strict(nested_arrays(kMaxNestingDepth), "ok.json"));
  try {
    codec::json::parse_strict(nested_arrays(kMaxNestingDepth + 1), "deep.json");
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_EQ(std::string(e.what()), "deep.json: JSON: arrays and objects nest 513 levels deep (limit 512)");
    EXPECT_EQ(e.path(), "deep.json");
    EXPECT_EQ(e.structure(), "JSON");
  }
  EXPECT_THROW(codec::json::parse_strict(nested_objects(kHostile), "deep.json"), LimitError);
}

// The limit is far above anything real: every zarr.json of the conformance data parses.
TEST(JsonNesting, EveryConformanceZarrJsonIsFarBelowTheLimit) {
  std::size_t seen = 0, deepest = 0;
  for (const auto& e : fs::recursive_directory_iterator(testing::conformance_dir())) {
    if (e.path().filename() != "zarr.json" && e.path().filename() != "morton_hive.json") continue;
    const std::string text = testing::read_file_text(e.path());
    EXPECT_NO_THROW(codec::json::parse_strict(text, e.path().string())) << e.path();
    deepest = std::max(deepest, codec::json::nesting_depth(text));
    ++seen;
  }
  EXPECT_GT(seen, 100u);
  EXPECT_LT(deepest, 16u);
}

// A copy of the conformance dataset under `dir` whose manifest metadata value is `value`.
fs::path dataset_with_metadata(const testing::TempDir& dir, const std::string& value) {
  const fs::path root = dir / "ds";
  fs::copy(testing::conformance_dir() / "deltacells/dataset_small", root, fs::copy_options::recursive);
  const std::string manifest = testing::read_file_text(root / "manifest.json");
  testing::write_file_text(root / "manifest.json", replaced(manifest, "\"hand-made fixture\"", value));
  return root;
}

TEST(JsonNesting, CellsManifestMetadata) {
  testing::TempDir dir("deep-cells");
  const fs::path root = dataset_with_metadata(dir, nested_arrays(kHostile));
  try {
    cells::Dataset::open(root.string());
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limit 512"), std::string::npos) << e.what();
  }
}

TEST(JsonNesting, ZarrArrayAttributes) {
  testing::TempDir dir("deep-zarr");
  const auto metadata = [](const std::string& attributes) {
    return R"({"zarr_format":3,"node_type":"array","shape":[2],"data_type":"float32",)"
           R"("chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},)"
           R"("chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},)"
           R"("fill_value":0.0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}],)"
           R"("attributes":{"deep":)" +
           attributes + "}}";
  };
  fs::create_directories(dir / "shallow");
  fs::create_directories(dir / "deep");
  testing::write_file_text(dir / "shallow/zarr.json", metadata(nested_objects(3)));
  testing::write_file_text(dir / "deep/zarr.json", metadata(nested_objects(kHostile)));
  io::DirectoryStore store(dir.path().string());
  EXPECT_NO_THROW(zarr::Array::open(store, "shallow"));
  try {
    zarr::Array::open(store, "deep");
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("deep/zarr.json"), std::string::npos) << e.what();
  }
}

TEST(JsonNesting, RaggedHiveManifest) {
  testing::TempDir dir("deep-hive");
  const fs::path spec = testing::conformance_dir() / "zagg/tests/data/spec/minimal";
  const std::string text = testing::read_file_text(spec / "morton_hive.json");
  testing::write_file_text(dir / "morton_hive.json",
                           replaced(text, "\"short_name\": \"SPEC_FIXTURE\"",
                                    "\"short_name\": \"SPEC_FIXTURE\", \"deep\": " + nested_arrays(kHostile)));
  io::DirectoryStore store(dir.path().string());
  try {
    ragged::hive::Manifest::read(store);
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("morton_hive.json"), std::string::npos) << e.what();
  }
}

// A .tet footer too deep to read is an invalid footer (tet.md §1.8 texts, repairable by verify).
TEST(JsonNesting, TetFooter) {
  using namespace tet::verify_testing;
  testing::TempDir dir("deep-tet");
  Bytes b = fixture_bytes("sample.tet");
  put<std::uint32_t>(b, kFlags, 1);
  append_footer(b, R"({"history":)" + nested_arrays(kHostile) + "}");
  testing::write_file_bytes(dir / "deep.tet", b);
  try {
    tet::TetFile::open((dir / "deep.tet").string());
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("history footer JSON is invalid: history footer: JSON: arrays and objects "
                                          "nest 100001 levels deep (limit 512)",
                                          0),
              0u)
        << e.what();
  }
}

TEST(JsonNesting, Selection) {
  EXPECT_THROW(tet::parse_selection_text(nested_arrays(kHostile)), LimitError);
  EXPECT_THROW(tet::parse_selection_text("[{\"start\":" + nested_objects(kHostile) + "}]"), LimitError);
}

// Query documents keep their own, stricter limit (tet-query.md: 64), measured before parsing.
TEST(JsonNesting, QueryDocuments) {
  const auto usage_text = [](auto&& parse) -> std::string {
    try {
      parse();
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(no UsageError)";
  };
  EXPECT_EQ(usage_text([] { tet::parse_query_json("{\"dataset\":\"a\",\"x\":" + nested_objects(kHostile) + "}"); }),
            "validation: query document nesting depth 100001 exceeds maximum 64");
  std::string dotted;
  for (std::size_t i = 0; i < kHostile; ++i) dotted += "a.";
  EXPECT_EQ(usage_text([&] {
              tet::parse_query_toml("dataset = \"a\"\n" + dotted + "b = 1\n");
            }).rfind("validation: query document nesting depth ", 0),
            0u);
  std::string header = "dataset = \"a\"\n[";
  for (std::size_t i = 0; i < kHostile; ++i) header += "t.";
  EXPECT_EQ(usage_text([&] {
              tet::parse_query_toml(header + "u]\nx = 1\n");
            }).rfind("validation: query document nesting depth ", 0),
            0u);
  // toml++ bounds bracket nesting itself (256); either way a typed error, never a crash.
  EXPECT_THROW(tet::parse_query_toml("dataset = \"a\"\nx = " + nested_arrays(kHostile) + "\n"), Error);
  // Ordinary documents, dotted keys, quoted dots and floats are not mistaken for nesting.
  EXPECT_LT(tet::toml_nesting_depth("dataset = \"a.b.c\"\n[selection]\nq = [0.1, 0.2, 0.3]\n'x.y' = {a.b = 1.5}\n"),
            8u);
  EXPECT_EQ(tet::parse_query_toml("dataset = \"a\"\nmean = []\n").dataset, "a");
}

// The CLI ends with one `error:` line naming the file and exit code 1, not a signal.
TEST(JsonNesting, CliReportsTheFile) {
  testing::TempDir dir("deep-cli");
  const fs::path root = dataset_with_metadata(dir, nested_objects(kHostile));
  const auto r = testing::run_cli({"cells", "info", root.string()});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("manifest.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("limit 512"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera
