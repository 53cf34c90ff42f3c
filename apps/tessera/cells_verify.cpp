// `tessera cells verify PATH [--threads N] [--json]` (spec deltacells.md §9.3). Progress on stdout;
// a tile whose nonzero count differs from the manifest prints `tile <i>: nonzero count differs
// from the manifest` on stderr; warnings (unknown manifest keys, var names Python would split
// differently) go to stderr and do not fail. A single `.dct` tile is parsed with its CRC and
// decoded. With --json, one object on stdout instead, also when verification fails (exit 1).
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/io/publish.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {
namespace {

struct VerifyArgs {
  std::string path;
  int threads = 1;
  bool json = false;
};

// What one verification found, printed as text or as JSON.
struct Outcome {
  std::string kind = "dataset";  // or "tile"
  std::optional<cells::VerifyResult> result;
  std::uint64_t tile_nnz = 0;  // a single tile's nonzeros
  std::vector<std::string> warnings;
  std::string failure;  // "" when ok: "tile_nnz", "obs" or "format"
  std::string message;
  std::optional<std::uint64_t> failed_tile;
  double seconds = 0;
};

void print_json(const std::string& path, const Outcome& o) {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::python_pretty());
  w.begin_object();
  w.key("path").value(path);
  w.key("kind").value(o.kind);
  w.key("ok").value(o.failure.empty());
  // Counts of what was verified: null when verification stopped at a failure.
  w.key("tiles");
  o.result ? w.value(o.result->tiles) : w.value(nullptr);
  w.key("cells");
  o.result ? w.value(o.result->cells) : w.value(nullptr);
  if (o.kind == "tile") w.key("nonzeros").value(o.tile_nnz);
  w.key("obs_verified").value(o.result && o.result->obs_verified);
  w.key("obs_shards").value(o.result ? o.result->obs_shards : std::uint64_t{0});
  w.key("warnings").begin_array();
  for (const auto& line : o.warnings) w.value(line);
  w.end_array();
  w.key("failure");
  if (o.failure.empty()) {
    w.value(nullptr);
  } else {
    w.begin_object().key("kind").value(o.failure).key("message").value(o.message).key("tile");
    o.failed_tile ? w.value(*o.failed_tile) : w.value(nullptr);
    w.end_object();
  }
  w.key("seconds").value(o.seconds);
  w.end_object();
  write_stream(stdout, out + "\n");
}

}  // namespace

void register_cells_verify(CLI::App& cells, int& rc) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* cmd = cells.add_subcommand("verify", "Check every tile of a deltacells dataset (or one .dct tile)");
  cmd->add_option("PATH", a->path,
                  "dataset directory or .dct tile (local path, file://, http(s)://, s3:// or gs:// URI)")
      ->required();
  cmd->add_option("--threads", a->threads, "decode threads per tile (0 counts as 1)")->check(integer_at_least(0));
  cmd->add_flag("--json", a->json, "one JSON object on stdout (also on failure) instead of progress lines");
  cmd->callback([a, &rc] {
    const auto t0 = std::chrono::steady_clock::now();
    const unsigned threads = a->threads < 1 ? 1u : static_cast<unsigned>(a->threads);
    Outcome o;
    const auto fail = [&](std::string kind, std::string message, std::optional<std::uint64_t> tile, std::string text) {
      o.failure = std::move(kind);
      o.message = std::move(message);
      o.failed_tile = tile;
      if (!a->json) write_stream(stderr, text + "\n");
      rc = 1;
    };
    if (const auto note = io::interrupted_write_note(a->path)) {
      o.warnings.push_back(*note);
      if (!a->json) write_stream(stderr, "warning: " + *note + "\n");
    }
    try {
      if (is_cells_tile_file(a->path)) {
        o.kind = "tile";
        const cells::Tile t = cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_source(a->path)));
        t.check_decodes({.threads = threads});
        o.tile_nnz = t.nnz();
        o.result = cells::VerifyResult{1, t.n_cells(), false, 0};
        if (!a->json)
          write_stream(stdout, "OK: tile of " + std::to_string(t.n_cells()) + " cells, " + std::to_string(t.nnz()) +
                                   " nonzeros\n");
        rc = 0;
      } else {
        auto ds = cells::Dataset::open(a->path);
        cells::VerifyOptions options;
        options.threads = threads;
        if (!a->json) options.progress = [](const std::string& line) { write_stream(stdout, line + "\n"); };
        options.warning = [&](const std::string& line) {
          o.warnings.push_back(line);
          if (!a->json) write_stream(stderr, "warning: " + line + "\n");
        };
        o.result = cells::verify_dataset(*ds, options);
        rc = 0;
      }
    } catch (const cells::TileCountMismatch& e) {
      fail("tile_nnz", "nonzero count differs from the manifest", e.tile(),
           "tile " + std::to_string(e.tile()) + ": nonzero count differs from the manifest");
    } catch (const cells::ObsVerifyError& e) {
      fail("obs", e.what(), std::nullopt, std::string("obs: ") + e.what());
    } catch (const FormatError& e) {
      if (!a->json) throw;  // printed by main as `error: …`, as before
      fail("format", e.describe(), std::nullopt, "");
    }
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a->json) {
      print_json(a->path, o);
    } else if (rc == 0 && o.kind == "dataset") {
      if (o.result->obs_verified)
        write_stream(stdout, "verified obs (" + std::to_string(o.result->obs_shards) + " shard(s))\n");
      write_stream(stdout, "OK: " + std::to_string(o.result->tiles) + " tiles, " + std::to_string(o.result->cells) +
                               " cells in " + cells::format_fixed(o.seconds, 1) + "s\n");
    }
  });
}

}  // namespace tessera::cli
