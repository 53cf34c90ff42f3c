// Every convert source of the conformance data (sources/{h5,netcdf,zarr}) converts, and every
// dataset equals what an independent reader makes of the source: h5py and netCDF4 (through
// /usr/bin/python3) for HDF5 and NetCDF, numpy over the zstd chunk files for Zarr. The Python side
// derives the expected dataset list (names, traversal order), `.tet` element types, chunk shapes
// and CF-decoded values from the spec's rules on its own. The README's sums and footer facts are
// checked too.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "interop_support.hpp"
#include "tessera/interop/detect.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;
using test::kHdf5Check;
using test::kNetCdfCheck;
using test::kPythonCommon;
using test::sources_dir;

// numpy over the chunk files (bytes + zstd, regular grid, '/' keys), missing chunks as the fill.
constexpr const char* kZarrCheck = R"(
import os, zstandard
src, manifest = sys.argv[1], json.load(open(sys.argv[2]))
ZT = {'bool': 'b', 'int8': 'i1', 'uint8': 'u1', 'int16': 'i2', 'uint16': 'u2', 'int32': 'i4', 'uint32': 'u4',
      'int64': 'i8', 'uint64': 'u8', 'float16': 'f2', 'float32': 'f4', 'float64': 'f8'}
expected = []
def walk(path, name):
    meta = json.load(open(os.path.join(path, 'zarr.json')))
    if meta['node_type'] == 'group':
        for n in sorted(os.listdir(path), key=lambda s: s.encode()):
            if os.path.isfile(os.path.join(path, n, 'zarr.json')): walk(os.path.join(path, n), name + n + '/')
        return
    dt = np.dtype('<' + ZT[meta['data_type']]) if meta['data_type'] != 'bool' else np.dtype(bool)
    shape = meta['shape']; cs = meta['chunk_grid']['configuration']['chunk_shape']
    names = [c['name'] for c in meta['codecs']]
    grid = [-(-s // c) for s, c in zip(shape, cs)]
    full = np.full([g * c for g, c in zip(grid, cs)], meta['fill_value'], dtype=dt)
    for idx in np.ndindex(*grid):
        p = os.path.join(path, 'c', *map(str, idx))
        if not os.path.exists(p): continue
        data = open(p, 'rb').read()
        if 'zstd' in names: data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, cs))
        full[sl] = np.frombuffer(data, dtype=dt).reshape(cs)
    values = full[tuple(slice(0, s) for s in shape)]
    if dt.kind == 'b': values = values.view(np.uint8)
    expected.append((name.rstrip('/'), values, TARGET[key(dt)], [min(c, s) for c, s in zip(cs, shape)]))
walk(src, '')
compare(expected, manifest)
)";

class ConvertSources : public ::testing::TestWithParam<fs::path> {};

TEST_P(ConvertSources, EveryDatasetMatchesAnIndependentReader) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "python3 with numpy is required";
  const fs::path source = GetParam();
  testing::TempDir tmp("interop-sources");
  const fs::path out = tmp / "out.tet";
  const ConvertReport report = convert_to_tet(source.string(), out.string(), {.jobs = 2});
  EXPECT_FALSE(report.datasets.empty());
  test::dump_datasets(out, tmp / "npy");
  const std::string kind = source.parent_path().filename().string();
  const char* check = kind == "h5" ? kHdf5Check : kind == "netcdf" ? kNetCdfCheck : kZarrCheck;
  test::expect_python_ok(std::string(kPythonCommon) + check, {source.string(), (tmp / "npy/manifest.json").string()});
}

INSTANTIATE_TEST_SUITE_P(All, ConvertSources, ::testing::ValuesIn(test::all_sources()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           std::string name =
                               info.param.parent_path().filename().string() + "_" + info.param.stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

double sum_of(const tet::TetFile& file, const std::string& name) {
  const tet::Dataset* ds = file.find(name);
  if (ds == nullptr) throw std::runtime_error("missing dataset " + name);
  std::vector<std::byte> bytes(ds->logical_bytes);
  file.read_box(*ds, ds->full_box(), bytes);
  double sum = 0;
  visit_dtype(ds->dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < bytes.size(); i += sizeof(T)) {
      T v;
      std::memcpy(&v, bytes.data() + i, sizeof(T));
      sum += static_cast<double>(v);
    }
  });
  return sum;
}

