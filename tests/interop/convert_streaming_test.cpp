// Bounded-memory conversion: variables whose `.tet` dataset is one whole-array tile (HDF5 and
// NetCDF contiguous storage, CF-packed variables decoded to another element type) and source
// chunks larger than a unit stream through units far smaller than the tile, and still equal what
// h5py / netCDF4 read; the bytes written do not depend on the unit size or the number of jobs.
// The HDF5 direct chunk path (deflate, shuffle, edge chunks) and its fallbacks (fletcher32,
// big-endian storage, unallocated chunks) are checked the same way. A CLI run over a 160 MiB
// contiguous variable stays far below that in peak memory.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "interop_support.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSmallUnit = std::uint64_t{64} << 10;

constexpr const char* kWriteHdf5 = R"(
import sys, numpy as np, h5py
rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], 'w') as f:
    f['contig3d'] = rng.standard_normal((37, 61, 53)).astype('f4')          # 478 KB, contiguous
    f['contig1d'] = np.arange(70001, dtype='i8') * 3 - 5                    # 560 KB
    f['wide_rows'] = rng.standard_normal((3, 40000))                        # a row > one unit
    f['i8'] = rng.integers(-128, 128, (300, 700), dtype=np.int8)           # int8 → i16
    p = f.create_dataset('packed', data=rng.integers(-32767, 32767, (200, 300), dtype=np.int16))
    p[5, :] = -32767
    p.attrs['scale_factor'] = np.float32(0.5); p.attrs['add_offset'] = np.float32(10); p.attrs['_FillValue'] = np.int16(-32767)
    q = f.create_dataset('packed_chunked', data=rng.integers(-1000, 1000, (200, 300), dtype=np.int16), chunks=(64, 50))
    q.attrs['scale_factor'] = 0.01
    f.create_dataset('gz', data=rng.standard_normal((100, 77)).astype('f4'), chunks=(16, 10), compression='gzip',
                     shuffle=True)
    f.create_dataset('gz_only', data=np.arange(5000, dtype='u2').reshape(50, 100), chunks=(7, 33), compression='gzip',
                     compression_opts=1)
    f.create_dataset('shuffle_only', data=np.arange(999, dtype='i4'), chunks=(100,), shuffle=True)
    f.create_dataset('plain_chunks', data=rng.standard_normal((90, 45)), chunks=(20, 20))
    f.create_dataset('fletcher', data=np.arange(600, dtype='f4').reshape(20, 30), chunks=(8, 8), compression='gzip',
                     fletcher32=True)
    f.create_dataset('be_chunked', data=rng.standard_normal((40, 40)).astype('>f8'), chunks=(16, 16),
                     compression='gzip')
    s = f.create_dataset('sparse', shape=(64, 64), dtype='f4', chunks=(16, 16), fillvalue=-7.5, compression='gzip')
    s[16:32, 32:48] = 1.25
    f.create_dataset('big_chunk', data=np.arange(90000, dtype='u2').reshape(300, 300), chunks=(300, 200))
    f.create_dataset('bools', data=rng.integers(0, 2, (500, 300)).astype(bool))
)";

constexpr const char* kWriteNetCdf = R"(
import sys, numpy as np, netCDF4
rng = np.random.default_rng(3)
d = netCDF4.Dataset(sys.argv[1], 'w', format='NETCDF4')
d.createDimension('y', 300); d.createDimension('x', 500)
v = d.createVariable('contig', 'f8', ('y', 'x'), contiguous=True); v[...] = rng.standard_normal((300, 500))
p = d.createVariable('packed', 'i2', ('y', 'x'), contiguous=True); p.set_auto_maskandscale(False)
p[...] = rng.integers(-3000, 3000, (300, 500), dtype=np.int16)
p.scale_factor = np.float32(0.1); p.add_offset = np.float32(-2)
c = d.createVariable('chunked', 'i4', ('y', 'x'), chunksizes=(64, 128), zlib=True)
c[...] = rng.integers(-100000, 100000, (300, 500), dtype=np.int32)
d.close()
)";

void write_with_python(const std::string& script, const fs::path& file) {
  const auto run = testing::run_python(script, {file.string()});
  ASSERT_EQ(run.rc, 0) << run.err;
}

