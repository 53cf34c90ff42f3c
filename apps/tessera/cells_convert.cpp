// `tessera cells convert (--h5ad-glob | --10x-h5 | --10x-mtx) PATTERN… --output DIR [flags]`
// (spec deltacells.md §7, §9.4). The flags are those of §7.9. 10x MatrixMarket directories are
// converted (cells::MtxCsrSource); the h5ad and 10x HDF5 readers are not built yet, and obs/var
// sidecars are not written, so those cases fail with an UnsupportedError after the command line
// is checked (usage errors exit 2).
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/mtx_source.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

struct ConvertArgs {
  std::vector<std::string> h5ad, tenx_h5, tenx_mtx;
  std::string output;
  int format_version = 2;
  std::uint64_t tile_size = 10000;
  std::uint32_t chunks = 8;
  int level = 19;
  bool no_sort_genes = false;
  std::uint64_t sort_genes_max_files = 10;
  bool no_sort_files = false;
  unsigned workers = 0, threads = 0;
  bool no_obs = false, no_obs_names = false, no_var = false;
  std::string obs_exclude;
  std::uint64_t max_categories = 20000, obs_tiles_per_file = 1000;
  int obs_level = 9;
  bool overwrite = false, quiet = false, use_raw = false;
  std::string layer, tenx_var_names = "gene_ids", tenx_genome;
};

// Natural order (§7.1): runs of ASCII digits compare as integers, other runs as text.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    const bool da = digit(a[i]), db = digit(b[j]);
    std::size_t ie = i, je = j;
    while (ie < a.size() && digit(a[ie]) == da) ++ie;
    while (je < b.size() && digit(b[je]) == db) ++je;
    if (da != db) return da;
    std::string_view ra(a.data() + i, ie - i), rb(b.data() + j, je - j);
    if (da) {
      while (ra.size() > 1 && ra.front() == '0') ra.remove_prefix(1);
      while (rb.size() > 1 && rb.front() == '0') rb.remove_prefix(1);
      if (ra.size() != rb.size()) return ra.size() < rb.size();
    }
    if (ra != rb) return ra < rb;
    i = ie;
    j = je;
  }
  return a.size() - i < b.size() - j;
}

std::string join_path(const std::string& acc, const std::string& name) {
  if (acc.empty()) return name;
  return acc.back() == '/' ? acc + name : acc + "/" + name;
}

// Python's glob.glob(pattern, recursive=True) from component `i` on: `*`, `?` and `[…]` never
// match a leading '.', and a `**` component matches zero or more directories (and, last, files).
void glob_from(const std::string& acc, const std::vector<std::string>& parts, std::size_t i, std::vector<std::string>& out) {
  namespace fs = std::filesystem;
  if (i == parts.size()) {
    out.push_back(acc);
    return;
  }
  const std::string& part = parts[i];
  const bool last = i + 1 == parts.size();
  const fs::path dir = acc.empty() ? fs::path(".") : fs::path(acc);
  std::error_code ec;
  if (part == "**") {
    if (!last || !acc.empty()) glob_from(acc, parts, i + 1, out);
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with('.')) {
        it.disable_recursion_pending();
        continue;
      }
      const std::string rel = fs::relative(it->path(), dir, ec).string();
      if (last || it->is_directory(ec)) glob_from(join_path(acc, rel), parts, i + 1, out);
    }
  } else if (part.find_first_of("*?[") == std::string::npos) {
    const std::string path = join_path(acc, part);
    if (last ? fs::exists(path, ec) : fs::is_directory(path, ec)) glob_from(path, parts, i + 1, out);
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (::fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
      if (last || it->is_directory(ec)) glob_from(join_path(acc, name), parts, i + 1, out);
    }
  }
}

// Each pattern expanded, its matches naturally sorted, duplicates dropped keeping the first,
// then the whole list naturally sorted unless `keep_order` (§7.1).
std::vector<std::string> resolve_patterns(const std::vector<std::string>& patterns, bool keep_order) {
  std::vector<std::string> files;
  for (const auto& pattern : patterns) {
    std::vector<std::string> parts;
    for (std::size_t start = 0; start <= pattern.size();) {
      const std::size_t slash = std::min(pattern.find('/', start), pattern.size());
      if (slash > start) parts.push_back(pattern.substr(start, slash - start));
      start = slash + 1;
    }
    std::vector<std::string> matches;
    glob_from(pattern.starts_with('/') ? "/" : "", parts, 0, matches);
    if (matches.empty()) throw UsageError("no input matches " + pattern);
    std::stable_sort(matches.begin(), matches.end(), natural_less);
    for (auto& m : matches)
      if (std::find(files.begin(), files.end(), m) == files.end()) files.push_back(std::move(m));
  }
  if (!keep_order) std::stable_sort(files.begin(), files.end(), natural_less);
  return files;
}