// The README's reference statistics hold for the h5, nc and Zarr copies of the same data.
TEST(ConvertSources, ReadmeSums) {
  const std::map<std::string, std::array<double, 4>> sums = {
      {"tensor_3d", {16384.4194, 16381.55893, 16278867, 536854791}},
      {"groups_3d", {16384.4194, 16381.55893, 16278867, 536854791}},
      {"tensor_4d", {32765.84604, 32771.22867, 32610252, 2147451873}},
      {"tensor_5d", {16386.01814, 16386.05205, 16279009, 536854197}},
  };
  testing::TempDir tmp("interop-sums");
  for (const auto& [store, expected] : sums) {
    const std::string prefix = store == "groups_3d" ? "primary/" : "";
    for (const auto& input : {sources_dir() / "h5" / (store + ".h5"), sources_dir() / "netcdf" / (store + ".nc"),
                              sources_dir() / "zarr" / store}) {
      SCOPED_TRACE(input.string());
      const fs::path out = tmp / (store + "_" + input.parent_path().filename().string() + ".tet");
      convert_to_tet(input.string(), out.string());
      const auto file = tet::TetFile::open(out.string());
      const char* names[] = {"f32", "f64", "i32", "i64"};
      for (int i = 0; i < 4; ++i) {
        const double tolerance = i < 2 ? 5e-5 : 0.0;
        EXPECT_NEAR(sum_of(file, prefix + names[i]), expected[static_cast<std::size_t>(i)], tolerance) << names[i];
      }
    }
  }
}

// Chunk shapes of the README: h5 source chunking; nc and Zarr whole arrays; CF one tile.
TEST(ConvertSources, ChunkShapesFollowTheSource) {
  testing::TempDir tmp("interop-chunks");
  convert_to_tet((sources_dir() / "h5/tensor_5d.h5").string(), (tmp / "h5.tet").string());
  convert_to_tet((sources_dir() / "zarr/tensor_4d").string(), (tmp / "z.tet").string());
  convert_to_tet((sources_dir() / "h5/cf_3d.h5").string(), (tmp / "cf.tet").string());
  const auto h5 = tet::TetFile::open((tmp / "h5.tet").string());
  EXPECT_EQ(h5.find("f32")->chunk_shape, (std::vector<std::uint64_t>{4, 4, 4, 4, 8}));
  EXPECT_EQ(h5.find("f64")->chunk_shape, (std::vector<std::uint64_t>{4, 4, 4, 4, 4}));
  const auto z = tet::TetFile::open((tmp / "z.tet").string());
  EXPECT_EQ(z.find("i64")->chunk_shape, (std::vector<std::uint64_t>{16, 16, 16, 16}));
  const auto cf = tet::TetFile::open((tmp / "cf.tet").string());
  EXPECT_EQ(cf.find("temperature")->chunk_shape, (std::vector<std::uint64_t>{32, 32, 32}));
  EXPECT_EQ(cf.find("temperature")->dtype, DType::F32);
  EXPECT_EQ(cf.find("f32")->chunk_shape, (std::vector<std::uint64_t>{8, 16, 16}));
  for (const auto& e : cf.layout().entries) EXPECT_EQ(e.codec, 0u);  // always raw
}

