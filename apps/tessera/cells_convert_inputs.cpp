// The input side of `tessera cells convert` (spec deltacells.md §7.1, §7.4, §7.5): Python-compatible
// glob expansion and natural order, the scan of each input kind (10x MatrixMarket directories in
// `cells`, h5ad and 10x HDF5 files in `interop`) into one ConvertInput with its obs tables, cell
// names and var table, and the default number of workers under the memory cap.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "cells_commands.hpp"
#include "cells_convert.hpp"
#include "commands.hpp"
#include "tessera/cells/concat_source.hpp"
#include "tessera/cells/gene_files.hpp"
#include "tessera/cells/mtx_source.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/h5ad.hpp"
#include "tessera/interop/tenx_h5.hpp"

namespace tessera::cli {
namespace {

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
void glob_from(const std::string& acc, const std::vector<std::string>& parts, std::size_t i,
               std::vector<std::string>& out) {
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

// 10x inputs (§7.5): obs is the barcodes only, a table without columns.
void add_barcodes(ConvertInput& in, const ConvertArgs& a, const std::string& path, std::vector<std::string> barcodes) {
  if (a.no_obs) return;
  cells::InputObsTable t;
  t.source = path;
  t.n_rows = barcodes.size();
  in.obs_tables.push_back(std::move(t));
  in.obs_names.push_back(std::move(barcodes));
}

// 10x var.parquet (§7.5): the symbols (or the ids, when the symbols are the names), the feature
// types and the genome when the input has one; the index is the var names, unnamed.
std::shared_ptr<cells::VarTable> tenx_var(const ConvertArgs& a, const std::vector<std::string>& var_names,
                                          const std::vector<std::string>& ids, const std::vector<std::string>& symbols,
                                          const std::vector<std::string>& types,
                                          const std::vector<std::string>& genomes) {
  auto t = std::make_shared<cells::VarTable>();
  const auto add = [&](const char* name, const std::vector<std::string>& values) {
    columnar::Column c(columnar::ColumnType::String);
    for (const auto& v : values) c.append_string(v);
    t->column_names.emplace_back(name);
    t->columns.push_back(std::move(c));
  };
  if (a.tenx_var_names == "gene_symbols") add("gene_ids", ids);
  else add("gene_symbols", symbols);
  add("feature_types", types);
  if (!genomes.empty()) add("genome", genomes);
  for (const auto& n : var_names) t->index.append_string(n);
  return t;
}

void add_file(ConvertInput& in, const std::string& path, std::uint64_t n_cells, std::uint64_t n_genes,
              std::uint64_t entries) {
  in.paths.push_back(path);
  in.cells.push_back(n_cells);
  in.n_genes = n_genes;
  in.entries += entries;
}

ConvertInput scan_mtx(const ConvertArgs& a, const std::vector<std::string>& paths) {
  ConvertInput in;
  in.source = "10x-mtx";
  auto dirs = std::make_shared<std::vector<cells::MtxDirectory>>();
  std::vector<std::string> first_ids;
  for (const auto& p : paths) {
    cells::MtxDirectory d = cells::scan_mtx_directory(p);
    if (dirs->empty()) {
      in.var_names = a.tenx_var_names == "gene_symbols" ? cells::make_names_unique(d.gene_symbols) : d.gene_ids;
      first_ids = d.gene_ids;
      if (!a.no_var) in.var = tenx_var(a, in.var_names, d.gene_ids, d.gene_symbols, d.feature_types, {});
    } else {
      cells::check_same_genes(first_ids, dirs->front().features_file, d.gene_ids, d.features_file);
    }
    add_file(in, p, d.n_cells, d.n_genes, d.n_entries);
    add_barcodes(in, a, p, std::move(d.barcodes));
    d.gene_ids = d.gene_symbols = d.feature_types = d.barcodes = {};  // the matrix source needs none of them
    dirs->push_back(std::move(d));
  }
  in.open = [dirs](std::size_t f) -> std::unique_ptr<cells::CsrBlockSource> {
    return cells::open_mtx_matrix((*dirs)[f]);
  };
  return in;
}

ConvertInput scan_h5ad(const ConvertArgs& a, const std::vector<std::string>& paths) {
  ConvertInput in;
  in.source = "h5ad";
  const interop::H5adOptions options{.layer = a.layer, .use_raw = a.use_raw};
  in.x_source = a.use_raw ? "raw/X" : a.layer.empty() ? "" : "layers/" + a.layer;
  auto scans = std::make_shared<std::vector<interop::H5adScan>>();
  H5adTablesRequest request;
  request.obs = !a.no_obs;
  request.options.use_raw = a.use_raw;
  request.options.exclude = split_column_names(a.obs_exclude);
  for (const auto& p : paths) {
    request.var = !a.no_var && scans->empty();  // the first file's var table
    H5adInputScan r = scan_h5ad_input_isolated(p, options, request);
    interop::H5adScan& s = r.scan;
    if (scans->empty()) in.var_names = s.var_names;
    else cells::check_same_genes(in.var_names, paths.front(), s.var_names, p);
    add_file(in, p, s.n_cells, s.n_genes, s.nnz);
    const auto add_new = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
      for (const auto& item : from)
        if (std::find(to.begin(), to.end(), item) == to.end()) to.push_back(item);
    };
    add_new(in.not_converted, s.not_converted);
    add_new(in.layers, s.layers);
    in.has_raw = in.has_raw || s.has_raw;
    if (r.obs) {
      if (r.obs->names.size() != s.n_cells)
        throw FormatError(p + ": obs: " + std::to_string(r.obs->names.size()) + " cell names, but " + s.matrix +
                              " has " + std::to_string(s.n_cells) + " cells",
                          p, "obs");
      in.obs_tables.push_back(std::move(r.obs->table));
      in.obs_names.push_back(std::move(r.obs->names));
    }
    if (r.var) in.var = std::move(r.var);
    s.var_names = {};
    scans->push_back(std::move(s));
  }
  in.open = [scans, options](std::size_t f) { return interop::open_h5ad_matrix((*scans)[f], options); };
  return in;
}

ConvertInput scan_tenx_h5(const ConvertArgs& a, const std::vector<std::string>& paths) {
  ConvertInput in;
  in.source = "10x-h5";
  auto scans = std::make_shared<std::vector<interop::TenxH5Scan>>();
  std::vector<std::string> first_ids;
  for (const auto& p : paths) {
    interop::TenxH5Scan s = scan_tenx_h5_isolated(p, a.tenx_genome);
    if (scans->empty()) {
      in.var_names = a.tenx_var_names == "gene_symbols" ? cells::make_names_unique(s.gene_symbols) : s.gene_ids;
      first_ids = s.gene_ids;
      if (!a.no_var) in.var = tenx_var(a, in.var_names, s.gene_ids, s.gene_symbols, s.feature_types, s.genomes);
    } else {
      cells::check_same_genes(first_ids, paths.front(), s.gene_ids, p);
    }
    add_file(in, p, s.n_cells, s.n_genes, s.nnz);
    add_barcodes(in, a, p, std::move(s.barcodes));
    s.gene_ids = s.gene_symbols = s.feature_types = s.genomes = s.barcodes = {};
    scans->push_back(std::move(s));
  }
  in.open = [scans](std::size_t f) { return interop::open_tenx_h5_matrix((*scans)[f]); };
  return in;
}

// Bytes of memory the converter may plan with: MemAvailable capped by the cgroup limit
// (v2 memory.max, else v1 memory.limit_in_bytes); 0 when unknown.
std::uint64_t available_memory() {
  std::uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::uint64_t kb = 0;
    std::string unit;
    meminfo >> kb >> unit;
    if (key == "MemAvailable:") {
      available = kb * 1024;
      break;
    }
  }
  for (const char* limit_file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(limit_file);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    std::uint64_t limit = 0;
    std::istringstream(text) >> limit;
    if (limit > 0 && (available == 0 || limit < available)) available = limit;
    break;
  }
  return available;
}

}  // namespace

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

