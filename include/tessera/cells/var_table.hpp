// `var.parquet`, the gene table (spec deltacells.md §6.7): written with the pandas metadata that
// lets pandas.read_parquet restore the index, read back from any flat Parquet file in the §6.8
// subset with the index column identified from that metadata, and checked under P8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/columnar/column.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::cells {

// One row per stored gene, in stored order.
struct VarTable {
  std::vector<std::string> column_names;
  std::vector<columnar::Column> columns;  // numeric, bool or string (categoricals as their strings)
  std::string index_name;                 // empty: an unnamed index (`__index_level_0__`)
  columnar::Column index{columnar::ColumnType::String};
};

// Writes the table (columns, then the index last as `__index_level_0__` or its name), one row
// group, zstd, string columns dictionary-encoded, and the `pandas` key-value metadata in pyarrow's
// layout (pandas_type from the stored type; numpy_type the pandas dtype: `object` for strings,
// the nullable `Int8` … `UInt64` / `boolean` for integer and bool columns with nulls; creator
// tessera; pandas_version 1.5.3). A float NaN is stored as a null, as pyarrow stores it.
// UsageError for columns of different lengths or two columns with one name.
void write_var_parquet(io::ByteSink& sink, const VarTable& table, int zstd_level = 3);

// Reads a var table from any flat Parquet file of the §6.8 subset (row groups concatenated).
// The index is the first level of the `pandas` metadata's `index_columns` when it is a column
// name (its pandas name from the `columns` entry; null = unnamed); other levels stay ordinary
// columns. Without `pandas` metadata, or with a RangeIndex descriptor, there is no index column
// and `index` is left empty. P8: FormatError naming the source unless it has `n_genes` rows.
VarTable read_var_parquet(const io::ByteSource& source, std::uint64_t n_genes);

}  // namespace tessera::cells
