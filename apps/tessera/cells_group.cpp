// `tessera cells …`: the deltacells command group (spec deltacells.md §9). Each subcommand lives
// in its own file; this one creates the group.
#include <filesystem>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/tile_header.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {

bool is_cells_tile_file(const std::string& path) {
  // Over HTTP a dataset is a prefix, not an object: a tile is named by its extension.
  if (io::is_remote_uri(path)) return io::display_url(path).ends_with(".dct");
  std::error_code ec;
  const std::string local = cells::local_path_of(path);
  if (!std::filesystem::is_regular_file(local, ec)) return false;
  const auto src = io::open_file(local, io::OpenMode::Pread);
  if (src->size() < cells::kTileMagic.size()) return false;
  std::string head(cells::kTileMagic.size(), '\0');
  src->read_at(0, std::as_writable_bytes(std::span(head)));
  return head == cells::kTileMagic;
}

void register_cells(CLI::App& app, int& rc) {
  CLI::App* cells = app.add_subcommand("cells", "deltacells datasets: info, verify, get, convert, obs, epoch");
  cells->require_subcommand(1);
  register_cells_info(*cells, rc);
  register_cells_verify(*cells, rc);
  register_cells_get(*cells, rc);
  register_cells_convert(*cells, rc);
  register_cells_obs(*cells, rc);
  register_cells_epoch(*cells, rc);
}

}  // namespace tessera::cli
