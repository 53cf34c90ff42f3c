// The type map of spec tet.md §6.6 on files written for the test by h5py and netCDF4: int8 → i16
// with source_dtype (TD-15), uint8, h5py bool → u8, float16, uint32, uint64 (A2), big-endian
// storage, CF-packed int16 (TD-19: f32 or f64 after the scale's width, fill → NaN), skipped
// scalars/strings/empty arrays, nested groups, NetCDF-3 classic files; and Zarr stores written by
// tessera's zarr module with sharding, crc32c and missing chunks, or a codec it refuses.
#include <gtest/gtest.h>

#include <cmath>

#include "interop_support.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/array_writer.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWriteHdf5 = R"(
import sys, numpy as np, h5py
with h5py.File(sys.argv[1], 'w') as f:
    f['i8'] = np.array([[-128, -1, 0], [1, 2, 127]], dtype=np.int8)
    f['u8'] = np.arange(250, 256, dtype=np.uint8)
    f['flags'] = np.array([True, False, True, True])
    f['half'] = np.array([0.5, -2.0, 65504.0, np.inf, 1e-7], dtype=np.float16)
    f['u32'] = np.array([0, 4294967295, 7], dtype=np.uint32)
    f['u64'] = np.array([18446744073709551615, 1], dtype=np.uint64)
    f['be_i32'] = np.array([1, -2, 300000], dtype='>i4')
    f.create_dataset('chunked_u16', data=np.arange(100, dtype=np.uint16).reshape(10, 10), chunks=(3, 4))
    p = f.create_dataset('packed', data=np.array([[0, 100, -32767], [5, -32767, 1000]], dtype=np.int16))
    p.attrs['scale_factor'] = np.float32(0.5); p.attrs['add_offset'] = np.float32(10); p.attrs['_FillValue'] = np.int16(-32767)
    q = f.create_dataset('packed64', data=np.array([1, 2, 3], dtype=np.int16))
    q.attrs['scale_factor'] = 0.1  # a Python float: a double attribute
    f['scalar'] = 3.0
    f['text'] = np.array([b'a', b'b'])
    f.create_dataset('empty', shape=(0, 3), dtype='f4')
    f.create_dataset('cplx', data=np.array([1 + 2j]))
    g = f.create_group('z/inner')
    g['v'] = np.array([1.5], dtype='f4'); g['v'].attrs['flag'] = True; g['v'].attrs['count'] = np.int64(-3)
    f['a_first'] = np.array([1], dtype='i4')
)";

constexpr const char* kWriteNetCdf = R"(
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], 'w', format=sys.argv[2])
d.createDimension('x', 3)
d.createDimension('t', None)
def var(name, dt, dims, values, **kw):
    v = d.createVariable(name, dt, dims, **kw); v.set_auto_maskandscale(False); v[...] = values; return v
var('b', 'i1', ('x',), np.array([-5, 0, 5], dtype=np.int8))
var('s', 'i2', ('x',), np.array([-300, 0, 300], dtype=np.int16))
var('f', 'f4', ('t', 'x'), np.arange(6, dtype=np.float32).reshape(2, 3)).units = 'm'
v = var('packed', 'i2', ('x',), np.array([10, -1, 20], dtype=np.int16))
v.scale_factor = np.float64(0.25); v.add_offset = np.float64(1.0)
if sys.argv[2] == 'NETCDF4':
    var('ub', 'u1', ('x',), np.array([0, 128, 255], dtype=np.uint8))
    var('us', 'u2', ('x',), np.array([0, 1, 65535], dtype=np.uint16))
    var('ui', 'u4', ('x',), np.array([0, 1, 4294967295], dtype=np.uint32))
    var('ul', 'u8', ('x',), np.array([0, 1, 18446744073709551615], dtype=np.uint64))
    var('l', 'i8', ('x',), np.array([-9223372036854775808, 0, 9223372036854775807], dtype=np.int64))
    d.createVariable('str', str, ('x',))
    g = d.createGroup('grp'); g.createDimension('y', 2)
    w = g.createVariable('w', 'f8', ('y',)); w[...] = [0.25, 0.5]
