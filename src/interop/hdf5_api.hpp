// libhdf5, reached through a table filled on first use (tessera/core/loaded_library.hpp says
// why). The HDF5 room (hdf5, hdf5_handle, hdf5_file, hdf5_chunk) includes this header instead of
// hdf5.h and is written as ordinary HDF5 code: below, each function and predefined-type global it
// uses is redefined as the matching member of the table, so `H5Fopen(...)` calls the loaded
// library's H5Fopen and `H5T_NATIVE_DOUBLE` reads its H5T_NATIVE_DOUBLE_g. The build does not
// link libhdf5, so a call to a function missing from these lists fails to link: add it to both.
#pragma once

#include <hdf5.h>

static_assert(H5_VERSION_GE(1, 10, 3) && !H5_VERSION_GE(1, 12, 0),
              "interop/hdf5 is written against the HDF5 1.10 API (1.10.3 or later)");

// The functions (by the numbered names the versioned API macros resolve to) …
// clang-format off
#define TESSERA_HDF5_FUNCTIONS(X) X(H5Aclose) X(H5Aexists) X(H5Aexists_by_name) X(H5Aget_space) X(H5Aget_type) \
  X(H5Aiterate2) X(H5Aopen) X(H5Aread) X(H5Dclose) X(H5Dget_chunk_storage_size) X(H5Dget_create_plist)         \
  X(H5Dget_space) X(H5Dget_type) X(H5Dopen2) X(H5Dread) X(H5Dread_chunk) X(H5Dvlen_reclaim) X(H5Eclear2)       \
  X(H5Eset_auto2) X(H5Ewalk2) X(H5Fclose) X(H5Fopen) X(H5Gclose) X(H5Gopen2) X(H5Lexists) X(H5Literate)        \
  X(H5Oclose) X(H5Oget_info_by_name2) X(H5Oopen) X(H5Pclose) X(H5Pcreate) X(H5Pget_chunk) X(H5Pget_filter2)    \
  X(H5Pget_layout) X(H5Pget_nfilters) X(H5Pset_type_conv_cb) X(H5Rget_name) X(H5Sclose) X(H5Screate_simple)    \
  X(H5Sget_simple_extent_dims) X(H5Sget_simple_extent_ndims) X(H5Sget_simple_extent_npoints)                   \
  X(H5Sget_simple_extent_type) X(H5Sselect_hyperslab) X(H5Tclose) X(H5Tcopy) X(H5Tequal) X(H5Tget_class)       \
  X(H5Tget_cset) X(H5Tget_fields) X(H5Tget_member_name) X(H5Tget_member_value) X(H5Tget_native_type)           \
  X(H5Tget_nmembers) X(H5Tget_sign) X(H5Tget_size) X(H5Tget_strpad) X(H5Tget_super) X(H5Tis_variable_str)      \
  X(H5Tset_cset) X(H5Tset_order) X(H5Tset_size) X(H5Zfilter_avail) X(H5free_memory) X(H5get_libversion)        \
  X(H5open)
// clang-format on
// … and the globals that the predefined-type and property-class macros read.
// clang-format off
#define TESSERA_HDF5_GLOBALS(X) X(H5P_CLS_DATASET_XFER_ID_g) X(H5T_C_S1_g) X(H5T_NATIVE_DOUBLE_g)              \
  X(H5T_NATIVE_FLOAT_g) X(H5T_NATIVE_INT8_g) X(H5T_NATIVE_INT16_g) X(H5T_NATIVE_INT32_g) X(H5T_NATIVE_INT64_g) \
  X(H5T_NATIVE_LLONG_g) X(H5T_NATIVE_UINT8_g) X(H5T_NATIVE_UINT16_g) X(H5T_NATIVE_UINT32_g)                    \
  X(H5T_NATIVE_UINT64_g) X(H5T_NATIVE_ULLONG_g) X(H5T_STD_REF_OBJ_g)
// clang-format on

