// Shared pieces of the `tessera cells …` command group (spec deltacells.md §9): the
// subcommands' registration, one file each.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tessera::cli {

void register_cells_info(CLI::App& cells, int& rc);
void register_cells_verify(CLI::App& cells, int& rc);
void register_cells_get(CLI::App& cells, int& rc);
void register_cells_convert(CLI::App& cells, int& rc);

// True when PATH (a local path or file:// URI) is a single tile object (starts with DELTACEL)
// rather than a dataset directory.
bool is_cells_tile_file(const std::string& path);

}  // namespace tessera::cli