d.createVariable('sc', 'f4', ())
d.close()
)";

ConvertReport convert_python_file(const std::string& writer, const std::vector<std::string>& args,
                                  const fs::path& out) {
  const auto run = testing::run_python(writer, args);
  if (run.rc != 0) throw std::runtime_error(run.err);
  return convert_to_tet(args[0], out.string());
}

template <typename T>
std::vector<T> values_of(const tet::TetFile& file, const std::string& name) {
  const tet::Dataset* ds = file.find(name);
  if (ds == nullptr) throw std::runtime_error("missing " + name);
  if (ds->element_size() != sizeof(T)) throw std::runtime_error("element size of " + name);
  std::vector<T> v(ds->element_count);
  file.read_box(*ds, ds->full_box(), std::as_writable_bytes(std::span(v)));
  return v;
}

TEST(ConvertTypes, Hdf5WrittenByH5py) {
  if (!testing::have_python_numpy()) GTEST_SKIP();
  testing::TempDir tmp("interop-h5types");
  const auto report = convert_python_file(kWriteHdf5, {(tmp / "t.h5").string()}, tmp / "t.tet");
  std::vector<std::string> names;
  for (const auto& d : report.datasets) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a_first", "be_i32", "chunked_u16", "flags", "half", "i8", "packed",
                                             "packed64", "u32", "u64", "u8", "z/inner/v"}));
  const auto f = tet::TetFile::open((tmp / "t.tet").string());
  EXPECT_EQ(f.find("i8")->dtype, DType::I16);
  EXPECT_EQ(values_of<std::int16_t>(f, "i8"), (std::vector<std::int16_t>{-128, -1, 0, 1, 2, 127}));
  EXPECT_EQ(f.metadata_of("i8")->attrs.at("source_dtype"), "int8");
  EXPECT_EQ(f.find("u8")->dtype, DType::U8);
  EXPECT_EQ(values_of<std::uint8_t>(f, "u8"), (std::vector<std::uint8_t>{250, 251, 252, 253, 254, 255}));
  EXPECT_EQ(f.find("flags")->dtype, DType::U8);
  EXPECT_EQ(values_of<std::uint8_t>(f, "flags"), (std::vector<std::uint8_t>{1, 0, 1, 1}));
  EXPECT_EQ(f.find("half")->dtype, DType::F16);
  // numpy's float16 bit patterns of 0.5, -2, 65504, inf, 1e-7 (subnormal 0x0002).
  EXPECT_EQ(values_of<std::uint16_t>(f, "half"), (std::vector<std::uint16_t>{0x3800, 0xC000, 0x7BFF, 0x7C00, 0x0002}));
  EXPECT_EQ(values_of<std::uint32_t>(f, "u32"), (std::vector<std::uint32_t>{0, 4294967295u, 7}));
  EXPECT_EQ(values_of<std::uint64_t>(f, "u64"), (std::vector<std::uint64_t>{18446744073709551615ull, 1}));
  EXPECT_EQ(values_of<std::int32_t>(f, "be_i32"), (std::vector<std::int32_t>{1, -2, 300000}));
  EXPECT_EQ(f.find("chunked_u16")->chunk_shape, (std::vector<std::uint64_t>{3, 4}));
  std::vector<std::uint16_t> ramp(100);
  for (std::uint16_t i = 0; i < 100; ++i) ramp[i] = i;
  EXPECT_EQ(values_of<std::uint16_t>(f, "chunked_u16"), ramp);
  // CF-packed int16 with a float32 scale: f32 = stored × 0.5 + 10, the fill -32767 → NaN.
  EXPECT_EQ(f.find("packed")->dtype, DType::F32);
  const auto packed = values_of<float>(f, "packed");
  EXPECT_EQ(packed[0], 10.0f);
  EXPECT_EQ(packed[1], 60.0f);
  EXPECT_TRUE(std::isnan(packed[2]));
  EXPECT_EQ(packed[5], 510.0f);
  EXPECT_TRUE(std::isnan(packed[4]));
  // A double scale makes the dataset f64 (values computed in f64 as numpy does).
  EXPECT_EQ(f.find("packed64")->dtype, DType::F64);
  EXPECT_EQ(values_of<double>(f, "packed64"), (std::vector<double>{1 * 0.1, 2 * 0.1, 3 * 0.1}));
  EXPECT_EQ(f.metadata_of("z/inner/v")->attrs.at("flag"), "true");
  EXPECT_EQ(f.metadata_of("z/inner/v")->attrs.at("count"), "-3");
}

