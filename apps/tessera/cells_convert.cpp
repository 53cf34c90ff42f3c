// `tessera cells convert (--h5ad-glob | --10x-h5 | --10x-mtx) PATTERN… --output DIR [flags]`
// (spec deltacells.md §7, §9.4). The flags are those of §7.9. Every input kind goes through one
// flow: resolve the patterns, scan the files (cells_convert_inputs.cpp), sum the gene totals of
// the files §7.3 selects, then write the dataset from the concatenated files
// (cells::ConcatCsrSource → cells::write_dataset) together with the obs sidecar (every input's
// obs table under one schema, §6.4) and var.parquet in stored gene order (§6.7), unless
// `--no-obs` / `--no-var`. Usage errors exit 2.
#include <signal.h>

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cells_commands.hpp"
#include "cells_convert.hpp"
#include "commands.hpp"
#include "remote_output.hpp"
#include "tessera/cells/concat_source.hpp"
#include "tessera/cells/count_errors.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/cells/gene_files.hpp"

namespace tessera::cli {
namespace {

// §7.8: SIGINT and SIGTERM stop the conversion between tiles; the writer then removes what it
// created and the command exits 1. The previous handlers come back when the conversion ends.
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) { g_signal.store(sig); }

class StopSignals {
 public:
  StopSignals() {
    g_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static bool raised() { return g_signal.load() != 0; }
  static std::string name() { return g_signal.load() == SIGINT ? "SIGINT" : "SIGTERM"; }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

std::string mb(std::uint64_t bytes) { return cells::format_fixed(static_cast<double>(bytes) / 1e6, 1); }

// The concatenated cells of the chosen files.
std::unique_ptr<cells::ConcatCsrSource> open_files(const ConvertInput& in, const std::vector<std::size_t>& files) {
  std::vector<std::unique_ptr<cells::CsrBlockSource>> parts;
  parts.reserve(files.size());
  for (std::size_t f : files) parts.push_back(in.open(f));
  return std::make_unique<cells::ConcatCsrSource>(std::move(parts));
}

// §6.4, §7.5: the obs of every input (plus the cell names as `obs_names`) under one schema, every
// cell's row encoded in cell order. Null when nothing is left to store.
std::shared_ptr<const cells::ObsWriteInput> build_obs(const ConvertArgs& a, const ConvertInput& in) {
  std::vector<cells::InputObsTable> tables = in.obs_tables;
  if (tables.size() != in.paths.size()) return nullptr;
  for (std::size_t f = 0; f < tables.size(); ++f) {
    if (a.no_obs_names) continue;
    for (const auto& c : tables[f].columns)
      if (c.name == "obs_names")
        throw UsageError(in.paths[f] +
                         ": obs already has a column named 'obs_names'; pass --no-obs-names to keep it "
                         "and not store the cell names");
    cells::InputObsColumn names{
        "obs_names", cells::ObsKind::String, columnar::Column(columnar::ColumnType::String), {}};
    for (const auto& n : in.obs_names[f]) names.values.append_string(n);
    tables[f].columns.push_back(std::move(names));
  }
  cells::ObsBuildOptions bo;
  bo.exclude = split_column_names(a.obs_exclude);
  bo.max_categories = a.max_categories;
  auto obs = std::make_shared<cells::ObsWriteInput>();
  obs->schema = cells::infer_obs_schema(tables, bo);
  if (obs->schema.columns.empty()) return nullptr;
  obs->tiles_per_file = a.obs_tiles_per_file;
  obs->zstd_level = a.obs_level;
  obs->columns.reserve(obs->schema.columns.size());
  for (std::size_t f = 0; f < tables.size(); ++f) {
    auto part = cells::encode_obs_table(tables[f], obs->schema);
    tables[f] = {};  // the encoded copy replaces the input table
    if (f == 0) obs->columns = std::move(part);
    else
      for (std::size_t c = 0; c < part.size(); ++c) columnar::append_rows(obs->columns[c], part[c]);
  }
  return obs;
}

// `obs: <C> columns (<n> categorical, strings: [...])` (§9.4).
std::string obs_summary_line(const cells::ObsSchema& schema) {
  std::size_t categorical = 0;
  codec::json::Json strings = codec::json::Json::array();
  for (const auto& c : schema.columns) {
    categorical += c.kind == cells::ObsKind::Category;
    if (c.kind == cells::ObsKind::String) strings.push_back(c.name);
  }
  return "obs: " + std::to_string(schema.columns.size()) + " columns (" + std::to_string(categorical) +
         " categorical, strings: " + cells::python_repr(strings) + ")";
}

// The var table in stored gene order (row j is source gene gene_order[j]).
std::shared_ptr<const cells::VarTable> stored_var_table(const cells::VarTable& source,
                                                        const std::vector<std::int32_t>& gene_order) {
  if (gene_order.empty()) return std::make_shared<cells::VarTable>(source);
  const std::vector<std::uint64_t> rows(gene_order.begin(), gene_order.end());
  auto out = std::make_shared<cells::VarTable>();
  out->column_names = source.column_names;
  out->index_name = source.index_name;
  for (const auto& c : source.columns) out->columns.push_back(columnar::gather_rows(c, rows));
  out->index = columnar::gather_rows(source.index, rows);
  return out;
}

std::string joined(const std::vector<std::string>& items, std::size_t at_most = 12) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < at_most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > at_most) out += " and " + std::to_string(items.size() - at_most) + " more";
  return out;
}

// A non-integer count in an h5ad's X usually means X was normalised: the error says where the
// raw counts may be instead (the files' layers, raw/X).
[[noreturn]] void rethrow_with_count_advice(const cells::NonIntegerCount& e, const ConvertInput& in) {
  std::string advice;
  if (in.source == "h5ad" && in.x_source.empty()) {
    std::vector<std::string> ways;
    if (!in.layers.empty()) ways.push_back("--layer NAME (layers: " + joined(in.layers) + ")");
    if (in.has_raw) ways.push_back("--use-raw (raw/X)");
    advice = ways.empty() ? "; X seems to hold normalised values and the files have no layers or raw/X: convert "
                            "the files the raw counts came from"
                          : "; X seems to hold normalised values: convert the raw counts with " +
                                (ways.size() == 1 ? ways[0] : ways[0] + " or " + ways[1]);
  }
  throw cells::NonIntegerCount(std::string(e.what()) + advice, e.path(), e.structure());
}

// `--tiles FIRST:LAST` as a range; CLI::ValidationError for anything else.
cells::DatasetWriteOptions::TileRange parse_tile_range(const std::string& text) {
  const auto colon = text.find(':');
  const auto number = [&](std::string_view part) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size())
      throw CLI::ValidationError("--tiles", "'" + text + "': give FIRST:LAST, tile numbers from 0 (LAST excluded)");
    return v;
  };
  if (colon == std::string::npos) number("");
  return {number(std::string_view(text).substr(0, colon)), number(std::string_view(text).substr(colon + 1))};
}

