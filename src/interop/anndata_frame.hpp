// AnnData dataframe groups (obs, var, raw/var) as both h5ad readers see them: the scan
// (h5ad_source.cpp, the var and obs index) and the table readers (h5ad_tables.cpp).
#pragma once

#include <string>

#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop::detail {

// The index dataset of a dataframe group: the member its `_index` attribute names. FormatError
// when the group is missing or malformed; UnsupportedError for a compound dataset (AnnData < 0.7).
std::string dataframe_index(const Hdf5File& f, const std::string& group);

// The index dataset `object`, checked to be a 1-D list of strings (FormatError otherwise).
Hdf5Dataset string_index(const Hdf5File& f, const std::string& object);

}  // namespace tessera::interop::detail