TEST(ConvertTypes, NetCdf4WrittenByNetCdf4Python) {
  if (!testing::have_python_numpy()) GTEST_SKIP();
  testing::TempDir tmp("interop-nctypes");
  const auto report = convert_python_file(kWriteNetCdf, {(tmp / "t.nc").string(), "NETCDF4"}, tmp / "t.tet");
  std::vector<std::string> names;
  for (const auto& d : report.datasets) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "f", "l", "packed", "s", "ub", "ui", "ul", "us", "grp/w"}));
  const auto f = tet::TetFile::open((tmp / "t.tet").string());
  EXPECT_EQ(values_of<std::int16_t>(f, "b"), (std::vector<std::int16_t>{-5, 0, 5}));
  EXPECT_EQ(f.metadata_of("b")->attrs.at("source_dtype"), "int8");
  EXPECT_EQ(values_of<std::uint8_t>(f, "ub"), (std::vector<std::uint8_t>{0, 128, 255}));
  EXPECT_EQ(values_of<std::uint16_t>(f, "us"), (std::vector<std::uint16_t>{0, 1, 65535}));
  EXPECT_EQ(values_of<std::uint32_t>(f, "ui"), (std::vector<std::uint32_t>{0, 1, 4294967295u}));
  EXPECT_EQ(values_of<std::uint64_t>(f, "ul"), (std::vector<std::uint64_t>{0, 1, 18446744073709551615ull}));
  EXPECT_EQ(values_of<std::int64_t>(f, "l"), (std::vector<std::int64_t>{INT64_MIN, 0, INT64_MAX}));
  EXPECT_EQ(values_of<float>(f, "f"), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.metadata_of("f")->dim_names, (std::vector<std::string>{"t", "x"}));
  EXPECT_EQ(f.metadata_of("f")->attrs.at("units"), "m");
  EXPECT_EQ(f.metadata_of("grp/w")->coords.at("w"), (std::vector<std::string>{"0.25", "0.5"}));
  // Integer storage with double scale/offset → f64; no _FillValue, so -1 decodes too.
  EXPECT_EQ(f.find("packed")->dtype, DType::F64);
  EXPECT_EQ(values_of<double>(f, "packed"), (std::vector<double>{3.5, 0.75, 6.0}));
}

