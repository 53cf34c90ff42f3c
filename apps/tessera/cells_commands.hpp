// Shared pieces of the `tessera cells …` command group (spec deltacells.md §9): the
// subcommands' registration, one file each.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tessera/cells/obs_store.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cli {

void register_cells_info(CLI::App& cells, int& rc);
void register_cells_verify(CLI::App& cells, int& rc);
void register_cells_get(CLI::App& cells, int& rc);
void register_cells_convert(CLI::App& cells, int& rc);
void register_cells_obs(CLI::App& cells, int& rc);
void register_cells_epoch(CLI::App& cells, int& rc);

// One obs value of a `take` result as `cells get --obs` prints it (spec deltacells.md §9.5):
// categories and strings as text, booleans True/False, numbers in shortest round-trip form
// (integer columns as integers even when nulls made them float64), missing as empty text / null.
// `stored` is the column's stored type.
std::string obs_text_value(const cells::ObsTakeColumn& column, std::uint64_t row, columnar::ColumnType stored);
// `a,b,c` as names (empty items dropped).
std::vector<std::string> split_column_names(const std::string& text);
void obs_json_value(codec::json::JsonWriter& w, const cells::ObsTakeColumn& column, std::uint64_t row,
                    columnar::ColumnType stored);

// True when PATH (a local path or file:// URI) is a single tile object (starts with DELTACEL)
// rather than a dataset directory.
bool is_cells_tile_file(const std::string& path);

}  // namespace tessera::cli