// The gene order a distributed convert's plan step wrote (`--gene-order-from FILE`).
std::vector<std::int32_t> read_gene_order(const std::string& file, std::uint64_t n_genes) {
  const auto source = io::open_file(file, io::OpenMode::Pread);
  return cells::decode_gene_order(*source, n_genes, file);
}

void convert(const ConvertArgs& given, const std::vector<std::string>& patterns) {
  const bool task = !given.tiles.empty();
  ConvertArgs a = given;
  if (task) a.no_obs = a.no_var = true;  // a task encodes tiles only: obs and var are the commit's
  const auto say = [&](const std::string& line) {
    if (!a.quiet) std::cout << line << "\n" << std::flush;
  };
  // A bucket output is staged locally and published with its manifest last (docs/commit-protocols.md).
  // A task writes into the local directory its driver gave it, shared with the other tasks.
  io::OutputTarget target(a.output, io::OutputTarget::Shape::Directory);
  const io::CommitPlan plan{.commit_keys = {"manifest.json"}, .overwrite = a.overwrite};
  if (!task) {
    // §7.8: refused before anything is read (write_dataset checks again when it starts).
    target.check_writable(plan);
    std::error_code ec;
    if (!target.remote() && !a.overwrite && std::filesystem::is_directory(a.output, ec) &&
        !std::filesystem::is_empty(a.output, ec))
      throw UsageError(a.output + " is not empty; pass --overwrite to replace it", a.output);
  }
  const std::vector<std::string> paths = resolve_patterns(patterns, a.no_sort_files);
  say(std::to_string(paths.size()) + " files: " + paths.front() + " ... " + paths.back());
  const ConvertInput in = scan_inputs(a, paths);
  if (!in.not_converted.empty())
    say("not converted: " + joined(in.not_converted) + " (a deltacells dataset keeps the counts, obs and var)");
  std::shared_ptr<const cells::ObsWriteInput> obs = a.no_obs ? nullptr : build_obs(a, in);
  if (obs) say(obs_summary_line(obs->schema));
  std::vector<std::size_t> all(paths.size());
  for (std::size_t f = 0; f < all.size(); ++f) all[f] = f;
  const auto source = open_files(in, all);
  const std::uint64_t n_cells = source->n_cells(), n_genes = source->n_genes();
  const auto [min_cells, max_cells] = std::minmax_element(in.cells.begin(), in.cells.end());
  say(std::to_string(n_cells) + " cells x " + std::to_string(n_genes) + " genes (cells per file: min " +
      std::to_string(*min_cells) + ", max " + std::to_string(*max_cells) + ")");

  cells::DatasetWriteOptions o;
  o.version = static_cast<std::uint32_t>(a.format_version);
  o.tile_size = a.tile_size;
  o.n_chunks = a.chunks;
  o.level = a.level;
  o.overwrite = a.overwrite;
  const std::uint64_t n_tiles = (n_cells + a.tile_size - 1) / a.tile_size;
  const double entries_per_cell = n_cells ? static_cast<double>(in.entries) / static_cast<double>(n_cells) : 0.0;
  const auto entries_per_tile = static_cast<std::uint64_t>(entries_per_cell * static_cast<double>(a.tile_size)) + 1;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  o.workers = a.workers ? a.workers : default_workers(n_tiles, entries_per_tile);
  o.threads = a.threads ? a.threads : std::min(std::max(1u, cores / o.workers), 2 * a.chunks);
  o.max_in_flight = 2 * std::size_t{o.workers};  // one tile encoding and one read ahead per worker
  say(std::to_string(n_tiles) + " tiles, written by " + std::to_string(o.workers) + " worker(s) with " +
      std::to_string(o.threads) + " compression thread(s) each");

  try {
    std::size_t summed = 0;
    if (!a.no_sort_genes && !a.gene_order_from.empty()) {
      o.gene_order = read_gene_order(a.gene_order_from, n_genes);
      summed = gene_order_files(paths.size(), a.sort_genes_max_files).size();  // as the plan step summed
    } else if (!a.no_sort_genes) {
      const std::vector<std::size_t> used = gene_order_files(paths.size(), a.sort_genes_max_files);
      std::uint64_t used_cells = 0;
      for (std::size_t f : used) used_cells += in.cells[f];
      summed = used.size();
      say("gene order: summing the counts of " + std::to_string(summed) + " of " + std::to_string(paths.size()) +
          " files (" + std::to_string(used_cells) + " cells)");
      if (summed == paths.size()) {
        // The same source: a transposed input's counting pass (and a band holding every cell) is reused.
        o.gene_order = cells::order_by_decreasing_total(cells::gene_totals(*source, a.tile_size, StopSignals::raised));
      } else {
        const auto totals_source = open_files(in, used);
        o.gene_order =
            cells::order_by_decreasing_total(cells::gene_totals(*totals_source, a.tile_size, StopSignals::raised));
      }
    }
    o.var_names.resize(in.var_names.size());
    for (std::size_t j = 0; j < in.var_names.size(); ++j)
      o.var_names[j] = o.gene_order.empty() ? in.var_names[j] : in.var_names[static_cast<std::size_t>(o.gene_order[j])];
    o.obs = obs;
    if (!a.no_var && in.var) o.var_table = stored_var_table(*in.var, o.gene_order);
    o.metadata = codec::json::Json::object();
    o.metadata["source"] = in.source;
    o.metadata["n_source_files"] = paths.size();
    o.metadata["first_file"] = paths.front();
    o.metadata["last_file"] = paths.back();
    o.metadata["sort_genes"] = !a.no_sort_genes;
    o.metadata["sort_genes_n_files"] = summed;
    if (!in.x_source.empty()) o.metadata["x_source"] = in.x_source;
    std::uint64_t bytes = 0;
    o.on_tile = [&](const cells::TileWritten& t) {
      bytes += t.bytes;
      say("[tile " + std::to_string(t.index + 1) + "/" + std::to_string(t.n_tiles) + "] " + std::to_string(t.n_cells) +
          " cells, " + mb(t.bytes) + " MB");
    };
    o.interrupted = StopSignals::raised;
    if (!a.gene_order_out.empty()) {  // the plan step of a distributed convert
      if (!o.gene_order.empty()) {
        const auto bytes = cells::encode_gene_order(o.gene_order);
        io::write_file_atomic(a.gene_order_out, bytes);
      }
      std::cout << fmt::format(R"({{"n_cells": {}, "n_genes": {}, "tile_size": {}, "n_tiles": {}, "gene_order": {}}})",
                               n_cells, n_genes, a.tile_size, n_tiles, o.gene_order.empty() ? "false" : "true")
                << "\n";
      return;
    }
    if (task) {
      o.tile_range = parse_tile_range(a.tiles);
      const cells::Manifest m = cells::write_dataset(*source, a.output, o);
      std::uint64_t task_bytes = 0;
      for (const auto b : m.tile_bytes) task_bytes += b;
      std::cout << fmt::format(R"({{"tiles": {}, "bytes": {}}})", m.tile_cells.size(), task_bytes) << "\n";
      return;
    }
    o.tiles_from = a.tiles_from;
    const cells::Manifest m = cells::write_dataset(*source, target.local_path(), o);
    publish_output(target, plan);
    say("done: " + std::to_string(n_tiles) + " tiles, " + mb(bytes) + " MB = " +
        cells::format_fixed(static_cast<double>(bytes) / static_cast<double>(n_cells) / 1e3, 2) + " kB per cell");
    if (m.has_obs) {
      std::uint64_t obs_bytes = 0;
      for (const auto b : m.obs_shard_bytes) obs_bytes += b;
      say("obs: " + mb(obs_bytes) + " MB in " + std::to_string(m.obs_shard_bytes.size()) + " parquet shard(s)");
    }
  } catch (const cells::NonIntegerCount& e) {
    rethrow_with_count_advice(e, in);
  }
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
  cmd->add_option("--format-version", a->format_version, "deltacells format version (1 or 2)")
      ->check(CLI::IsMember({1, 2}));
  cmd->add_option("--tile-size", a->tile_size, "cells per tile")->check(integer_at_least(1));
  cmd->add_option("--chunks", a->chunks, "chunks per tile")->check(integer_at_least(1));
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
  cmd->add_option("--obs-tiles-per-file", a->obs_tiles_per_file, "tiles per obs shard")->check(integer_at_least(1));
  cmd->add_option("--obs-level", a->obs_level, "zstd level of obs Parquet pages");
  cmd->add_flag("--overwrite", a->overwrite, "replace a non-empty output once the new dataset is complete");
  cmd->add_flag("--quiet", a->quiet, "no progress lines");
  cmd->add_option("--layer", a->layer, "read layers/NAME instead of X");
  cmd->add_flag("--use-raw", a->use_raw, "read raw/X with raw/var");
  cmd->add_option("--10x-var-names", a->tenx_var_names, "gene names of 10x inputs")
      ->check(CLI::IsMember({"gene_ids", "gene_symbols"}));
  cmd->add_option("--10x-genome", a->tenx_genome, "genome of a multi-genome 10x v2 file");
  // The steps of a distributed convert (docs/distributed.md), which tessera.cells.convert(...,
  // client=) runs; each takes the same inputs and flags.
  CLI::Option* plan_step = cmd->add_option(
      "--gene-order-out", a->gene_order_out,
      "distributed convert, plan: write the gene order to FILE (.npy) and print the size as JSON; write no dataset");
  CLI::Option* order_from = cmd->add_option("--gene-order-from", a->gene_order_from,
                                            "distributed convert: the gene order the plan step wrote")
                                ->check(CLI::ExistingFile);
  CLI::Option* task_step = cmd->add_option(
      "--tiles", a->tiles, "distributed convert, task: encode tiles FIRST:LAST (LAST excluded) into OUTPUT/tiles only");
  CLI::Option* commit_step = cmd->add_option("--tiles-from", a->tiles_from,
                                             "distributed convert, commit: take the tiles the tasks wrote into "
                                             "DIR/tiles and write the dataset around them")
                                 ->check(CLI::ExistingDirectory);
  plan_step->excludes(task_step)->excludes(commit_step)->excludes(order_from);
  task_step->excludes(commit_step);
  cmd->callback([a, &rc, h5ad, tenx_h5, tenx_mtx] {
    if (h5ad->count() + tenx_h5->count() + tenx_mtx->count() == 0)
      throw CLI::RequiredError("one of --h5ad-glob, --10x-h5 or --10x-mtx");
    if (!a->layer.empty() && a->use_raw) throw CLI::ValidationError("--layer and --use-raw", "give at most one");
    if ((!a->layer.empty() || a->use_raw) && h5ad->count() == 0)
      throw CLI::ValidationError("--layer and --use-raw", "apply to --h5ad-glob inputs only");
    if (!a->tenx_genome.empty() && tenx_h5->count() == 0)
      throw CLI::ValidationError("--10x-genome", "applies to --10x-h5 inputs only");
    if ((!a->tiles.empty() || !a->tiles_from.empty()) && !a->no_sort_genes && a->gene_order_from.empty())
      throw CLI::ValidationError("--tiles and --tiles-from", "need --gene-order-from (or --no-sort-genes)");
    if (!a->tiles.empty() && io::uri_kind(a->output) != io::UriKind::Local)
      throw CLI::ValidationError("--tiles", "a task writes its tiles into a local directory");
    StopSignals signals;
    try {
      convert(*a, tenx_mtx->count() ? a->tenx_mtx : tenx_h5->count() ? a->tenx_h5 : a->h5ad);
    } catch (const cells::Interrupted&) {
      throw cells::Interrupted("interrupted by " + StopSignals::name() + "; the partial output was removed");
    }
    rc = 0;
  });
}

}  // namespace tessera::cli
