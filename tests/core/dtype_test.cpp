// The dtype table: every name, NumPy descriptor and Zarr v3 name maps back to its dtype, and the
// descriptors agree with numpy's own idea of size, kind and name.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/dtype.hpp"

namespace {

using tessera::DType;
using tessera::DTypeKind;

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> kAll{DType::Bool, DType::U8,  DType::U16, DType::U32, DType::U64, DType::I8,
                                       DType::I16,  DType::I32, DType::I64, DType::F16, DType::F32, DType::F64};
  return kAll;
}

TEST(DType, TableIsIndexedByEnumAndNamesRoundTrip) {
  std::set<std::string_view> names, descrs, zarr_names;
  for (DType t : all_dtypes()) {
    const auto& info = tessera::dtype_info(t);
    EXPECT_EQ(info.dtype, t) << info.name;
    EXPECT_EQ(tessera::dtype_from_name(info.name), t) << info.name;
    EXPECT_EQ(tessera::dtype_from_numpy_descr(info.numpy_descr), t) << info.numpy_descr;
    EXPECT_EQ(tessera::dtype_from_zarr_name(info.zarr_name), t) << info.zarr_name;
    names.insert(info.name);
    descrs.insert(info.numpy_descr);
    zarr_names.insert(info.zarr_name);
  }
  // Distinct spellings, so no lookup can be ambiguous.
  EXPECT_EQ(names.size(), all_dtypes().size());
  EXPECT_EQ(descrs.size(), all_dtypes().size());
  EXPECT_EQ(zarr_names.size(), all_dtypes().size());
}

TEST(DType, ExpectedShortNames) {
  EXPECT_EQ(tessera::dtype_from_name("bool"), DType::Bool);
  EXPECT_EQ(tessera::dtype_from_name("f16"), DType::F16);
  EXPECT_EQ(tessera::dtype_from_name("i64"), DType::I64);
  EXPECT_EQ(tessera::dtype_from_zarr_name("float32"), DType::F32);
  EXPECT_EQ(tessera::dtype_from_numpy_descr("|u1"), DType::U8);
}

TEST(DType, UnknownSpellingsAreRejected) {
  for (const char* bad : {"", "f8", "float", "F32", "u128", "<f4", "float32 "})
    EXPECT_FALSE(tessera::dtype_from_name(bad).has_value()) << bad;
  // Big-endian, byte-order-less and non-numeric descriptors are not element types tessera reads.
  for (const char* bad : {"", ">f4", ">i8", "f4", "|f4", "<c8", "<U4"})
    EXPECT_FALSE(tessera::dtype_from_numpy_descr(bad).has_value()) << bad;
  for (const char* bad : {"", "f32", "Float32", "complex64", "bfloat16", "int"})
    EXPECT_FALSE(tessera::dtype_from_zarr_name(bad).has_value()) << bad;
}

TEST(DType, VisitDtypeUsesAnElementTypeOfTheRightSize) {
  for (DType t : all_dtypes()) {
    const std::size_t visited = tessera::visit_dtype(t, [](auto v) { return sizeof(v); });
    EXPECT_EQ(visited, tessera::dtype_size(t)) << tessera::dtype_info(t).name;
    const bool visited_float = tessera::visit_dtype(t, [](auto v) { return std::is_floating_point_v<decltype(v)>; });
    // f16 is carried as its uint16_t bit pattern; f32/f64 as native floats.
    EXPECT_EQ(visited_float, tessera::is_float(t) && t != DType::F16) << tessera::dtype_info(t).name;
  }
}

// numpy is the independent truth for descriptors: np.dtype(descr) must report the same size,
// kind, canonical descriptor string and name (numpy's names are the Zarr v3 names).
TEST(DType, DescriptorsAgreeWithNumpy) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  std::vector<std::string> args;
  for (DType t : all_dtypes()) args.emplace_back(tessera::dtype_info(t).numpy_descr);
  const auto r = tessera::testing::run_python(
      "import sys, numpy as np\n"
      "for d in sys.argv[1:]:\n"
      "    t = np.dtype(d)\n"
      "    print(d, t.itemsize, t.kind, t.str, t.name)\n",
      args);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  for (DType t : all_dtypes()) {
    const auto& info = tessera::dtype_info(t);
    std::string descr, kind, str, name;
    std::size_t itemsize = 0;
    ASSERT_TRUE(lines >> descr >> itemsize >> kind >> str >> name) << r.out;
    EXPECT_EQ(descr, info.numpy_descr);
    EXPECT_EQ(itemsize, info.size) << descr;
    EXPECT_EQ(str, info.numpy_descr) << "numpy canonicalises " << descr << " differently";
    EXPECT_EQ(name, info.zarr_name) << descr;
    const char expected_kind = info.kind == DTypeKind::Bool       ? 'b'
                               : info.kind == DTypeKind::Unsigned ? 'u'
                               : info.kind == DTypeKind::Signed   ? 'i'
                                                                  : 'f';
    EXPECT_EQ(kind, std::string(1, expected_kind)) << descr;
  }
}

}  // namespace
