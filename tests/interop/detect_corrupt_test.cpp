// Input detection (spec tet.md §6.6) and damaged inputs: truncated or corrupted HDF5, NetCDF and
// Zarr sources end in a clean error naming the file (and the variable when one is being read),
// and never leave a `.tet` — nor a temporary file — at the output, nor touch an existing one.
#include <gtest/gtest.h>

#include "interop_support.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/detect.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;
using test::sources_dir;

const std::string kSupported =
    "(supported extensions: .h5, .hdf5, .hdf, .he2, .he5; .nc, .netcdf, .nc4, .nc3, .cdf, .ncdf; .zarr directory "
    "store (v3 zarr.json at root); or recognizable HDF5 / NetCDF-3 file signature / Zarr v3 directory store)";

TEST(Detect, ExtensionsSignaturesAndDirectories) {
  testing::TempDir tmp("interop-detect");
  const auto h5 = testing::read_file_bytes(sources_dir() / "h5/tensor_3d.h5");
  for (const char* name : {"a.h5", "a.HDF5", "a.hdf", "a.he2", "a.He5"}) {
    testing::write_file_bytes(tmp / name, h5);
    EXPECT_EQ(detect_convert_input((tmp / name).string()), InputFormat::Hdf5) << name;
  }
  // NetCDF-4 files are HDF5 containers: the extension decides.
  for (const char* name : {"b.nc", "b.NetCDF", "b.nc4", "b.nc3", "b.cdf", "b.ncdf"}) {
    testing::write_file_bytes(tmp / name, h5);
    EXPECT_EQ(detect_convert_input((tmp / name).string()), InputFormat::NetCdf) << name;
  }
  // Signatures when the extension says nothing.
  testing::write_file_bytes(tmp / "noext", h5);
  EXPECT_EQ(detect_convert_input((tmp / "noext").string()), InputFormat::Hdf5);
  testing::write_file_text(tmp / "x.dat", std::string("CDF\x02rest", 8));
  EXPECT_EQ(detect_convert_input((tmp / "x.dat").string()), InputFormat::NetCdf);
  // A compression suffix is peeled, but a compressed file is refused with a clear message; a
  // plain file that merely carries the suffix is read.
  testing::write_file_text(tmp / "c.h5.gz", std::string("\x1f\x8b\x08\x00junk", 8));
  try {
    detect_convert_input((tmp / "c.h5.gz").string());
    ADD_FAILURE() << "compressed input accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()), "convert input `" + (tmp / "c.h5.gz").string() +
                                         "` is compressed (.gz); decompress it first (HDF5 and NetCDF inputs are "
                                         "read uncompressed)");
  }
  testing::write_file_bytes(tmp / "plain.nc.zst", h5);
  EXPECT_EQ(detect_convert_input((tmp / "plain.nc.zst").string()), InputFormat::NetCdf);
  // Zarr: a directory with a v3 zarr.json whatever its name; `.zarr` by extension.
  EXPECT_EQ(detect_convert_input((sources_dir() / "zarr/tensor_3d").string()), InputFormat::Zarr);
  fs::create_directories(tmp / "v2.zarr");
  EXPECT_EQ(detect_convert_input((tmp / "v2.zarr").string()), InputFormat::Zarr);
  // Nothing matches: the spec's text, with the extension after peeling.
  testing::write_file_text(tmp / "junk.txt.bz2", "hello world");
  try {
    detect_convert_input((tmp / "junk.txt.bz2").string());
    ADD_FAILURE() << "junk accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unsupported convert input `" + (tmp / "junk.txt.bz2").string() + "`: extension `txt` " + kSupported);
  }
  fs::create_directories(tmp / "plain_dir");
  EXPECT_THROW(detect_convert_input((tmp / "plain_dir").string()), UnsupportedError);
  EXPECT_THROW(detect_convert_input((tmp / "missing.bin").string()), IoError);
  EXPECT_EQ(history_source(InputFormat::NetCdf), "nc");
}

