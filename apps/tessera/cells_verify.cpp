// `tessera cells verify PATH [--threads N]` (spec deltacells.md §9.3). Progress on stdout; a tile
// whose nonzero count differs from the manifest prints `tile <i>: nonzero count differs from the
// manifest` on stderr; warnings (unknown manifest keys, var names Python would split
// differently) go to stderr and do not fail. A single `.dct` tile is parsed with its CRC and
// decoded.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {
namespace {

struct VerifyArgs {
  std::string path;
  int threads = 1;
};

}  // namespace

void register_cells_verify(CLI::App& cells, int& rc) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* cmd = cells.add_subcommand("verify", "Check every tile of a deltacells dataset (or one .dct tile)");
  cmd->add_option("PATH", a->path, "dataset directory or .dct tile (local path, file://, http:// or https:// URI)")->required();
  cmd->add_option("--threads", a->threads, "decode threads per tile (0 counts as 1)")->check(integer_at_least(0));
  cmd->callback([a, &rc] {
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned threads = a->threads < 1 ? 1u : static_cast<unsigned>(a->threads);
    if (is_cells_tile_file(a->path)) {
      const cells::Tile t = cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_source(a->path)));
      t.check_decodes({.threads = threads});
      write_stream(stdout, "OK: tile of " + std::to_string(t.n_cells()) + " cells, " + std::to_string(t.nnz()) +
                               " nonzeros\n");
      rc = 0;
      return;
    }
    auto ds = cells::Dataset::open(a->path);
    cells::VerifyOptions o;
    o.threads = threads;
    o.progress = [](const std::string& line) { write_stream(stdout, line + "\n"); };
    o.warning = [](const std::string& line) { write_stream(stderr, "warning: " + line + "\n"); };
    cells::VerifyResult result;
    try {
      result = cells::verify_dataset(*ds, o);
    } catch (const cells::TileCountMismatch& e) {
      write_stream(stderr, "tile " + std::to_string(e.tile()) + ": nonzero count differs from the manifest\n");
      rc = 1;
      return;
    } catch (const cells::ObsVerifyError& e) {
      write_stream(stderr, std::string("obs: ") + e.what() + "\n");
      rc = 1;
      return;
    }
    if (result.obs_verified) write_stream(stdout, "verified obs (" + std::to_string(result.obs_shards) + " shard(s))\n");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_stream(stdout, "OK: " + std::to_string(result.tiles) + " tiles, " + std::to_string(result.cells) +
                             " cells in " + cells::format_fixed(secs, 1) + "s\n");
    rc = 0;
  });
}

}  // namespace tessera::cli
