// `tet export` (spec tet.md §6.7): every conformance `.tet` (except plan.tet, whose footer is
// corrupt, and empty.tet, which must fail) and every converted source exports to a Zarr v3 store
// that zarrita (node) reads back to exactly the `.tet` values; tessera's own zarr reader agrees.
// Plus the metadata rules (sorted pretty JSON, dimension_names, fill_value from _FillValue,
// zstd codec), padded edge chunks and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "interop_support.hpp"
#include "tessera/core/half.hpp"
#include "tessera/interop/tet_export.hpp"
#include "tessera/io/store.hpp"
#include "tessera/version.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;

// The values of a dataset as zarrita prints them (JavaScript's String(number)).
std::vector<std::string> js_texts(const tet::TetFile& file, const tet::Dataset& ds) {
  std::vector<std::byte> bytes(ds.logical_bytes);
  file.read_box(ds, ds.full_box(), bytes);
  std::vector<std::string> out;
  visit_dtype(ds.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < bytes.size(); i += sizeof(T)) {
      T v;
      std::memcpy(&v, bytes.data() + i, sizeof(T));
      if constexpr (std::is_floating_point_v<T>) {
        // Round-trip through node's own number formatting is avoided: compare as doubles below.
        out.push_back(codec::json::format_f64(static_cast<double>(v), codec::json::FloatStyle::Python));
      } else if (ds.dtype == DType::F16) {
        out.push_back(
            codec::json::format_f64(half_to_double(static_cast<std::uint16_t>(v)), codec::json::FloatStyle::Python));
      } else {
        out.push_back(std::to_string(v));
      }
    }
  });
  return out;
}

bool same_number(const std::string& theirs, const std::string& ours, bool floating) {
  if (!floating) return theirs == ours;
  auto parse = [](const std::string& s) {
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
    return std::stod(s);
  };
  const double a = parse(theirs), b = parse(ours);
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Exports `tet_path` and checks every dataset with zarrita and with tessera's zarr reader.
void check_round_trip(const fs::path& tet_path, const fs::path& store_dir, bool use_zarrita) {
  SCOPED_TRACE(tet_path.string());
  const ExportSummary summary = export_tet_to_zarr(tet_path.string(), store_dir.string());
  const auto file = tet::TetFile::open(tet_path.string());
  EXPECT_EQ(summary.datasets, file.datasets().size());
  EXPECT_EQ(summary.chunks, file.layout().entries.size());

  io::DirectoryStore store(store_dir.string());
  std::vector<std::string> paths;
  for (const auto& ds : file.datasets()) {
    // tessera's reader: the exact bytes.
    const auto array = zarr::Array::open(store, ds.name);
    std::vector<std::byte> ours(ds.logical_bytes);
    file.read_box(ds, ds.full_box(), ours);
    EXPECT_EQ(array.read_all(), ours) << ds.name;
    if (ds.dtype != DType::F16) paths.push_back(ds.name);  // zarrita on node 20 has no float16
  }
  if (!use_zarrita || paths.empty()) return;
  const auto theirs = test::read_with_zarrita(store_dir, paths);
  for (const auto& path : paths) {
    const tet::Dataset& ds = *file.find(path);
    const auto& result = theirs.at(path);
    EXPECT_EQ(result["dtype"].get<std::string>(), dtype_info(ds.dtype).zarr_name) << path;
    EXPECT_EQ(result["shape"].get<std::vector<std::uint64_t>>(), ds.shape) << path;
    const auto values = result["values"].get<std::vector<std::string>>();
    const auto expected = js_texts(file, ds);
    ASSERT_EQ(values.size(), expected.size()) << path;
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < values.size(); ++i)
      if (!same_number(values[i], expected[i], is_float(ds.dtype))) ++mismatches;
    EXPECT_EQ(mismatches, 0u) << path;
  }
}

std::vector<fs::path> conformance_tets() {
  std::vector<fs::path> out;
  for (const auto& dir : {testing::tet_fixture(""), testing::tet_fixture("generated")})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tet" && e.path().filename() != "plan.tet" && e.path().filename() != "empty.tet")
        out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TetExport, ConformanceFilesRoundTripThroughZarrita) {
  const bool zarrita = !test::zarrita_dir().empty();
  if (!zarrita) std::cerr << "zarrita is not installed (npm ci --prefix tests/zarr/node): checking with tessera only\n";
  testing::TempDir tmp("interop-export");
  const auto files = conformance_tets();
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) check_round_trip(f, tmp / f.stem(), zarrita);
}

TEST(TetExport, ConvertedSourcesRoundTripThroughZarrita) {
  const bool zarrita = !test::zarrita_dir().empty();
  testing::TempDir tmp("interop-export-src");
  for (const auto& source : test::all_sources()) {
    const std::string stem = source.parent_path().filename().string() + "_" + source.stem().string();
    const fs::path tet_path = tmp / (stem + ".tet");
    convert_to_tet(source.string(), tet_path.string());
    check_round_trip(tet_path, tmp / stem, zarrita);
  }
}

// f16 chunk files checked with numpy (zarrita cannot decode float16 on node 20).
TEST(TetExport, Float16ChunksMatchNumpy) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "python3 with numpy is required";
  testing::TempDir tmp("interop-export-f16");
  export_tet_to_zarr(testing::tet_fixture("multichunk_f16.tet").string(), (tmp / "z").string());
  test::expect_python_ok(R"(
import sys, json, numpy as np
root = sys.argv[1]
meta = json.load(open(root + '/a/zarr.json'))
assert meta['data_type'] == 'float16' and meta['fill_value'] == 0.0, meta
c00 = np.fromfile(root + '/a/c/0/0', dtype='<f2').reshape(2, 2)
c01 = np.fromfile(root + '/a/c/0/1', dtype='<f2').reshape(2, 2)
full = np.concatenate([c00, c01], axis=1)[:, :3]
assert full.tolist() == [[1, 2, 3], [4, 5, 6]], full
assert c01[:, 1].tolist() == [0, 0]
print('OK')
)",
                         {(tmp / "z").string()});
}