ConvertInput scan_inputs(const ConvertArgs& a, const std::vector<std::string>& paths) {
  if (!a.tenx_mtx.empty()) return scan_mtx(a, paths);
  if (!a.tenx_h5.empty()) return scan_tenx_h5(a, paths);
  return scan_h5ad(a, paths);
}

unsigned default_workers(std::uint64_t n_tiles, std::uint64_t entries_per_tile) {
  // One tile's working set: the block read (16 bytes per entry), its canonical CSR (8), the
  // planes and frames being compressed (~8), plus one more block read ahead of it (16).
  constexpr std::uint64_t kBytesPerEntry = 48;
  constexpr std::uint64_t kBase = std::uint64_t{64} << 20;
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::uint64_t w = std::min<std::uint64_t>(cores, std::max<std::uint64_t>(1, n_tiles));
  if (const std::uint64_t available = available_memory(); available > 0) {
    const double per_tile = static_cast<double>(kBase) + static_cast<double>(entries_per_tile) * kBytesPerEntry;
    w = std::min<std::uint64_t>(
        w, static_cast<std::uint64_t>(std::floor(0.7 * static_cast<double>(available) / per_tile)));
  }
  return static_cast<unsigned>(std::max<std::uint64_t>(1, w));
}

}  // namespace tessera::cli
