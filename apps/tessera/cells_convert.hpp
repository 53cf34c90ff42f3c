// `tessera cells convert`: the command line (cells_convert.cpp) and the input side
// (cells_convert_inputs.cpp): pattern expansion and natural order (spec deltacells.md §7.1), the
// scan of each input kind into one `ConvertInput` (HDF5 scans in a child process,
// cells_convert_isolate.cpp), and the worker defaults of §7.4.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"
#include "tessera/cells/obs_table.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/interop/h5ad.hpp"
#include "tessera/interop/h5ad_tables.hpp"
#include "tessera/interop/tenx_h5.hpp"

namespace tessera::cli {

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
  // The steps of a distributed convert (docs/distributed.md): the plan (gene order and size),
  // one task's tiles, and the commit over the tiles the tasks wrote.
  std::string gene_order_out, gene_order_from, tiles, tiles_from;
};

// Every input of one conversion, scanned: the files in order, their cell counts, the gene names
// (checked identical across files) and how to open the matrix of any file.
struct ConvertInput {
  std::string source;    // "h5ad", "10x-h5" or "10x-mtx" (manifest metadata)
  std::string x_source;  // "layers/NAME" or "raw/X" (h5ad), else empty
  std::vector<std::string> paths;
  std::vector<std::uint64_t> cells;  // per file
  std::uint64_t n_genes = 0;
  std::uint64_t entries = 0;           // stored entries of every file (dense: cells × genes)
  std::vector<std::string> var_names;  // the first file's, in source column order
  // h5ad: what the files hold that the dataset will not (interop::H5adScan::not_converted, in
  // first-seen order over the files), and where else counts may be (layer names, raw/X).
  std::vector<std::string> not_converted;
  std::vector<std::string> layers;
  bool has_raw = false;
  std::function<std::unique_ptr<cells::CsrBlockSource>(std::size_t file)> open;
  // Unless --no-obs: per file, its obs table (h5ad: the obs dataframe in column order, columns
  // named by --obs-exclude not read but listed in `skipped`; 10x: no columns) without the
  // obs_names column, and its cell names (h5ad: the obs index; 10x: the barcodes). Both empty
  // with --no-obs.
  std::vector<cells::InputObsTable> obs_tables;
  std::vector<std::vector<std::string>> obs_names;
  // Unless --no-var: the first file's var table in source column order (h5ad: var or raw/var;
  // 10x: gene_symbols or gene_ids, feature_types, genome when present, index = var_names).
  std::shared_ptr<cells::VarTable> var;
};

// Scans `paths` (already resolved) of the kind the arguments select.
ConvertInput scan_inputs(const ConvertArgs& args, const std::vector<std::string>& paths);

// The HDF5 scans, each run in a child process (cells_convert_isolate.cpp): a libhdf5 crash or
// hang on a damaged file becomes a FormatError naming the file; the scan's own errors come back
// with their type.
interop::H5adScan scan_h5ad_isolated(const std::string& path, const interop::H5adOptions& options);
interop::TenxH5Scan scan_tenx_h5_isolated(const std::string& path, const std::string& genome);

// The h5ad scan plus, when asked, the obs and var tables (read in the same child process: they
// hold variable-length strings too).
struct H5adTablesRequest {
  bool obs = false, var = false;
  interop::H5adTableOptions options;  // use_raw (var) and the excluded obs columns
};
struct H5adInputScan {
  interop::H5adScan scan;
  std::optional<interop::H5adObs> obs;   // with request.obs
  std::shared_ptr<cells::VarTable> var;  // with request.var
};
H5adInputScan scan_h5ad_input_isolated(const std::string& path, const interop::H5adOptions& options,
                                       const H5adTablesRequest& request);

// §7.3: the files summed for the gene order (numpy's linspace(0, n − 1, k).round()).
std::vector<std::size_t> gene_order_files(std::size_t n, std::uint64_t k);

// §7.4: W = min(cores, n_tiles, floor(0.7 × available / per_tile)), at least 1, where available
// is MemAvailable capped by the cgroup limit and per_tile the working set of one tile holding
// `entries_per_tile` stored entries.
unsigned default_workers(std::uint64_t n_tiles, std::uint64_t entries_per_tile);

}  // namespace tessera::cli