// Converts with small units and with the default, on 1 and 2 jobs: always the same bytes.
void expect_same_bytes_for_any_unit(const fs::path& input, const fs::path& dir) {
  convert_to_tet(input.string(), (dir / "default.tet").string(), {.jobs = 2, .at = "1"});
  const auto reference = testing::read_file_bytes(dir / "default.tet");
  for (const unsigned jobs : {1u, 2u}) {
    for (const std::uint64_t unit : {std::uint64_t{4096}, kSmallUnit, std::uint64_t{300000}}) {
      const fs::path out = dir / ("u" + std::to_string(unit) + "j" + std::to_string(jobs) + ".tet");
      convert_to_tet(input.string(), out.string(), {.jobs = jobs, .at = "1", .unit_bytes = unit});
      EXPECT_EQ(testing::read_file_bytes(out), reference) << "unit " << unit << ", jobs " << jobs;
    }
  }
}

TEST(ConvertStreaming, Hdf5WholeArrayTilesLargerThanAUnit) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "python3 with numpy and h5py is required";
  testing::TempDir tmp("interop-stream-h5");
  const fs::path input = tmp / "s.h5";
  write_with_python(kWriteHdf5, input);
  const fs::path out = tmp / "s.tet";
  convert_to_tet(input.string(), out.string(), {.jobs = 2, .unit_bytes = kSmallUnit});
  const auto file = tet::TetFile::open(out.string());
  // One whole-array tile each, many times the unit.
  for (const char* name : {"contig3d", "contig1d", "wide_rows", "i8", "packed", "packed_chunked", "bools"}) {
    const tet::Dataset* ds = file.find(name);
    ASSERT_NE(ds, nullptr) << name;
    EXPECT_EQ(ds->chunk_shape, ds->shape) << name;
    EXPECT_GT(ds->logical_bytes, 2 * kSmallUnit) << name;
  }
  EXPECT_EQ(file.find("packed")->dtype, DType::F32);
  EXPECT_EQ(file.find("packed_chunked")->dtype, DType::F64);
  EXPECT_EQ(file.find("big_chunk")->chunk_shape, (std::vector<std::uint64_t>{300, 200}));
  test::dump_datasets(out, tmp / "npy");
  test::expect_python_ok(std::string(test::kPythonCommon) + test::kHdf5Check,
                         {input.string(), (tmp / "npy/manifest.json").string()});
  expect_same_bytes_for_any_unit(input, tmp.path());
}

TEST(ConvertStreaming, NetCdfContiguousAndPackedLargerThanAUnit) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "python3 with numpy and netCDF4 is required";
  testing::TempDir tmp("interop-stream-nc");
  const fs::path input = tmp / "s.nc";
  write_with_python(kWriteNetCdf, input);
  const fs::path out = tmp / "s.tet";
  convert_to_tet(input.string(), out.string(), {.jobs = 2, .unit_bytes = kSmallUnit});
  const auto file = tet::TetFile::open(out.string());
  EXPECT_EQ(file.find("contig")->chunk_shape, (std::vector<std::uint64_t>{300, 500}));
  EXPECT_EQ(file.find("packed")->dtype, DType::F32);
  test::dump_datasets(out, tmp / "npy");
  test::expect_python_ok(std::string(test::kPythonCommon) + test::kNetCdfCheck,
                         {input.string(), (tmp / "npy/manifest.json").string()});
  expect_same_bytes_for_any_unit(input, tmp.path());
}

// Runs the CLI with `env` added and returns its peak resident set in bytes (wait4's ru_maxrss),
// or -1 when it did not exit 0. The CLI is forked from a small python3 process, not from this
// one: Linux carries a process' high-water mark across execve, and a forked child starts with a
// copy of its parent's anonymous memory, so a child forked from the test binary (tens of MiB
// more under AddressSanitizer, or after earlier tests in the same process) would report the test
// process' size rather than the CLI's.
long long cli_peak_rss(const std::vector<std::string>& args,
                       const std::vector<std::pair<std::string, std::string>>& env = {}) {
  constexpr const char* kMeasure = R"(
import os, sys
pid = os.fork()
if pid == 0:
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1); os.dup2(null, 2)
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss * 1024 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else -1)
)";
  std::vector<std::string> argv = {tessera::testing::cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto run = testing::run_python(kMeasure, argv, {.env = env});
  if (run.rc != 0) return -1;
  return std::stoll(run.out);
}

