// `tessera cells obs info|localize` (spec deltacells.md §9.6, §9.7) and the obs value printing
// `tessera cells get --obs` shares (§9.5).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

using columnar::ColumnType;

struct ObsArgs {
  std::string path;
  std::string cache_dir;
  std::string columns;
  bool all = false;
  int threads = 8;
  bool json = false;
};

// Python's f-string padding counts code points, not bytes.
std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
std::string left(std::string_view s, std::size_t width) {
  std::string out(s);
  const std::size_t n = code_points(s);
  if (n < width) out.append(width - n, ' ');
  return out;
}
std::string right(std::string_view s, std::size_t width) {
  const std::size_t n = code_points(s);
  return (n < width ? std::string(width - n, ' ') : std::string()) + std::string(s);
}

struct OpenedObs {
  std::shared_ptr<cells::Dataset> dataset;
  std::unique_ptr<cells::ObsStore> obs;
};

// Opens the dataset's obs, or prints `this dataset has no obs` and returns no store (exit 1).
OpenedObs open_obs(const ObsArgs& a, int& rc) {
  OpenedObs o;
  o.dataset = cells::Dataset::open(a.path);
  if (!o.dataset->manifest().has_obs) {
    write_stream(stdout, "this dataset has no obs\n");
    rc = 1;
    return o;
  }
  o.obs = std::make_unique<cells::ObsStore>(std::shared_ptr<const io::Store>(o.dataset, &o.dataset->store()),
                                            o.dataset->manifest(),
                                            cells::ObsOpenOptions{.cache_dir = a.cache_dir, .warn = {}, .threads = 8});
  return o;
}

}  // namespace

std::vector<std::string> split_column_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) out.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

void obs_info(const ObsArgs& a, int& rc) {
  const OpenedObs opened = open_obs(a, rc);
  if (!opened.obs) return;
  cells::ObsStore* obs = opened.obs.get();
  const auto& schema = obs->schema();
  const auto nbytes = obs->column_nbytes();
  const auto local = obs->localized_columns();
  const double n_tiles = static_cast<double>(opened.dataset->n_tiles());
  if (a.json) {
    std::string out;
    codec::json::JsonWriter w(out, codec::json::DumpOptions::python_pretty());
    w.begin_object().key("cache").value(obs->cache_dir()).key("columns").begin_array();
    for (std::size_t i = 0; i < schema.columns.size(); ++i) {
      const auto& c = schema.columns[i];
      w.begin_object();
      w.key("name").value(c.name);
      w.key("kind").value(cells::obs_kind_name(c.kind));
      w.key("stored_as").value(columnar::column_type_name(c.type));
      w.key("categories");
      c.kind == cells::ObsKind::Category ? w.value(static_cast<std::uint64_t>(c.categories.size())) : w.value(nullptr);
      w.key("bytes_to_fetch").value(nbytes[i]);
      w.key("local").value(std::find(local.begin(), local.end(), c.name) != local.end());
      w.end_object();
    }
    w.end_array().end_object();
    write_stream(stdout, out + "\n");
    rc = 0;
    return;
  }
  std::string out = "cache: " + obs->cache_dir() + "\n";
  out += left("column", 40) + left("kind", 10) + left("stored as", 10) + right("categories", 11) +
         right("MB to fetch", 13) + right("per 100M cells", 16) + "  local\n";
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < schema.columns.size(); ++i) {
    const auto& c = schema.columns[i];
    total += nbytes[i];
    const bool is_local = std::find(local.begin(), local.end(), c.name) != local.end();
    const double mb = static_cast<double>(nbytes[i]) / 1e6;
    out += left(c.name, 40) + left(cells::obs_kind_name(c.kind), 10) + left(columnar::column_type_name(c.type), 10) +
           right(c.kind == cells::ObsKind::Category ? std::to_string(c.categories.size()) : "", 11) +
           right(cells::format_fixed(mb, 1), 13) + right(cells::format_fixed(mb / n_tiles * 10000, 0), 13) + " MB  " +
           (is_local ? "yes" : "") + "\n";
  }
  const double mb = static_cast<double>(total) / 1e6;
  out += left("(all columns)", 40) + std::string(31, ' ') + right(cells::format_fixed(mb, 1), 13) +
         right(cells::format_fixed(mb / n_tiles * 10000, 0), 13) + " MB\n";
  write_stream(stdout, out);
  rc = 0;
}