// Footer of a converted file: the history row, metadata.file, attrs in shortest decimal form,
// h5 CF coordinates and NetCDF dim names and self labels.
TEST(ConvertSources, FooterMetadata) {
  testing::TempDir tmp("interop-footer");
  const fs::path h5 = tmp / "h5.tet", nc = tmp / "nc.tet", z = tmp / "z.tet";
  convert_to_tet((sources_dir() / "h5/cf_3d.h5").string(), h5.string(), {.at = "1700000000"});
  convert_to_tet((sources_dir() / "netcdf/cf_3d.nc").string(), nc.string());
  convert_to_tet((sources_dir() / "zarr/groups_3d").string(), z.string());

  const auto f = tet::TetFile::open(h5.string());
  const auto& footer = *f.layout().footer;
  ASSERT_EQ(footer.history.size(), 1u);
  EXPECT_EQ(footer.history[0].op, "convert");
  EXPECT_EQ(footer.history[0].source, "h5");
  EXPECT_EQ(footer.history[0].at, "1700000000");
  ASSERT_TRUE(footer.metadata.file);
  EXPECT_EQ(footer.metadata.file->tool, "tessera tet convert");
  EXPECT_EQ(footer.metadata.file->created_at, "1700000000");
  const auto* t = f.metadata_of("temperature");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->attrs.at("units"), "K");
  EXPECT_EQ(t->attrs.at("long_name"), "sea surface temperature");
  EXPECT_EQ(t->attrs.at("scale_factor"), "0.01");
  EXPECT_EQ(t->attrs.at("add_offset"), "273.15");
  EXPECT_EQ(t->attrs.at("_FillValue"), "-9999");
  ASSERT_EQ(t->coords.size(), 3u);
  for (const char* axis : {"time", "lat", "lon"}) EXPECT_EQ(t->coords.at(axis).size(), 32u) << axis;
  EXPECT_EQ(t->coords.at("time").front(), "0");
  EXPECT_EQ(t->coords.at("lat").front(), "-90");
  EXPECT_EQ(f.metadata_of("f32")->attrs.at("tetration_dtype"), "f32");

  const auto n = tet::TetFile::open(nc.string());
  EXPECT_EQ(n.layout().footer->history.at(0).source, "nc");
  EXPECT_EQ(n.metadata_of("temperature")->dim_names, (std::vector<std::string>{"time", "lat", "lon"}));
  EXPECT_EQ(n.metadata_of("time")->coords.at("time").at(31), "31");
  EXPECT_EQ(n.metadata_of("lat")->attrs.at("standard_name"), "latitude");
  // NaN where the stored value is the fill (the h5 copy has 3270 such values, the nc copy none).
  const tet::Dataset* temp = f.find("temperature");
  std::vector<float> values(temp->element_count);
  f.read_box(*temp, temp->full_box(), std::as_writable_bytes(std::span(values)));
  EXPECT_EQ(std::count_if(values.begin(), values.end(), [](float v) { return std::isnan(v); }), 3270);

  EXPECT_EQ(tet::TetFile::open(z.string()).layout().footer->history.at(0).source, "zarr");

  // The labels show in `tet info --metadata`.
  const auto info = testing::run_cli({"tet", "info", "--metadata", h5.string()});
  ASSERT_EQ(info.rc, 0) << info.err;
  EXPECT_NE(info.out.find("time: 0, 1, 2, 3"), std::string::npos) << info.out;
  const auto info_nc = testing::run_cli({"tet", "info", "--metadata", nc.string()});
  EXPECT_NE(info_nc.out.find("dim_names: time, lat, lon"), std::string::npos) << info_nc.out;
  EXPECT_NE(info_nc.out.find("lat: -90, -84.19355"), std::string::npos) << info_nc.out;
}

// The CLI prints the report after an empty line; --jobs does not change the bytes written.
TEST(ConvertSources, CliReportAndJobs) {
  testing::TempDir tmp("interop-cli");
  const fs::path input = sources_dir() / "h5/groups_3d.h5";
  const auto run = testing::run_cli({"tet", "convert", input.string(), (tmp / "a.tet").string(), "--jobs", "3"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.err, "");  // not a terminal: no progress bar
  ASSERT_GE(run.out.size(), 2u);
  EXPECT_EQ(run.out.substr(0, 2), "\n{");
  EXPECT_EQ(run.out.back(), '\n');
  const auto report = codec::json::parse_strict(run.out.substr(1));
  EXPECT_EQ(report["dataset_count"], 5);
  EXPECT_EQ(report["dataset_names"][0], "aux/scale");
  EXPECT_EQ(report["datasets"][1]["dims"], codec::json::Json::parse("[32,32,32]"));
  EXPECT_EQ(report["history"][0]["source"], "h5");
  EXPECT_TRUE(report["elapsed_secs"].is_number());

  convert_to_tet(input.string(), (tmp / "j1.tet").string(), {.jobs = 1, .at = "1"});
  convert_to_tet(input.string(), (tmp / "j8.tet").string(), {.jobs = 8, .at = "1"});
  EXPECT_EQ(testing::read_file_bytes(tmp / "j1.tet"), testing::read_file_bytes(tmp / "j8.tet"));

  const auto bad = testing::run_cli({"tet", "convert", input.string()});
  EXPECT_EQ(bad.rc, 2);
}

}  // namespace
}  // namespace tessera::interop
