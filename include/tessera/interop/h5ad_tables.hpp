// The obs and var dataframes of AnnData `.h5ad` files as converter inputs (spec deltacells.md
// §6.4, §7.5): obs becomes a cells::InputObsTable (plus the cell names) for the obs sidecar, var a
// cells::VarTable for `var.parquet`.
//
// A dataframe is a group with `encoding-type` `dataframe`, the attribute `_index` naming the
// index dataset (a dataset literally named `_index` means an unnamed index) and `column-order`
// listing the columns. Column encodings read:
//  - `categorical` (`codes`, `categories`, `ordered`): kind Category, Int32 codes (−1 missing),
//    each category as Python's str() writes it (integers in decimal, floats as repr, booleans
//    True/False); the AnnData 0.7 form (a codes dataset whose `categories` attribute references a
//    vocabulary dataset) too;
//  - `array` of integers or floats: Numeric in the dataset's type (int8 … uint64, float32,
//    float64; float16 is refused); of booleans (h5py's enum): Bool;
//  - `nullable-integer` / `nullable-boolean` (`values` + `mask`, mask true = missing): Numeric /
//    Bool with nulls;
//  - `string-array` (and, without an encoding-type, any 1-D string dataset): String;
//    `nullable-string-array` (`values` + `mask`): String with nulls.
// Anything else (nested dataframes, dicts, 2-D arrays, enums that are not booleans) is an
// UnsupportedError naming the column and suggesting `--obs-exclude` (obs) or `--no-var` (var).
//
// Every column must have one row per index entry. Errors name the file and the object
// (`a.h5ad: obs/donor/codes: 7 rows, but the index has 9`): FormatError for malformed structure,
// IoError when the file cannot be opened. These reads touch variable-length strings, so the
// converter calls them in its isolated scan process (apps/tessera/cells_convert_isolate.cpp).
#pragma once

#include <string>
#include <vector>

#include "tessera/cells/obs_table.hpp"
#include "tessera/cells/var_table.hpp"

namespace tessera::interop {

struct H5adTableOptions {
  bool use_raw = false;  // var: read raw/var instead of var
  // obs: columns not read at all (`--obs-exclude`); those the dataframe has are listed in the
  // table's `skipped`, so cells::infer_obs_schema can check that each excluded name exists.
  std::vector<std::string> exclude{};
};

struct H5adObs {
  cells::InputObsTable table;      // columns in `column-order`; `source` = path
  std::vector<std::string> names;  // the obs index: one cell name per row
};

// The `obs` dataframe. FormatError when the file has none.
H5adObs read_h5ad_obs(const std::string& path, const H5adTableOptions& options = {});

// The `var` (or `raw/var`) dataframe in source column order: categoricals as their strings
// (missing → null), the index as `index` with its name (empty when unnamed).
cells::VarTable read_h5ad_var(const std::string& path, const H5adTableOptions& options = {});

}  // namespace tessera::interop
