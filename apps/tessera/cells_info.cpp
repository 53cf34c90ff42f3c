// `tessera cells info PATH [--cache-dir DIR]` (spec deltacells.md §9.2). A single `.dct` tile
// (what `tessera info X.dct` routes here) gets a summary of its header and chunk table.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/cells/summary_chart.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/image/png.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {
namespace {

struct InfoArgs {
  std::string path;
  std::string cache_dir;
  std::string png;
  bool json = false;
};

std::string display_path(const std::string& path) {
  if (io::is_remote_uri(path)) return io::display_url(path);
  std::string s = std::filesystem::absolute(cells::local_path_of(path)).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string tile_info_json(const cells::Tile& t, const std::string& path) {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::python_pretty());
  w.begin_object();
  w.key("path").value(display_path(path));
  w.key("format").value("deltacells-tile");
  w.key("version").value(t.version());
  w.key("n_cells").value(t.n_cells());
  w.key("n_genes").value(t.n_genes());
  w.key("nonzeros").value(t.nnz());
  w.key("bytes").value(t.size());
  w.key("chunks").begin_array();
  for (const auto& c : t.chunks()) {
    w.begin_object();
    w.key("cells").begin_array().value(c.cell_lo).value(c.cell_hi).end_array();
    w.key("nonzeros").begin_array().value(c.nnz_lo).value(c.nnz_hi).end_array();
    w.key("gaps_bytes").value(c.gaps.len);
    w.key("values_bytes").value(c.vals.len);
    w.key("value_exceptions_bytes").value(c.vexc.len);
    w.key("gap_exceptions_bytes").value(c.gexc.len);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out + "\n";
}

std::string tile_info(const cells::Tile& t, const std::string& path) {
  std::string s;
  s += "tile:           " + display_path(path) + "\n";
  s += "cells x genes:  " + std::to_string(t.n_cells()) + " x " + std::to_string(t.n_genes()) + "\n";
  s += "nonzeros:       " + std::to_string(t.nnz()) + "\n";
  s += "size:           " + std::to_string(t.size()) + " bytes\n";
  s += "chunks:         " + std::to_string(t.chunks().size()) + "\n";
  for (std::size_t k = 0; k < t.chunks().size(); ++k) {
    const auto& c = t.chunks()[k];
    s += "  chunk " + std::to_string(k) + ": cells " + std::to_string(c.cell_lo) + ".." + std::to_string(c.cell_hi) +
         ", nonzeros " + std::to_string(c.nnz_lo) + ".." + std::to_string(c.nnz_hi) + ", frames " +
         std::to_string(c.gaps.len) + " + " + std::to_string(c.vals.len) + " bytes" +
         (c.vexc.len ? ", vexc " + std::to_string(c.vexc.len) + " bytes" : std::string()) +
         (c.gexc.len ? ", gexc " + std::to_string(c.gexc.len) + " bytes" : std::string()) + "\n";
  }
  s += "format:         deltacells tile version " + std::to_string(t.version()) + "\n";
  return s;
}

}  // namespace

void register_cells_info(CLI::App& cells, int& rc) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = cells.add_subcommand("info", "Summary of a deltacells dataset (or one .dct tile)");
  cmd->add_option("PATH", a->path,
                  "dataset directory or .dct tile (local path, file://, http(s)://, s3:// or gs:// URI)")
      ->required();
  CLI::Option* cache = cmd->add_option("--cache-dir", a->cache_dir, "obs cache root");
  cmd->add_option("--png", a->png, "also draw cells, nonzeros per cell and bytes per nonzero, tile by tile, as a PNG");
  cmd->add_flag("--json", a->json, "the summary as one JSON object");
  cmd->callback([a, &rc, cache] {
    if (is_cells_tile_file(a->path)) {
      if (!a->png.empty()) throw UsageError("--png draws the tiles of a dataset; " + a->path + " is one tile");
      const cells::Tile t = cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_source(a->path)));
      write_stream(stdout, a->json ? tile_info_json(t, a->path) : tile_info(t, a->path));
      rc = 0;
      return;
    }
    auto ds = cells::Dataset::open(a->path);
    cells::InfoOptions o;
    o.display_path = display_path(a->path);
    if (cache->count() > 0) o.cache_dir = a->cache_dir;
    write_stream(stdout, a->json ? cells::render_info_json(*ds, o) : cells::render_info(*ds, o));
    if (!a->png.empty()) {
      const image::Raster chart =
          cells::render_summary_chart(ds->manifest(), std::filesystem::path(o.display_path).filename().string());
      io::write_file_atomic(a->png, image::encode_png_rgba(chart.width(), chart.height(), chart.pixels()));
      // With --json stdout holds the one JSON object; the picture line goes to stderr.
      write_stream(a->json ? stderr : stdout, "picture:        " + a->png + " (" + std::to_string(chart.width()) +
                                                  " x " + std::to_string(chart.height()) + " pixels)\n");
    }
    rc = 0;
  });
}

}  // namespace tessera::cli