// Runs the CLI on a damaged input and checks the error and that the output was not touched.
void expect_clean_failure(const fs::path& input, const fs::path& dir, const std::string& must_name) {
  SCOPED_TRACE(input.string());
  const fs::path out = dir / "out.tet";
  testing::write_file_text(out, "previous contents");
  const auto run = testing::run_cli({"tet", "convert", input.string(), out.string()});
  EXPECT_EQ(run.rc, 1) << run.out;
  EXPECT_TRUE(run.err.starts_with("error: ")) << run.err;
  EXPECT_NE(run.err.find(input.string()), std::string::npos) << run.err;
  if (!must_name.empty()) {
    EXPECT_NE(run.err.find(must_name), std::string::npos) << run.err;
  }
  EXPECT_EQ(testing::read_file_text(out), "previous contents");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
}

fs::path copy_truncated(const fs::path& from, const fs::path& to, std::size_t length) {
  auto bytes = testing::read_file_bytes(from);
  bytes.resize(std::min(bytes.size(), length));
  testing::write_file_bytes(to, bytes);
  return to;
}

TEST(CorruptInput, TruncatedHdf5AndNetCdf) {
  testing::TempDir tmp("interop-truncated");
  for (const char* name : {"h5/tensor_3d.h5", "netcdf/groups_3d.nc"}) {
    const fs::path src = sources_dir() / name;
    const std::size_t size = fs::file_size(src);
    for (std::size_t k = 0; k < 8; ++k) {
      const fs::path dir = tmp / (std::to_string(k) + fs::path(name).stem().string());
      fs::create_directories(dir);
      const fs::path input =
          copy_truncated(src, tmp / (std::to_string(k) + fs::path(name).filename().string()), size * k / 8);
      expect_clean_failure(input, dir, "");
    }
  }
}

// Overwrites the first chunk of dataset `name` with garbage (its offset located by h5py), so the
// file opens but the read fails inside the deflate filter.
void corrupt_first_chunk(const fs::path& file, const std::string& name) {
  const auto run = testing::run_python(R"(
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    info = f[sys.argv[2]].id.get_chunk_info(0)
with open(sys.argv[1], 'r+b') as out:
    out.seek(info.byte_offset + 2)
    out.write(b'\xff' * min(64, info.size - 2))
)",
                                       {file.string(), name});
  ASSERT_EQ(run.rc, 0) << run.err;
}

TEST(CorruptInput, CorruptedChunksNameTheVariable) {
  if (!testing::have_python_numpy()) GTEST_SKIP();
  testing::TempDir tmp("interop-corrupt");
  const fs::path h5 = tmp / "bad.h5";
  fs::copy_file(sources_dir() / "h5/tensor_3d.h5", h5);
  fs::permissions(h5, fs::perms::owner_write, fs::perm_options::add);
  corrupt_first_chunk(h5, "i32");
  fs::create_directories(tmp / "o1");
  expect_clean_failure(h5, tmp / "o1", "dataset \"i32\"");

  const fs::path nc = tmp / "bad.nc";
  fs::copy_file(sources_dir() / "netcdf/tensor_3d.nc", nc);
  fs::permissions(nc, fs::perms::owner_write, fs::perm_options::add);
  corrupt_first_chunk(nc, "f64");
  fs::create_directories(tmp / "o2");
  expect_clean_failure(nc, tmp / "o2", "variable \"f64\"");
}

TEST(CorruptInput, DamagedZarrStores) {
  testing::TempDir tmp("interop-zarr-bad");
  const fs::path store = tmp / "store";
  fs::copy(sources_dir() / "zarr/groups_3d", store, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(store))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  const fs::path chunk = store / "primary/i32/c/0/0/0";
  const auto original = testing::read_file_bytes(chunk);
  fs::create_directories(tmp / "out");
  // Truncated chunk files (a zstd frame cut short, or empty) at several lengths.
  for (const std::size_t length : {std::size_t{0}, std::size_t{5}, original.size() / 2, original.size() - 1}) {
    auto bytes = original;
    bytes.resize(length);
    testing::write_file_bytes(chunk, bytes);
    expect_clean_failure(store, tmp / "out", "array \"primary/i32\"");
  }
  testing::write_file_bytes(chunk, original);
  // A zarr.json cut in half.
  const std::string meta = testing::read_file_text(store / "primary/f64/zarr.json");
  testing::write_file_text(store / "primary/f64/zarr.json", meta.substr(0, meta.size() / 2));
  expect_clean_failure(store, tmp / "out", "primary/f64");
}

}  // namespace
}  // namespace tessera::interop