TEST(ConvertTypes, NetCdf3Classic) {
  if (!testing::have_python_numpy()) GTEST_SKIP();
  testing::TempDir tmp("interop-nc3");
  // A NetCDF-3 file found by its `CDF\x01` signature (no extension).
  const auto run = testing::run_python(kWriteNetCdf, {(tmp / "classic").string(), "NETCDF3_CLASSIC"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(detect_convert_input((tmp / "classic").string()), InputFormat::NetCdf);
  const auto report = convert_to_tet((tmp / "classic").string(), (tmp / "c.tet").string());
  EXPECT_EQ(report.datasets.size(), 4u);
  const auto f = tet::TetFile::open((tmp / "c.tet").string());
  EXPECT_EQ(values_of<std::int16_t>(f, "s"), (std::vector<std::int16_t>{-300, 0, 300}));
  EXPECT_EQ(f.find("f")->shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(f.layout().footer->history.at(0).source, "nc");
}

// Zarr inputs through the zarr module: sharding with crc32c index, a missing chunk (reads as the
// fill value), int8 and bool; then a codec chain it refuses.
TEST(ConvertTypes, ZarrCodecChainsAndMissingChunks) {
  testing::TempDir tmp("interop-zarr");
  io::DirectoryStore store((tmp / "s.zarr").string());
  zarr::write_group(store, "", {});
  {
    zarr::ArrayMeta meta;
    meta.shape = {8};
    meta.data_type = zarr::DataType::fixed(DType::I8);
    meta.chunk_shape = {4};
    meta.fill_value = zarr::FillValue{{std::byte{0xF9}}};  // -7
    meta.codecs = {zarr::BytesCodec{}, {zarr::ZstdCodec{3, true}}};
    meta.sharding = zarr::ShardingSpec{{2}, {zarr::Endian::Little, true}, zarr::IndexLocation::End};
    zarr::ArrayWriter w(store, "grp/sharded", meta);
    w.write_metadata();
    const std::vector<std::int8_t> values = {-7, -7, 3, 4};  // the first inner chunk equals the fill: absent
    w.write_dense_object({0}, std::as_bytes(std::span(values)));
    // object 1 is never written: a missing shard
  }
  {
    zarr::ArrayMeta meta;
    meta.shape = {3};
    meta.data_type = zarr::DataType::fixed(DType::Bool);
    meta.chunk_shape = {2};
    meta.fill_value = zarr::zero_fill(meta.data_type);
    meta.codecs = {zarr::BytesCodec{}, {zarr::Crc32cCodec{}}};
    zarr::ArrayWriter w(store, "flags", meta);
    w.write_metadata();
    const std::vector<std::uint8_t> a = {1, 0}, b = {1, 0};
    w.write_dense_object({0}, std::as_bytes(std::span(a)));
    w.write_dense_object({1}, std::as_bytes(std::span(b)));
  }
  zarr::write_group(store, "grp", {});
  convert_to_tet((tmp / "s.zarr").string(), (tmp / "s.tet").string());
  const auto f = tet::TetFile::open((tmp / "s.tet").string());
  ASSERT_EQ(f.datasets().size(), 2u);
  EXPECT_EQ(f.datasets()[0].name, "flags");
  EXPECT_EQ(values_of<std::uint8_t>(f, "flags"), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(f.find("grp/sharded")->chunk_shape, (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(values_of<std::int16_t>(f, "grp/sharded"), (std::vector<std::int16_t>{-7, -7, 3, 4, -7, -7, -7, -7}));
  EXPECT_EQ(f.metadata_of("grp/sharded")->attrs.at("source_dtype"), "int8");

  // A gzip codec: the zarr module refuses it, naming the array and the codec.
  std::string meta = testing::read_file_text(tmp / "s.zarr/flags/zarr.json");
  const auto at = meta.find("\"crc32c\"");
  ASSERT_NE(at, std::string::npos);
  meta.replace(at, 8, "\"gzip\"");
  testing::write_file_text(tmp / "s.zarr/flags/zarr.json", meta);
  const auto run = testing::run_cli({"tet", "convert", (tmp / "s.zarr").string(), (tmp / "g.tet").string()});
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.err.find("array \"flags\""), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("gzip"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(tmp / "g.tet"));
}

TEST(ConvertTypes, NothingToImport) {
  if (!testing::have_python_numpy()) GTEST_SKIP();
  testing::TempDir tmp("interop-none");
  const auto run = testing::run_python("import sys, h5py\nwith h5py.File(sys.argv[1], 'w') as f: f['s'] = 1.0",
                                       {(tmp / "s.h5").string()});
  ASSERT_EQ(run.rc, 0) << run.err;
  const auto cli = testing::run_cli({"tet", "convert", (tmp / "s.h5").string(), (tmp / "s.tet").string()});
  EXPECT_EQ(cli.rc, 1);
  EXPECT_EQ(cli.err, "error: no supported numeric datasets found in " + (tmp / "s.h5").string() + "\n");
  EXPECT_FALSE(fs::exists(tmp / "s.tet"));
}

}  // namespace
}  // namespace tessera::interop
