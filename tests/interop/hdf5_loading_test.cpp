// libhdf5 is loaded on first use (core/loaded_library.hpp), while a program using tessera may link
// libhdf5 itself. This test binary does: it writes a file with HDF5's C API, reading HDF5's
// predefined type ids the usual way, so the executable holds its own copies of those globals
// (copy relocations) and libhdf5 fills the copies, not its own. tessera's reader, loaded after,
// must find the same ids; reading its own never-filled globals failed every H5Dread with
// "unable to set up type info".
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "support/testing.hpp"
#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop {
namespace {

TEST(Hdf5Loading, AProgramThatLinksLibhdf5ItselfReadsThroughTessera) {
  testing::TempDir dir("tessera-hdf5-loading");
  const std::string path = (dir.path() / "two.h5").string();
  const std::vector<double> values{1.5, -2.25, 1e300, 0.0, 7.0, -0.5};
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hsize_t dims[2] = {2, 3};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t set = H5Dcreate2(file, "v", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    H5Dclose(set);
    H5Sclose(space);
    H5Fclose(file);
  }
  const Hdf5File file(path);
  const Hdf5Dataset v = file.dataset("v");
  EXPECT_EQ(v.shape(), (std::vector<std::uint64_t>{2, 3}));
  std::vector<double> got(6);
  const std::vector<std::uint64_t> origin{0, 0}, extent{2, 3};
  v.read(origin, extent, std::span<double>(got));
  EXPECT_EQ(got, values);
}

}  // namespace
}  // namespace tessera::interop
