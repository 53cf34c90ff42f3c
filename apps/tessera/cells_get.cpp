// `tessera cells get PATH [CELLS] [--where JSON] [--json] [--names] [--genes NAMES] [--obs COLS]
// [--cache-dir DIR] [--no-verify]` (spec deltacells.md §9.5): prints the CSR batch of the requested
// cells (those of CELLS, of --where's obs filter, or the listed ones that meet it), or only
// the nonzeros of the genes named by --genes. CELLS is a
// comma-separated list of indices and half-open ranges `a:b`; a malformed list is a usage error
// (exit 2), an index outside the dataset a runtime error naming the valid range (exit 1).
#include <algorithm>
#include <charconv>
#include <memory>
#include <string>
#include <vector>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/obs_filter.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

struct GetArgs {
  std::string path;
  std::string cells;
  bool json = false;
  bool names = false;
  std::string obs;
  std::string cache_dir;
  std::string genes;
  std::string where;
  bool no_verify = false;
};

// The stored columns of `genes` (names from var_names.txt), ascending. UsageError naming every
// unknown gene.
std::vector<std::int64_t> gene_columns(const std::vector<std::string>& var_names,
                                       const std::vector<std::string>& genes) {
  if (var_names.empty()) throw UsageError("--genes: this dataset has no var_names.txt");
  std::vector<std::int64_t> columns;
  std::vector<std::string> unknown;
  for (const auto& gene : genes) {
    const auto it = std::find(var_names.begin(), var_names.end(), gene);
    if (it == var_names.end()) unknown.push_back(gene);
    else columns.push_back(it - var_names.begin());
  }
  if (!unknown.empty())
    throw UsageError("--genes: not in the dataset's var_names: " + cells::python_list_repr(unknown));
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  return columns;
}

// The batch of `cells` with only the nonzeros of the stored columns `columns` (ascending), which
// keep their stored numbers.
cells::SparseBatch only_columns(cells::Dataset& ds, const std::vector<std::int64_t>& cells,
                                const std::vector<std::int64_t>& columns) {
  cells::SparseBatch b;
  ds.get_batch(cells, columns, cells::Values::Int32, b);
  for (auto& j : b.indices) j = static_cast<std::int32_t>(columns[static_cast<std::size_t>(j)]);
  b.n_genes = ds.n_genes();
  return b;
}

std::int64_t parse_int(std::string_view s, const std::string& whole) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw CLI::ValidationError(
        "CELLS", "malformed cell list '" + whole + "' (expected indices and ranges a:b, comma-separated)");
  return v;
}

std::vector<std::int64_t> parse_cells(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      out.push_back(parse_int(item, text));
    } else {
      const std::int64_t a = parse_int(item.substr(0, colon), text), b = parse_int(item.substr(colon + 1), text);
      if (a > b) throw CLI::ValidationError("CELLS", "range " + std::string(item) + " ends before it starts");
      if (b - a > (std::int64_t{1} << 32))
        throw CLI::ValidationError("CELLS", "range " + std::string(item) + " is too long");
      for (std::int64_t c = a; c < b; ++c) out.push_back(c);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The cells meeting `where`: with a CELLS list, the listed ones that meet it, in listed order
// (repeats kept); without, every one that does, ascending.
std::vector<std::int64_t> select_where(const std::vector<std::int64_t>& listed, bool has_list, cells::ObsStore& store,
                                       std::uint64_t n_cells, const std::vector<cells::ObsCondition>& where) {
  for (const auto c : listed)  // an index outside the dataset is an error, not a cell the filter drops
    if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
      throw UsageError("cell " + std::to_string(c) + " outside the valid range [0, " + std::to_string(n_cells) + ")");
  std::vector<std::int64_t> chosen = cells::filter_cells(store, static_cast<std::int64_t>(n_cells), where);
  if (!has_list) return chosen;
  std::vector<std::int64_t> out;
  for (const auto c : listed)
    if (std::binary_search(chosen.begin(), chosen.end(), c)) out.push_back(c);
  return out;
}

}  // namespace