// The CLI on a 160 MiB contiguous f32 variable, with the default unit on 2 jobs and with 4 MiB
// units set by TESSERA_TET_CONVERT_UNIT_BYTES: the converter's own memory, its peak resident set
// above what the same binary holds doing nothing, stays under 64 MiB (about 12 MiB in the Release
// build, whose idle CLI is 14 MiB; about 17 MiB under AddressSanitizer, whose idle CLI is 50-110
// MiB of runtime and shadow memory), and the single tile equals h5py's values.
TEST(ConvertStreaming, CliPeakMemoryStaysBelowTheTile) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "python3 with numpy and h5py is required";
  testing::TempDir tmp("interop-stream-rss");
  const fs::path input = tmp / "big.h5", out = tmp / "big.tet";
  constexpr const char* kGeometry = R"(
import sys, numpy as np, h5py
rows, cols = 5120, 8192
def block(r):
    return (np.arange(r * cols, (r + 512) * cols, dtype=np.int64) % 1000003).astype('f4').reshape(512, cols)
)";
  const auto write = testing::run_python(std::string(kGeometry) + R"(
with h5py.File(sys.argv[1], 'w') as f:
    d = f.create_dataset('v', shape=(rows, cols), dtype='f4')   # contiguous
    for r in range(0, rows, 512): d[r:r + 512] = block(r)
print('OK')
)",
                                         {input.string()});
  ASSERT_EQ(write.out, "OK\n") << write.err;

  // What the same binary holds doing nothing (its code, libraries, allocator; AddressSanitizer's
  // shadow memory in the sanitizer build), for the messages: the converter's share is the rest.
  const long long idle = cli_peak_rss({"--version"});
  // The default unit on 2 jobs (4 MiB) as well, so a larger default cannot slip in unnoticed.
  const long long by_default = cli_peak_rss({"tet", "convert", input.string(), out.string(), "--jobs", "2"});
  ASSERT_GT(by_default, 0) << "convert failed";
  ASSERT_GT(idle, 0) << "tessera --version failed";
  EXPECT_LT(by_default - idle, 64ll << 20)
      << "peak resident memory, default unit: " << by_default << " bytes, the CLI alone " << idle;
  const long long peak = cli_peak_rss({"tet", "convert", input.string(), out.string(), "--jobs", "2"},
                                      {{"TESSERA_TET_CONVERT_UNIT_BYTES", "4194304"}});
  ASSERT_GT(peak, 0) << "convert failed";
  EXPECT_LT(peak - idle, 64ll << 20) << "peak resident memory, 4 MiB units: " << peak << " bytes, the CLI alone "
                                     << idle;

  // The one entry is the whole 160 MiB tile; its payload equals what h5py reads.
  test::expect_python_ok(std::string(kGeometry) + R"(
import struct
src, out = sys.argv[1:3]
with open(out, 'rb') as t:
    index_offset = struct.unpack_from('<Q', t.read(32), 16)[0]
    t.seek(index_offset)
    count = struct.unpack_from('<Q', t.read(32), 8)[0]
    entry = t.read(104)
payload_offset, raw = struct.unpack_from('<QQ', entry, 72)
errors = []
if count != 1 or raw != rows * cols * 4: errors.append('entries %d, raw_byte_len %d' % (count, raw))
tile = np.memmap(out, dtype='<f4', mode='r', offset=payload_offset, shape=(rows, cols))
with h5py.File(src, 'r') as f:
    for r in range(0, rows, 512):
        if not (np.array_equal(tile[r:r + 512], f['v'][r:r + 512]) and np.array_equal(tile[r:r + 512], block(r))):
            errors.append('rows %d.. differ' % r); break
print('\n'.join(errors) if errors else 'OK')
)",
                         {input.string(), out.string()});
}

}  // namespace
}  // namespace tessera::interop