void obs_localize(const ObsArgs& a, bool columns_given, int& rc) {
  if (columns_given == a.all) {
    write_stream(stderr, "give exactly one of --columns a,b,c or --all\n");
    rc = 2;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const OpenedObs opened = open_obs(a, rc);
  if (!opened.obs) return;
  cells::ObsStore* obs = opened.obs.get();
  const int threads = a.threads < 1 ? 1 : a.threads;
  std::vector<std::string> fetched;
  if (a.all) {
    fetched = obs->localize_all(threads);
  } else {
    fetched = obs->localize(split_column_names(a.columns), threads);  // unknown names: UsageError
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_stream(stdout,
               (fetched.empty() ? std::string("already local") : "fetched " + cells::python_list_repr(fetched)) +
                   " in " + cells::format_fixed(secs, 1) + "s -> " + obs->cache_dir() + "\n");
  rc = 0;
}

}  // namespace

void register_cells_obs(CLI::App& cells, int& rc) {
  CLI::App* group = cells.add_subcommand("obs", "The obs sidecar of a deltacells dataset: info, localize");
  group->require_subcommand(1);
  auto a = std::make_shared<ObsArgs>();
  CLI::App* info = group->add_subcommand("info", "Obs columns, their size and whether they are in the local cache");
  info->add_option("PATH", a->path, "dataset directory (local path or file:// URI)")->required();
  info->add_option("--cache-dir", a->cache_dir, "obs cache root");
  info->add_flag(
      "--json", a->json,
      "the columns as one JSON object (cache, columns with name, kind, stored_as, categories, bytes_to_fetch, local)");
  info->callback([a, &rc] { obs_info(*a, rc); });

  CLI::App* localize = group->add_subcommand("localize", "Copy obs columns into the node-local Arrow cache");
  localize->add_option("PATH", a->path, "dataset directory (local path or file:// URI)")->required();
  CLI::Option* columns = localize->add_option("--columns", a->columns, "columns to localize (comma-separated)");
  localize->add_flag("--all", a->all, "localize every column");
  localize->add_option("--cache-dir", a->cache_dir, "obs cache root");
  localize->add_option("--threads", a->threads, "concurrent ranged reads (default 8)")->check(integer_at_least(0));
  localize->callback([a, &rc, columns] { obs_localize(*a, columns->count() > 0, rc); });
}

std::string obs_text_value(const cells::ObsTakeColumn& c, std::uint64_t row, columnar::ColumnType stored) {
  const columnar::Column& v = c.values;
  if (!v.is_valid(row)) return {};
  switch (c.kind) {
    case cells::ObsKind::Category: {
      const std::int64_t code = columnar::visit_value_type(
          v.type, [&](auto tag) { return static_cast<std::int64_t>(v.value<decltype(tag)>(row)); });
      return code < 0 ? std::string() : c.categories[static_cast<std::size_t>(code)];
    }
    case cells::ObsKind::Bool: return v.value<std::uint8_t>(row) ? "True" : "False";
    case cells::ObsKind::String: return std::string(v.string(row));
    case cells::ObsKind::Numeric: break;
  }
  return columnar::visit_value_type(v.type, [&](auto tag) -> std::string {
    using T = decltype(tag);
    const T x = v.value<T>(row);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return {};
      // A column with nulls comes back as float64: integers print as the integers they were.
      if (columnar::is_integer(stored)) {
        if (columnar::is_signed_integer(stored)) return std::to_string(static_cast<std::int64_t>(x));
        return std::to_string(static_cast<std::uint64_t>(x));
      }
      if constexpr (std::is_same_v<T, float>) return codec::json::format_f32(x, codec::json::FloatStyle::Python);
      else return codec::json::format_f64(x, codec::json::FloatStyle::Python);
    } else {
      return std::to_string(x);
    }
  });
}

void obs_json_value(codec::json::JsonWriter& w, const cells::ObsTakeColumn& c, std::uint64_t row,
                    columnar::ColumnType stored) {
  const columnar::Column& v = c.values;
  const std::string text = obs_text_value(c, row, stored);
  if (!v.is_valid(row) || (c.kind != cells::ObsKind::String && text.empty())) {
    w.value(nullptr);
    return;
  }
  switch (c.kind) {
    case cells::ObsKind::Category:
    case cells::ObsKind::String: w.value(text); return;
    case cells::ObsKind::Bool: w.value(v.value<std::uint8_t>(row) != 0); return;
    case cells::ObsKind::Numeric: break;
  }
  columnar::visit_value_type(v.type, [&](auto tag) {
    using T = decltype(tag);
    const T x = v.value<T>(row);
    if constexpr (std::is_floating_point_v<T>) {
      if (columnar::is_signed_integer(stored)) w.value(static_cast<std::int64_t>(x));
      else if (columnar::is_integer(stored)) w.value(static_cast<std::uint64_t>(x));
      else if constexpr (std::is_same_v<T, float>) w.value_f32(x);
      else w.value(static_cast<double>(x));
    } else {
      w.value(x);
    }
  });
}

}  // namespace tessera::cli