// §7.3: the files summed for the gene order (numpy's linspace(0, n - 1, k).round()).
std::vector<std::size_t> gene_order_files(std::size_t n, std::uint64_t k) {
  std::vector<std::size_t> out;
  if (k == 0 || k >= n) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (k == 1) return {0};
  const double step = static_cast<double>(n - 1) / static_cast<double>(k - 1);
  for (std::uint64_t i = 0; i < k; ++i) {
    const auto f = i + 1 == k ? n - 1 : static_cast<std::size_t>(std::nearbyint(static_cast<double>(i) * step));
    if (out.empty() || out.back() != f) out.push_back(f);
  }
  return out;
}

std::string mb(std::uint64_t bytes) { return cells::format_fixed(static_cast<double>(bytes) / 1e6, 1); }

void convert_mtx(const ConvertArgs& a) {
  const auto say = [&](const std::string& line) {
    if (!a.quiet) std::cout << line << "\n" << std::flush;
  };
  {
    // §7.8: refused before anything is read (write_dataset checks again when it starts).
    std::error_code ec;
    if (!a.overwrite && std::filesystem::is_directory(a.output, ec) && !std::filesystem::is_empty(a.output, ec))
      throw UsageError(a.output + " is not empty; pass --overwrite to replace it", a.output);
  }
  const std::vector<std::string> paths = resolve_patterns(a.tenx_mtx, a.no_sort_files);
  say(std::to_string(paths.size()) + " files: " + paths.front() + " ... " + paths.back());
  std::vector<cells::MtxDirectory> dirs;
  std::uint64_t min_cells = UINT64_MAX, max_cells = 0;
  for (const auto& p : paths) {
    dirs.push_back(cells::scan_mtx_directory(p));
    min_cells = std::min(min_cells, dirs.back().n_cells);
    max_cells = std::max(max_cells, dirs.back().n_cells);
  }
  cells::MtxCsrSource source(dirs);
  const std::uint64_t n_cells = source.n_cells(), n_genes = source.n_genes();
  say(std::to_string(n_cells) + " cells x " + std::to_string(n_genes) + " genes (cells per file: min " +
      std::to_string(min_cells) + ", max " + std::to_string(max_cells) + ")");

  cells::DatasetWriteOptions o;
  o.version = static_cast<std::uint32_t>(a.format_version);
  o.tile_size = a.tile_size;
  o.n_chunks = a.chunks;
  o.level = a.level;
  o.overwrite = a.overwrite;
  const std::uint64_t n_tiles = (n_cells + a.tile_size - 1) / a.tile_size;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  o.workers = a.workers ? a.workers : static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(cores, n_tiles)));
  o.threads = a.threads ? a.threads : std::min(std::max(1u, cores / o.workers), 2 * a.chunks);
  say(std::to_string(n_tiles) + " tiles, written by " + std::to_string(o.workers) + " worker(s) with " +
      std::to_string(o.threads) + " compression thread(s) each");

  std::size_t summed = 0;
  if (!a.no_sort_genes) {
    std::vector<cells::MtxDirectory> used;
    std::uint64_t used_cells = 0;
    for (std::size_t f : gene_order_files(dirs.size(), a.sort_genes_max_files)) {
      used.push_back(dirs[f]);
      used_cells += dirs[f].n_cells;
    }
    summed = used.size();
    say("gene order: summing the counts of " + std::to_string(summed) + " of " + std::to_string(dirs.size()) +
        " files (" + std::to_string(used_cells) + " cells)");
    if (summed == dirs.size()) {
      // The same source: its counting passes (and a band that holds every cell) are reused.
      o.gene_order = cells::order_by_decreasing_total(cells::gene_totals(source, a.tile_size));
    } else {
      cells::MtxCsrSource totals_source(std::move(used));
      o.gene_order = cells::order_by_decreasing_total(cells::gene_totals(totals_source, a.tile_size));
    }
  }
  const auto& first = dirs.front();
  std::vector<std::string> names =
      a.tenx_var_names == "gene_symbols" ? cells::make_names_unique(first.gene_symbols) : first.gene_ids;
  o.var_names.resize(names.size());
  for (std::size_t j = 0; j < names.size(); ++j)
    o.var_names[j] = o.gene_order.empty() ? names[j] : names[static_cast<std::size_t>(o.gene_order[j])];
  o.metadata = codec::json::Json::object();
  o.metadata["source"] = "10x-mtx";
  o.metadata["n_source_files"] = paths.size();
  o.metadata["first_file"] = paths.front();
  o.metadata["last_file"] = paths.back();
  o.metadata["sort_genes"] = !a.no_sort_genes;
  o.metadata["sort_genes_n_files"] = summed;
  std::uint64_t bytes = 0;
  o.on_tile = [&](const cells::TileWritten& t) {
    bytes += t.bytes;
    say("[tile " + std::to_string(t.index + 1) + "/" + std::to_string(t.n_tiles) + "] " + std::to_string(t.n_cells) +
        " cells, " + mb(t.bytes) + " MB");
  };
  cells::write_dataset(source, a.output, o);
  say("done: " + std::to_string(n_tiles) + " tiles, " + mb(bytes) + " MB = " +
      cells::format_fixed(static_cast<double>(bytes) / static_cast<double>(n_cells) / 1e3, 2) + " kB per cell");
}

}  // namespace