void register_cells_get(CLI::App& cells, int& rc) {
  auto a = std::make_shared<GetArgs>();
  CLI::App* cmd = cells.add_subcommand("get", "Print the nonzeros of some cells of a deltacells dataset");
  cmd->add_option("PATH", a->path, "dataset directory (local path, file://, http(s)://, s3:// or gs:// URI)")
      ->required();
  cmd->add_option("CELLS", a->cells, "comma-separated cell indices and ranges a:b, e.g. 9,0,4,4,3 or 0:10");
  cmd->add_flag("--json", a->json, "one JSON line {\"indptr\", \"indices\", \"values\"}");
  cmd->add_flag("--names", a->names, "print gene names from var_names.txt instead of column numbers");
  CLI::Option* obs = cmd->add_option("--obs", a->obs, "obs columns to print (comma-separated)");
  cmd->add_option("--cache-dir", a->cache_dir, "obs cache root");
  cmd->add_option("--genes", a->genes, "only the nonzeros of these genes (names from var_names.txt, comma-separated)");
  cmd->add_option("--where", a->where,
                  "only cells whose obs values meet this JSON document, e.g. '{\"cell_type\": [\"B\", \"T\"]}'");
  cmd->add_flag("--no-verify", a->no_verify, "skip the CRC check of fetched tiles");
  cmd->callback([a, &rc, obs] {
    if (a->cells.empty() && a->where.empty()) throw CLI::ValidationError("CELLS", "give CELLS, --where or both");
    std::vector<std::int64_t> cells = a->cells.empty() ? std::vector<std::int64_t>{} : parse_cells(a->cells);
    const auto where = a->where.empty() ? std::vector<cells::ObsCondition>{} : cells::parse_obs_where(a->where);
    std::shared_ptr<cells::Dataset> ds = cells::Dataset::open(a->path, {.verify_crc = !a->no_verify});
    // --where and --obs read the obs through the cache (columns localized first, with a warning).
    std::unique_ptr<cells::ObsStore> store;
    if (obs->count() > 0 || !a->where.empty()) {
      if (!ds->manifest().has_obs)
        throw UsageError(std::string(obs->count() > 0 ? "--obs" : "--where") + ": this dataset has no obs");
      store = std::make_unique<cells::ObsStore>(
          std::shared_ptr<const io::Store>(ds, &ds->store()), ds->manifest(),
          cells::ObsOpenOptions{.cache_dir = a->cache_dir,
                                .warn = [](const std::string& w) { write_stream(stderr, "warning: " + w + "\n"); },
                                .threads = 8});
    }
    if (!a->where.empty()) cells = select_where(cells, !a->cells.empty(), *store, ds->n_cells(), where);
    cells::SparseBatch b = a->genes.empty()
                               ? ds->get_batch(cells, cells::Values::Int32)
                               : only_columns(*ds, cells, gene_columns(ds->var_names(), split_column_names(a->genes)));
    std::vector<cells::ObsTakeColumn> obs_columns;
    std::vector<columnar::ColumnType> stored;
    if (obs->count() > 0) {
      const auto names = split_column_names(a->obs);
      obs_columns = store->take(cells, names);
      for (const auto& c : obs_columns) stored.push_back(store->schema().column(c.name).type);
    }
    const std::vector<std::string>* names = nullptr;
    if (a->names) {
      names = &ds->var_names();
      if (names->empty()) throw UsageError("--names: this dataset has no var_names.txt");
    }
    std::string out;
    if (a->json) {
      codec::json::JsonWriter w(out, codec::json::DumpOptions::python_default());
      w.begin_object();
      if (!a->where.empty()) {  // the cells --where chose, which the caller cannot know otherwise
        w.key("cells").begin_array();
        for (const auto c : cells) w.value(c);
        w.end_array();
      }
      w.key("indptr").begin_array();
      for (const auto v : b.indptr) w.value(v);
      w.end_array().key("indices").begin_array();
      for (std::size_t j = 0; j < b.indices.size(); ++j) {
        if (names) w.value((*names)[static_cast<std::size_t>(b.indices[j])]);
        else w.value(b.indices[j]);
      }
      w.end_array().key("values").begin_array();
      for (const auto v : b.values_int32) w.value(v);
      w.end_array();
      if (!obs_columns.empty()) {
        w.key("obs").begin_object();
        for (std::size_t k = 0; k < obs_columns.size(); ++k) {
          w.key(obs_columns[k].name).begin_array();
          for (std::size_t i = 0; i < cells.size(); ++i) obs_json_value(w, obs_columns[k], i, stored[k]);
          w.end_array();
        }
        w.end_object();
      }
      w.end_object();
      out += "\n";
    } else {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        out += std::to_string(cells[i]) + "\t" + std::to_string(b.indptr[i + 1] - b.indptr[i]) + "\t";
        for (std::size_t k = 0; k < obs_columns.size(); ++k)
          out += obs_columns[k].name + "=" + obs_text_value(obs_columns[k], i, stored[k]) + "\t";
        for (auto j = b.indptr[i]; j < b.indptr[i + 1]; ++j) {
          if (j > b.indptr[i]) out += ' ';
          const auto gene = static_cast<std::size_t>(b.indices[static_cast<std::size_t>(j)]);
          out += (names ? (*names)[gene] : std::to_string(gene)) + ":" +
                 std::to_string(b.values_int32[static_cast<std::size_t>(j)]);
        }
        out += '\n';
      }
    }
    write_stream(stdout, out);
    rc = 0;
  });
}

}  // namespace tessera::cli