TEST(TetExport, SampleEdgeChunkIsPadded) {
  testing::TempDir tmp("interop-export-sample");
  const auto run =
      testing::run_cli({"tet", "export", testing::tet_fixture("sample.tet").string(), (tmp / "z").string()});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(run.err.starts_with("exported 1 dataset(s), 2 chunk(s) \u2192 " + (tmp / "z").string() + " ("))
      << run.err;
  EXPECT_TRUE(run.err.ends_with("s)\n")) << run.err;
  const auto c00 = testing::read_file_bytes(tmp / "z/temperature/c/0/0");
  const auto c01 = testing::read_file_bytes(tmp / "z/temperature/c/0/1");
  EXPECT_EQ(c00, testing::bytes_of(std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(c01, testing::bytes_of(std::vector<float>{3, 0, 6, 0}));
  EXPECT_EQ(testing::read_file_text(tmp / "z/zarr.json"),
            "{\n  \"attributes\": {\n    \"tetration_export\": \"" + std::string(kVersion) +
                "\"\n  },\n  \"node_type\": \"group\",\n  \"zarr_format\": 3\n}");
  const std::string array = testing::read_file_text(tmp / "z/temperature/zarr.json");
  EXPECT_NE(array.find("\"fill_value\": 0.0,"), std::string::npos) << array;
  EXPECT_EQ(array.find("dimension_names"), std::string::npos);
  EXPECT_TRUE(array.starts_with("{\n  \"attributes\": {\n    \"tetration_dtype\": \"f32\"\n  },\n  \"chunk_grid\""))
      << array;
}

// TD-20: dimension_names from the footer, fill_value from _FillValue (5), padding with it.
TEST(TetExport, LabeledUsesFooterDimNamesAndFill) {
  testing::TempDir tmp("interop-export-labeled");
  export_tet_to_zarr(testing::tet_fixture("generated/labeled.tet").string(), (tmp / "z").string());
  io::DirectoryStore store((tmp / "z").string());
  const auto array = zarr::Array::open(store, "temperature");
  ASSERT_TRUE(array.meta().dimension_names);
  EXPECT_EQ(*array.meta().dimension_names, (std::vector<std::optional<std::string>>{"time", "station"}));
  EXPECT_EQ(array.meta().fill_value.element, testing::bytes_of(std::vector<float>{5}));
  EXPECT_EQ(array.meta().attributes["units"], "K");
  EXPECT_EQ(array.meta().attributes["_FillValue"], "5");
  // Tile (1,1) covers rows 3..3, column 2: one value (11), the rest padded with 5.
  EXPECT_EQ(testing::read_file_bytes(tmp / "z/temperature/c/1/1"),
            testing::bytes_of(std::vector<float>{11, 5, 5, 5, 5, 5}));
}

// zstd datasets keep their codec (interior tiles verbatim, edge tiles re-encoded); groups per
// name prefix.
TEST(TetExport, ZstdAndGroups) {
  testing::TempDir tmp("interop-export-zstd");
  export_tet_to_zarr(testing::tet_fixture("generated/multi_dataset.tet").string(), (tmp / "z").string());
  EXPECT_EQ(testing::read_file_text(tmp / "z/ints/zarr.json"),
            "{\n  \"node_type\": \"group\",\n  \"zarr_format\": 3\n}");
  const std::string meta = testing::read_file_text(tmp / "z/ints/i64/zarr.json");
  EXPECT_NE(meta.find("\"name\": \"zstd\""), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"level\": 0"), std::string::npos) << meta;
  const auto file = tet::TetFile::open(testing::tet_fixture("generated/multi_dataset.tet").string());
  const auto& first = file.entry(file.find("ints/i64")->entry_of_chunk[0]);
  EXPECT_EQ(testing::read_file_bytes(tmp / "z/ints/i64/c/0"),
            file.source().read_vector(first.payload_offset, first.stored_byte_len));
}

TEST(TetExport, Refusals) {
  testing::TempDir tmp("interop-export-errors");
  const std::string empty = testing::tet_fixture("generated/empty.tet").string();
  auto run = testing::run_cli({"tet", "export", empty, (tmp / "e").string()});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "error: no datasets in " + empty + "\n");
  EXPECT_FALSE(fs::exists(tmp / "e/zarr.json"));

  fs::create_directories(tmp / "full");
  testing::write_file_text(tmp / "full/x", "x");
  run = testing::run_cli({"tet", "export", testing::tet_fixture("sample.tet").string(), (tmp / "full").string()});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err, "error: export output `" + (tmp / "full").string() + "` exists and is not empty\n");

  // An existing empty directory is fine.
  fs::create_directories(tmp / "empty_dir");
  EXPECT_NO_THROW(export_tet_to_zarr(testing::tet_fixture("sample.tet").string(), (tmp / "empty_dir").string()));

  run = testing::run_cli({"tet", "export", testing::tet_fixture("plan.tet").string(), (tmp / "p").string()});
  EXPECT_EQ(run.rc, 1);
  EXPECT_TRUE(run.err.starts_with("error: history footer JSON is invalid")) << run.err;
}

}  // namespace
}  // namespace tessera::interop
