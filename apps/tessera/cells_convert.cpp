// `tessera cells convert (--h5ad-glob | --10x-h5 | --10x-mtx) PATTERN… --output DIR [flags]`
// (spec deltacells.md §7, §9.4). The flags are those of §7.9. In this version the input
// readers (h5ad, 10x) are not built and obs/var sidecars are not written, so after the command
// line is checked (usage errors exit 2) the command fails with an UnsupportedError saying so.
#include <memory>
#include <string>
#include <vector>

#include "cells_commands.hpp"
#include "commands.hpp"
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
    const char* kind = h5ad->count() ? "h5ad" : tenx_h5->count() ? "10x HDF5" : "10x MatrixMarket";
    throw UnsupportedError(std::string("convert: the ") + kind +
                           " input reader is not built in this version of tessera");
    rc = 1;
  });
}

}  // namespace tessera::cli
