// Text of `cells info` and the checks of `cells verify` (spec deltacells.md §9.2, §9.3, §9.8).
#include "tessera/cells/report.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "tessera/cells/gene_files.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_shards.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/feature.hpp"

namespace tessera::cells {
namespace {

using codec::json::DumpOptions;
using codec::json::Json;
using codec::json::JsonWriter;

void append_utf8_repr(std::string& out, std::string_view s, char quote) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // Decode one code point (the input is valid UTF-8: it came from a JSON parser).
      const std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      std::uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
      for (std::size_t k = 1; k < len && i + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      if ((cp >= 0x80 && cp <= 0xa0) || cp == 0xad) {
        std::snprintf(buf, sizeof buf, "\\x%02x", cp);
        out += buf;
      } else if (cp == 0x2028 || cp == 0x2029) {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        out += buf;
      } else {
        out.append(s.substr(i, len));
      }
      i += len;
    }
  }
}

void repr_into(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: out += "None"; break;
    case Json::value_t::boolean: out += v.get<bool>() ? "True" : "False"; break;
    case Json::value_t::number_integer: out += std::to_string(v.get<std::int64_t>()); break;
    case Json::value_t::number_unsigned: out += std::to_string(v.get<std::uint64_t>()); break;
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) out += "nan";
      else if (std::isinf(d)) out += d < 0 ? "-inf" : "inf";
      else out += codec::json::format_f64(d, codec::json::FloatStyle::Python);
      break;
    }
    case Json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
      out += quote;
      append_utf8_repr(out, s, quote);
      out += quote;
      break;
    }
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& e : v) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, e);
      }
      out += ']';
      break;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, Json(k));
        out += ": ";
        repr_into(out, e);
      }
      out += '}';
      break;
    }
    default: out += "None"; break;
  }
}

std::string label(const char* name) {
  std::string s(name);
  s.resize(16, ' ');
  return s;
}

// `<C> columns (<kind> <count>, …) in <S> parquet shard(s) of up to <K> tiles, <MB> MB; <L>
// localized in <root>` from obs/schema.json and the cache directory.
// What `info` says about the obs sidecar, in text and in JSON.
struct ObsSummary {
  std::uint64_t columns = 0;
  std::map<std::string, std::uint64_t> kinds;  // alphabetical
  std::uint64_t shards = 0, tiles_per_file = 0, bytes = 0, localized = 0;
  std::string cache_root;
};

ObsSummary summarize_obs(Dataset& ds, const InfoOptions& o) {
  const Manifest& m = ds.manifest();
  const ObsSchema schema = read_obs_schema(ds.store()).schema;
  ObsSummary out;
  out.cache_root = resolve_obs_cache_root(o.cache_dir.value_or(""));
  for (const auto& c : schema.columns) {
    ++out.kinds[std::string(obs_kind_name(c.kind))];
    std::error_code ec;
    out.localized += std::filesystem::exists(
        std::filesystem::path(out.cache_root) / m.obs_fingerprint / "obs" / (quote_column_file_name(c.name) + ".arrow"),
        ec);
  }
  out.columns = schema.columns.size();
  for (const auto b : m.obs_shard_bytes) out.bytes += b;
  out.shards = m.obs_shard_bytes.size();
  out.tiles_per_file = m.obs_tiles_per_file;
  return out;
}

std::string obs_summary_text(const ObsSummary& obs) {
  std::string s = std::to_string(obs.columns) + " columns (";
  bool first = true;
  for (const auto& [kind, count] : obs.kinds) {
    if (!first) s += ", ";
    first = false;
    s += kind + " " + std::to_string(count);
  }
  s += ") in " + std::to_string(obs.shards) + " parquet shard(s) of up to " + std::to_string(obs.tiles_per_file) +
       " tiles, " + format_fixed(static_cast<double>(obs.bytes) / 1e6, 1) + " MB; " + std::to_string(obs.localized) +
       " localized in " + obs.cache_root;
  return s;
}

std::uint64_t total(const std::vector<std::uint64_t>& values) {
  std::uint64_t sum = 0;
  for (const auto v : values) sum += v;
  return sum;
}

}  // namespace

std::string python_repr(const Json& value) {
  std::string out;
  repr_into(out, value);
  return out;
}

std::string python_list_repr(const std::vector<std::string>& items) {
  Json list = Json::array();
  for (const auto& s : items) list.push_back(s);
  return python_repr(list);
}