void register_cells_convert(CLI::App& cells, int& rc) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* cmd = cells.add_subcommand("convert", "Convert h5ad / 10x inputs into a deltacells dataset");
  CLI::Option* h5ad = cmd->add_option("--h5ad-glob", a->h5ad, "AnnData .h5ad files (glob patterns)");
  CLI::Option* tenx_h5 = cmd->add_option("--10x-h5", a->tenx_h5, "Cell Ranger HDF5 files (glob patterns)");
  CLI::Option* tenx_mtx = cmd->add_option("--10x-mtx", a->tenx_mtx, "Cell Ranger MatrixMarket directories");
  h5ad->excludes(tenx_h5)->excludes(tenx_mtx);
  tenx_h5->excludes(tenx_mtx);
  cmd->add_option("--output", a->output, "output dataset directory")->required();
  cmd->add_option("--format-version", a->format_version, "deltacells format version (1 or 2)")->check(CLI::IsMember({1, 2}));
  cmd->add_option("--tile-size", a->tile_size, "cells per tile")->check(CLI::PositiveNumber);
  cmd->add_option("--chunks", a->chunks, "chunks per tile")->check(CLI::PositiveNumber);
  cmd->add_option("--level", a->level, "zstd level")->check(CLI::Range(-131072, 22));
  cmd->add_flag("--no-sort-genes", a->no_sort_genes, "keep the source gene order");
  cmd->add_option("--sort-genes-max-files", a->sort_genes_max_files, "files summed for the gene order (0 = all)");
  cmd->add_flag("--no-sort-files", a->no_sort_files, "keep the order of the patterns");
  cmd->add_option("--workers", a->workers, "tiles encoded concurrently");
  cmd->add_option("--threads", a->threads, "compression threads per tile");
  cmd->add_flag("--no-obs", a->no_obs, "do not store obs");
  cmd->add_flag("--no-obs-names", a->no_obs_names, "do not store the cell names as an obs column");
  cmd->add_flag("--no-var", a->no_var, "do not store var.parquet");
  cmd->add_option("--obs-exclude", a->obs_exclude, "obs columns left out (comma-separated)");
  cmd->add_option("--max-categories", a->max_categories, "largest vocabulary kept as a category");
  cmd->add_option("--obs-tiles-per-file", a->obs_tiles_per_file, "tiles per obs shard")->check(CLI::PositiveNumber);
  cmd->add_option("--obs-level", a->obs_level, "zstd level of obs Parquet pages");
  cmd->add_flag("--overwrite", a->overwrite, "replace a non-empty output once the new dataset is complete");
  cmd->add_flag("--quiet", a->quiet, "no progress lines");
  cmd->add_option("--layer", a->layer, "read layers/NAME instead of X");
  cmd->add_flag("--use-raw", a->use_raw, "read raw/X with raw/var");
  cmd->add_option("--10x-var-names", a->tenx_var_names, "gene names of 10x inputs")
      ->check(CLI::IsMember({"gene_ids", "gene_symbols"}));
  cmd->add_option("--10x-genome", a->tenx_genome, "genome of a multi-genome 10x v2 file");
  cmd->callback([a, &rc, h5ad, tenx_h5, tenx_mtx] {
    if (h5ad->count() + tenx_h5->count() + tenx_mtx->count() == 0)
      throw CLI::RequiredError("one of --h5ad-glob, --10x-h5 or --10x-mtx");
    if (!a->layer.empty() && a->use_raw) throw CLI::ValidationError("--layer and --use-raw", "give at most one");
    if (!a->no_obs || !a->no_var)
      throw UnsupportedError(
          "convert: obs and var tables are not supported in this version; pass --no-obs --no-var");
    if (tenx_mtx->count()) {
      convert_mtx(*a);
      rc = 0;
      return;
    }
    const char* kind = h5ad->count() ? "h5ad" : "10x HDF5";
    throw UnsupportedError(std::string("convert: the ") + kind +
                           " input reader is not built in this version of tessera");
    rc = 1;
  });
}

}  // namespace tessera::cli