namespace tessera::interop {

struct Hdf5Api {
#define TESSERA_HDF5_FUNCTION(name) decltype(&::name) name;
  TESSERA_HDF5_FUNCTIONS(TESSERA_HDF5_FUNCTION)
#undef TESSERA_HDF5_FUNCTION
#define TESSERA_HDF5_GLOBAL(name) hid_t name;
  TESSERA_HDF5_GLOBALS(TESSERA_HDF5_GLOBAL)
#undef TESSERA_HDF5_GLOBAL
};

// The table, loaded (and the library initialised with H5open) on the first call. Throws
// UnsupportedError when libhdf5 cannot be loaded or is not the 1.10 series this build was
// compiled against (where HDF5's own version check would abort the process).
const Hdf5Api& hdf5();

}  // namespace tessera::interop

// hdf5_api.cpp fills the table and sees the library's own names.
#ifndef TESSERA_HDF5_API_IMPLEMENTATION

// The version check is made once, by hdf5(), instead of in front of every use of a file-access
// flag; the library is opened by hdf5() before any global is read.
#undef H5CHECK
#define H5CHECK
#undef H5OPEN
#define H5OPEN

#define H5Aclose ::tessera::interop::hdf5().H5Aclose
#define H5Aexists ::tessera::interop::hdf5().H5Aexists
#define H5Aexists_by_name ::tessera::interop::hdf5().H5Aexists_by_name
#define H5Aget_space ::tessera::interop::hdf5().H5Aget_space
#define H5Aget_type ::tessera::interop::hdf5().H5Aget_type
#define H5Aiterate2 ::tessera::interop::hdf5().H5Aiterate2
#define H5Aopen ::tessera::interop::hdf5().H5Aopen
#define H5Aread ::tessera::interop::hdf5().H5Aread
#define H5Dclose ::tessera::interop::hdf5().H5Dclose
#define H5Dget_chunk_storage_size ::tessera::interop::hdf5().H5Dget_chunk_storage_size
#define H5Dget_create_plist ::tessera::interop::hdf5().H5Dget_create_plist
#define H5Dget_space ::tessera::interop::hdf5().H5Dget_space
#define H5Dget_type ::tessera::interop::hdf5().H5Dget_type
#define H5Dopen2 ::tessera::interop::hdf5().H5Dopen2
#define H5Dread ::tessera::interop::hdf5().H5Dread
#define H5Dread_chunk ::tessera::interop::hdf5().H5Dread_chunk
#define H5Dvlen_reclaim ::tessera::interop::hdf5().H5Dvlen_reclaim
#define H5Eclear2 ::tessera::interop::hdf5().H5Eclear2
#define H5Eset_auto2 ::tessera::interop::hdf5().H5Eset_auto2
#define H5Ewalk2 ::tessera::interop::hdf5().H5Ewalk2
#define H5Fclose ::tessera::interop::hdf5().H5Fclose
#define H5Fopen ::tessera::interop::hdf5().H5Fopen
#define H5Gclose ::tessera::interop::hdf5().H5Gclose
#define H5Gopen2 ::tessera::interop::hdf5().H5Gopen2
#define H5Lexists ::tessera::interop::hdf5().H5Lexists
#define H5Literate ::tessera::interop::hdf5().H5Literate
#define H5Oclose ::tessera::interop::hdf5().H5Oclose
#define H5Oget_info_by_name2 ::tessera::interop::hdf5().H5Oget_info_by_name2
#define H5Oopen ::tessera::interop::hdf5().H5Oopen
#define H5Pclose ::tessera::interop::hdf5().H5Pclose
#define H5Pcreate ::tessera::interop::hdf5().H5Pcreate
#define H5Pget_chunk ::tessera::interop::hdf5().H5Pget_chunk
#define H5Pget_filter2 ::tessera::interop::hdf5().H5Pget_filter2
#define H5Pget_layout ::tessera::interop::hdf5().H5Pget_layout
#define H5Pget_nfilters ::tessera::interop::hdf5().H5Pget_nfilters
#define H5Pset_type_conv_cb ::tessera::interop::hdf5().H5Pset_type_conv_cb
#define H5Rget_name ::tessera::interop::hdf5().H5Rget_name
#define H5Sclose ::tessera::interop::hdf5().H5Sclose
#define H5Screate_simple ::tessera::interop::hdf5().H5Screate_simple
#define H5Sget_simple_extent_dims ::tessera::interop::hdf5().H5Sget_simple_extent_dims
#define H5Sget_simple_extent_ndims ::tessera::interop::hdf5().H5Sget_simple_extent_ndims
#define H5Sget_simple_extent_npoints ::tessera::interop::hdf5().H5Sget_simple_extent_npoints
#define H5Sget_simple_extent_type ::tessera::interop::hdf5().H5Sget_simple_extent_type
#define H5Sselect_hyperslab ::tessera::interop::hdf5().H5Sselect_hyperslab
#define H5Tclose ::tessera::interop::hdf5().H5Tclose
#define H5Tcopy ::tessera::interop::hdf5().H5Tcopy
#define H5Tequal ::tessera::interop::hdf5().H5Tequal
#define H5Tget_class ::tessera::interop::hdf5().H5Tget_class
#define H5Tget_cset ::tessera::interop::hdf5().H5Tget_cset
#define H5Tget_fields ::tessera::interop::hdf5().H5Tget_fields
#define H5Tget_member_name ::tessera::interop::hdf5().H5Tget_member_name
#define H5Tget_member_value ::tessera::interop::hdf5().H5Tget_member_value
#define H5Tget_native_type ::tessera::interop::hdf5().H5Tget_native_type
#define H5Tget_nmembers ::tessera::interop::hdf5().H5Tget_nmembers
#define H5Tget_sign ::tessera::interop::hdf5().H5Tget_sign
#define H5Tget_size ::tessera::interop::hdf5().H5Tget_size
#define H5Tget_strpad ::tessera::interop::hdf5().H5Tget_strpad
#define H5Tget_super ::tessera::interop::hdf5().H5Tget_super
#define H5Tis_variable_str ::tessera::interop::hdf5().H5Tis_variable_str
#define H5Tset_cset ::tessera::interop::hdf5().H5Tset_cset
#define H5Tset_order ::tessera::interop::hdf5().H5Tset_order
#define H5Tset_size ::tessera::interop::hdf5().H5Tset_size
#define H5Zfilter_avail ::tessera::interop::hdf5().H5Zfilter_avail
#define H5free_memory ::tessera::interop::hdf5().H5free_memory
#define H5get_libversion ::tessera::interop::hdf5().H5get_libversion
#define H5open ::tessera::interop::hdf5().H5open
#define H5P_CLS_DATASET_XFER_ID_g ::tessera::interop::hdf5().H5P_CLS_DATASET_XFER_ID_g
#define H5T_C_S1_g ::tessera::interop::hdf5().H5T_C_S1_g
#define H5T_NATIVE_DOUBLE_g ::tessera::interop::hdf5().H5T_NATIVE_DOUBLE_g
#define H5T_NATIVE_FLOAT_g ::tessera::interop::hdf5().H5T_NATIVE_FLOAT_g
#define H5T_NATIVE_INT8_g ::tessera::interop::hdf5().H5T_NATIVE_INT8_g
#define H5T_NATIVE_INT16_g ::tessera::interop::hdf5().H5T_NATIVE_INT16_g
#define H5T_NATIVE_INT32_g ::tessera::interop::hdf5().H5T_NATIVE_INT32_g
#define H5T_NATIVE_INT64_g ::tessera::interop::hdf5().H5T_NATIVE_INT64_g
#define H5T_NATIVE_LLONG_g ::tessera::interop::hdf5().H5T_NATIVE_LLONG_g
#define H5T_NATIVE_UINT8_g ::tessera::interop::hdf5().H5T_NATIVE_UINT8_g
#define H5T_NATIVE_UINT16_g ::tessera::interop::hdf5().H5T_NATIVE_UINT16_g
#define H5T_NATIVE_UINT32_g ::tessera::interop::hdf5().H5T_NATIVE_UINT32_g
#define H5T_NATIVE_UINT64_g ::tessera::interop::hdf5().H5T_NATIVE_UINT64_g
#define H5T_NATIVE_ULLONG_g ::tessera::interop::hdf5().H5T_NATIVE_ULLONG_g
#define H5T_STD_REF_OBJ_g ::tessera::interop::hdf5().H5T_STD_REF_OBJ_g

#endif  // TESSERA_HDF5_API_IMPLEMENTATION