std::string format_fixed(double v, int decimals) {
  // glibc's printf rounds the exact binary value to nearest, ties to even, as Python does.
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string render_info(Dataset& ds, const InfoOptions& o) {
  const Manifest& m = ds.manifest();
  const std::uint64_t bytes = total(m.tile_bytes), nnz = total(m.tile_nnz);
  const double cells = static_cast<double>(m.n_cells);
  std::string s;
  // A remote dataset is shown by its URL; a local one as `local:` + its absolute path.
  s += label("dataset:") + (o.display_path.find("://") == std::string::npos ? "local:" : "") + o.display_path + "\n";
  s += label("cells x genes:") + std::to_string(m.n_cells) + " x " + std::to_string(m.n_genes) + "\n";
  s += label("tiles:") + std::to_string(m.n_tiles()) + " of " + std::to_string(m.tile_size) +
       " cells (last: " + std::to_string(m.tile_cells.back()) + ")\n";
  s += label("nonzeros:") + std::to_string(nnz) + " (" + format_fixed(static_cast<double>(nnz) / cells, 0) +
       " per cell)\n";
  s += label("size:") + format_fixed(static_cast<double>(bytes) / 1e6, 1) +
       " MB = " + format_fixed(static_cast<double>(bytes) / cells / 1e3, 2) + " kB per cell, " +
       (nnz == 0 ? std::string("n/a") : format_fixed(static_cast<double>(bytes) / static_cast<double>(nnz), 3)) +
       " bytes per nonzero\n";
  s += label("layout:") + std::to_string(m.n_chunks) + " chunks per tile, zstd level " + std::to_string(m.zstd_level) +
       "\n";
  s += label("gene order:") + (m.has_gene_order ? "stored (gene_order.npy)" : "as in the source") +
       "; var names: " + (m.has_var_names ? "yes" : "no") + "\n";
  s += label("obs:") + (m.has_obs ? obs_summary_text(summarize_obs(ds, o)) : std::string("none")) + "\n";
  s += label("var table:") + (m.has_var_table ? "yes" : "no") + "\n";
  if (!m.metadata.empty()) s += label("metadata:") + python_repr(m.metadata) + "\n";
  s += label("format:") + "deltacells-dataset version " + std::to_string(m.version) + "\n";
  return s;
}

std::string render_info_json(Dataset& ds, const InfoOptions& o) {
  const Manifest& m = ds.manifest();
  std::string out;
  JsonWriter w(out, DumpOptions::python_pretty());
  const auto numbers = [&](std::string_view name, const std::vector<std::uint64_t>& values) {
    w.key(name).begin_array();
    for (const auto v : values) w.value(v);
    w.end_array();
  };
  w.begin_object();
  w.key("path").value(o.display_path);
  w.key("format").value("deltacells-dataset");
  w.key("version").value(m.version);
  w.key("n_cells").value(m.n_cells);
  w.key("n_genes").value(m.n_genes);
  w.key("tile_size").value(m.tile_size);
  w.key("n_tiles").value(m.n_tiles());
  w.key("nonzeros").value(total(m.tile_nnz));
  w.key("bytes").value(total(m.tile_bytes));
  numbers("tile_cells", m.tile_cells);
  numbers("tile_nnz", m.tile_nnz);
  numbers("tile_bytes", m.tile_bytes);
  w.key("n_chunks").value(m.n_chunks);
  w.key("zstd_level").value(m.zstd_level);
  w.key("has_gene_order").value(m.has_gene_order);
  w.key("has_var_names").value(m.has_var_names);
  w.key("has_var_table").value(m.has_var_table);
  w.key("obs");
  if (m.has_obs) {
    const ObsSummary obs = summarize_obs(ds, o);
    w.begin_object();
    w.key("columns").value(obs.columns);
    w.key("kinds").begin_object();
    for (const auto& [kind, count] : obs.kinds) w.key(kind).value(count);
    w.end_object();
    w.key("shards").value(obs.shards);
    w.key("tiles_per_file").value(obs.tiles_per_file);
    w.key("bytes").value(obs.bytes);
    w.key("localized").value(obs.localized);
    w.key("cache_root").value(obs.cache_root);
    w.end_object();
  } else {
    w.value(nullptr);
  }
  w.key("metadata").value(m.metadata.empty() ? Json::object() : m.metadata);
  w.end_object();
  return out + "\n";
}

VerifyResult verify_dataset(Dataset& ds, const VerifyOptions& o) {
  const Manifest& m = ds.manifest();
  const auto warn = [&](const std::string& w) {
    if (o.warning) o.warning(w);
  };
  if (!m.unknown_keys.empty()) {
    std::string keys;
    for (const auto& k : m.unknown_keys) keys += (keys.empty() ? "" : ", ") + k;
    warn("manifest.json has keys outside the format (" + keys +
         "); tessera ignores them, the Python reference would refuse this dataset");
  }
  const std::uint64_t n = m.n_tiles();
  for (std::uint64_t t = 0; t < n; ++t) {
    const std::shared_ptr<const Tile> tile = ds.get_tile(t);
    tile->check_decodes({.threads = o.threads == 0 ? 1 : o.threads});
    if (o.progress && (t == 0 || (t + 1) % 50 == 0 || t + 1 == n))
      o.progress("verified " + std::to_string(t + 1) + "/" + std::to_string(n) + " tiles");
  }
  ds.gene_order();
  if (m.has_var_names) {
    ds.var_names();
    const auto text = ds.store().get("var_names.txt");
    if (text && splitlines_differs({reinterpret_cast<const char*>(text->data()), text->size()}))
      warn(
          "var_names.txt holds line boundaries other than \\n; the Python reference (splitlines) would read "
          "different names");
  }
  if (m.has_var_table) {
    const auto var = ds.store().open("var.parquet");
    if (!var)
      throw FormatError("var.parquet: is missing (the manifest says the dataset has a var table) (P8)", "var.parquet");
    (void)read_var_parquet(*var, m.n_genes);
  }
  VerifyResult result{n, m.n_cells, false, 0};
  if (m.has_obs) {
    try {
      verify_obs(ds.store(), m);
    } catch (const FeatureUnavailable&) {
      throw;  // this build cannot read the obs sidecar (Parquet): no verdict about the dataset
    } catch (const Error& e) {
      throw ObsVerifyError(e.what(), e.path(), e.structure());
    }
    result.obs_verified = true;
    result.obs_shards = m.obs_shard_bytes.size();
  }
  return result;
}

}  // namespace tessera::cells
