// Building obs from input tables (spec deltacells.md §6.4): the converter reads each input file's
// obs dataframe into an InputObsTable; `infer_obs_schema` derives the global schema (column order,
// kinds, numpy-promoted numeric types, category vocabularies, `max_categories`) from all of them
// before anything is written, and `encode_obs_table` turns one table into columns of the stored
// types, ready to be sliced into tiles.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/obs_schema.hpp"
#include "tessera/columnar/column.hpp"

namespace tessera::cells {

// One column of an input table, as read from the source.
//  - Category: `values` is Int32 codes into `categories` (−1 = missing, no nulls); `categories`
//    holds each category converted to text as Python's str() would.
//  - Numeric: `values` in the source's integer or float type, nulls for missing (a float NaN is
//    also missing: encoding turns it into a null).
//  - Bool: `values` of type Bool, nulls for missing.
//  - String: `values` of type String, nulls for missing.
struct InputObsColumn {
  std::string name;
  ObsKind kind = ObsKind::String;
  columnar::Column values;
  std::vector<std::string> categories;
};

struct InputObsTable {
  std::string source;  // names the table in errors (the input file)
  std::uint64_t n_rows = 0;
  std::vector<InputObsColumn> columns;
  // Columns the source has but its reader left out on request (`--obs-exclude`), so that the
  // exclusion can be checked against real names without reading them.
  std::vector<std::string> skipped;
};

struct ObsBuildOptions {
  std::vector<std::string> exclude;      // columns left out (`--obs-exclude`)
  std::uint64_t max_categories = 20000;  // larger vocabularies become `string` columns
};

// §6.4. FormatError when tables disagree on the set of columns or on a column's kind (naming the
// table); UsageError for an excluded name that no table has (among its columns or `skipped`).
ObsSchema infer_obs_schema(std::span<const InputObsTable> tables, const ObsBuildOptions& options = {});

// numpy's type promotion of two numeric stored types (§6.4).
columnar::ColumnType promote_numeric(columnar::ColumnType a, columnar::ColumnType b);

// The table's rows as one Column per schema column, of the stored types (category: global codes,
// −1 missing; numeric: converted to the promoted type, NaN → null; a category column that became
// `string`: the category text, missing → null). FormatError for a value outside the vocabulary.
std::vector<columnar::Column> encode_obs_table(const InputObsTable& table, const ObsSchema& schema);

}  // namespace tessera::cells
