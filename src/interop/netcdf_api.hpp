// libnetcdf, reached through a table filled on first use (tessera/core/loaded_library.hpp says
// why). netcdf.cpp includes this header instead of netcdf.h and is written as ordinary NetCDF
// code: below, each function it uses is redefined as the matching member of the table. The build
// does not link libnetcdf, so a call to a function missing from the list fails to link: add it.
#pragma once

#include <netcdf.h>

// clang-format off
#define TESSERA_NETCDF_FUNCTIONS(X) X(nc_close) X(nc_free_string) X(nc_get_att_double) X(nc_get_att_float)    \
  X(nc_get_att_longlong) X(nc_get_att_string) X(nc_get_att_text) X(nc_get_att_ulonglong) X(nc_get_var)        \
  X(nc_get_vara) X(nc_inq_att) X(nc_inq_attname) X(nc_inq_dim) X(nc_inq_grpname) X(nc_inq_grps) X(nc_inq_var) \
  X(nc_inq_var_chunking) X(nc_inq_var_fill) X(nc_inq_vardimid) X(nc_inq_varids) X(nc_inq_varname)             \
  X(nc_inq_varnatts) X(nc_open) X(nc_strerror)
// clang-format on

namespace tessera::interop {

struct NetCdfApi {
#define TESSERA_NETCDF_FUNCTION(name) decltype(&::name) name;
  TESSERA_NETCDF_FUNCTIONS(TESSERA_NETCDF_FUNCTION)
#undef TESSERA_NETCDF_FUNCTION
};

// The table, loaded on the first call; UnsupportedError when libnetcdf cannot be loaded.
const NetCdfApi& netcdf();

}  // namespace tessera::interop

// netcdf_api.cpp fills the table and sees the library's own names.
#ifndef TESSERA_NETCDF_API_IMPLEMENTATION
#define nc_close ::tessera::interop::netcdf().nc_close
#define nc_free_string ::tessera::interop::netcdf().nc_free_string
#define nc_get_att_double ::tessera::interop::netcdf().nc_get_att_double
#define nc_get_att_float ::tessera::interop::netcdf().nc_get_att_float
#define nc_get_att_longlong ::tessera::interop::netcdf().nc_get_att_longlong
#define nc_get_att_string ::tessera::interop::netcdf().nc_get_att_string
#define nc_get_att_text ::tessera::interop::netcdf().nc_get_att_text
#define nc_get_att_ulonglong ::tessera::interop::netcdf().nc_get_att_ulonglong
#define nc_get_var ::tessera::interop::netcdf().nc_get_var
#define nc_get_vara ::tessera::interop::netcdf().nc_get_vara
#define nc_inq_att ::tessera::interop::netcdf().nc_inq_att
#define nc_inq_attname ::tessera::interop::netcdf().nc_inq_attname
#define nc_inq_dim ::tessera::interop::netcdf().nc_inq_dim
#define nc_inq_grpname ::tessera::interop::netcdf().nc_inq_grpname
#define nc_inq_grps ::tessera::interop::netcdf().nc_inq_grps
#define nc_inq_var ::tessera::interop::netcdf().nc_inq_var
#define nc_inq_var_chunking ::tessera::interop::netcdf().nc_inq_var_chunking
#define nc_inq_var_fill ::tessera::interop::netcdf().nc_inq_var_fill
#define nc_inq_vardimid ::tessera::interop::netcdf().nc_inq_vardimid
#define nc_inq_varids ::tessera::interop::netcdf().nc_inq_varids
#define nc_inq_varname ::tessera::interop::netcdf().nc_inq_varname
#define nc_inq_varnatts ::tessera::interop::netcdf().nc_inq_varnatts
#define nc_open ::tessera::interop::netcdf().nc_open
#define nc_strerror ::tessera::interop::netcdf().nc_strerror
#endif  // TESSERA_NETCDF_API_IMPLEMENTATION
