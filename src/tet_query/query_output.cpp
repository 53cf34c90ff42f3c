// Rendering of query responses (spec tet.md §5.1–5.5): the JSON layouts (with f32 previews in
// f32 digits), the reduced `stats`/`plan` trees, the one-line `quiet` form and the `table` text.
#include "tessera/tet_query/query_output.hpp"

#include "tessera/core/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;
using codec::json::JsonWriter;

// Values of an f32 dataset's preview were widened from f32 exactly; print them with f32 digits.
void write_tree(JsonWriter& w, const Json& v, bool f32_array) {
  if (v.is_object()) {
    w.begin_object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      w.key(it.key());
      write_tree(w, it.value(), it.key() == "f32_preview");
    }
    w.end_object();
  } else if (v.is_array()) {
    w.begin_array();
    for (const auto& item : v) {
      if (f32_array && item.is_number_float()) w.value_f32(static_cast<float>(item.get<double>()));
      else write_tree(w, item, false);
    }
    w.end_array();
  } else {
    w.value(v);
  }
}

// ---- quiet ------------------------------------------------------------------------------------

std::string list_of(const Json& values, const std::function<std::string(const Json&)>& one, std::size_t max = 12) {
  std::string out = "[";
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < std::min(n, max); ++i) out += (i ? "," : "") + one(values[i]);
  if (n > max) out += ",…+" + std::to_string(n - max);
  return out + "]";
}

double as_double(const Json& v) {
  if (v.is_null()) return std::nan("");
  return v.get<double>();
}
std::string f_of(const Json& v) { return quiet_number(as_double(v)); }
std::string plain_of(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return f_of(v);
}

std::string shape_of(const Json& shape) {
  if (shape.empty()) return "0";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "×" : "") + std::to_string(shape[i].get<std::uint64_t>());
  return out;
}

std::string axes_of(const Json& axes) {
  std::string out = "[";
  for (std::size_t i = 0; i < axes.size(); ++i) out += (i ? "," : "") + axes[i].get<std::string>();
  return out + "]";
}

const Json* field(const Json& ex, const std::string& key) {
  auto it = ex.find(key);
  return it == ex.end() ? nullptr : &*it;
}

const Json& need(const Json& ex, const std::string& key) {
  if (const Json* f = field(ex, key)) return *f;
  throw UsageError("quiet output: missing execution." + key + " after --execute");
}

// The transform's computed statistics: `mean=… std=…` (scalar) or with lists (partial).
std::string transform_stats(const Json& ex, const std::string& method, bool scalar) {
  std::vector<std::string> names;
  if (method == "zscore") names = {"mean", "std"};
  else if (method == "minmax") names = {"min", "max"};
  else if (method == "center") names = {"mean"};
  else if (method == "scale") names = {"std"};
  else if (method == "l1") names = {"norm_l1"};
  else if (method == "l2") names = {"norm_l2"};
  else if (method == "softmax") names = {"max"};
  else names = {"min"};
  std::string out;
  for (const auto& n : names) {
    out += out.empty() ? "" : " ";
    out += n + "=" + (scalar ? f_of(need(ex, "operation_" + n)) : list_of(need(ex, "operation_reduced_" + n), f_of));
  }
  return out;
}

std::string warn_suffix(const Json& ex) {
  const Json* count = field(ex, "transform_div_by_zero_count");
  if (!count) return "";
  return " transform_div_by_zero_count=" + plain_of(*count) +
         " transform_div_by_zero_indices=" + list_of(need(ex, "transform_div_by_zero_indices"), plain_of, SIZE_MAX);
}

std::string op_extra(const std::string& key, const Json& body) {
  if (key == "quantile") return " q=" + f_of(body["q"]);
  if (key == "histogram") {
    std::string s = " bins=" + plain_of(body["bins"]);
    if (!body["min"].is_null()) s += " min=" + f_of(body["min"]);
    if (!body["max"].is_null()) s += " max=" + f_of(body["max"]);
    return s;
  }
  if (key == "null_count" && !body["fill"].is_null()) return " fill=" + f_of(body["fill"]);
  return "";
}

// Scalar `{name}={value}` of §5.4.
std::pair<std::string, std::string> scalar_display(const std::string& key, const Json& body, const Json& ex) {
  if (key == "count") return {"count", plain_of(need(ex, "operation_element_count"))};
  if (key == "all_finite" || key == "any_nan" || key == "any_inf") return {key, plain_of(need(ex, "operation_" + key))};
  if (key == "arg_min") return {"argmin_index", plain_of(need(ex, "operation_argmin_index"))};
  if (key == "arg_max") return {"argmax_index", plain_of(need(ex, "operation_argmax_index"))};
  if (key == "histogram")
    return {"histogram",
            "bins=" + plain_of(body["bins"]) + " counts=" + list_of(need(ex, "operation_histogram_counts"), f_of)};
  if (key == "transform") return {"transform", transform_stats(ex, body["method"].get<std::string>(), true)};
  return {key, f_of(need(ex, "operation_" + key))};
}

std::string partial_values(const std::string& key, const Json& body, const Json& ex) {
  if (key == "arg_min") return list_of(need(ex, "operation_reduced_argmin"), plain_of);
  if (key == "arg_max") return list_of(need(ex, "operation_reduced_argmax"), plain_of);
  if (key == "all_finite" || key == "any_nan" || key == "any_inf")
    return list_of(need(ex, "operation_reduced_" + key), plain_of);
  if (key == "histogram") return list_of(need(ex, "operation_reduced_histogram_counts"), f_of);
  if (key == "transform") return transform_stats(ex, body["method"].get<std::string>(), false);
  return list_of(need(ex, "operation_reduced_" + key), f_of);
}

// The echoed operation's key and body.
std::pair<std::string, const Json*> op_of(const Json& t) {
  const Json& op = t["operation"];
  auto it = op.begin();
  return {it.key(), &it.value()};
}

const char* const kPreviewDtypes[] = {"f32", "f64", "i32", "i64", "u8", "u16", "i16", "u32", "u64", "f16"};

std::string quiet_line(const Json& t) {
  const std::string prefix = "dataset=" + t["dataset"].get<std::string>();
  if (t.contains("catalog") && !t["catalog"]["matched"].get<bool>()) {
    const Json& names = t["catalog"]["available_datasets"];
    return prefix + " status=not_found available=" +
           list_of(
               names, [](const Json& n) { return n.get<std::string>(); }, 8);
  }
  if (t.contains("execution")) {
    const Json& ex = t["execution"];
    if (!t["operation"].is_null()) {
      const auto [key, body_ptr] = op_of(t);
      const Json& body = *body_ptr;
      const std::string memory = " memory_strategy=" + ex["memory_strategy"].get<std::string>();
      const std::string elements = " elements=" + plain_of(need(ex, "operation_element_count"));
      if (key == "covariance" || key == "correlation")
        return prefix + " status=ok op=" + key + " axes=" + axes_of(body["axes"]) +
               " order=" + plain_of(need(ex, "operation_" + key + "_order")) +
               " matrix=" + list_of(need(ex, "operation_" + key), f_of) + elements + memory;
      if (body["axes"].empty()) {
        const auto [name, value] = scalar_display(key, body, ex);
        return prefix + " status=ok op=" + key + op_extra(key, body) + " " + name + "=" + value + elements + memory +
               warn_suffix(ex);
      }
      std::string line = prefix + " status=ok op=" + key + " axes=" + axes_of(body["axes"]) + op_extra(key, body);
      if (const Json* shape = field(ex, "operation_reduced_shape")) line += " reduced_shape=" + shape_of(*shape);
      return line + " values=" + partial_values(key, body, ex) + elements + memory + warn_suffix(ex);
    }
    std::string line = prefix + " status=preview read_bytes=" + plain_of(ex["total_bytes_read_from_disk"]);
    if (const Json* path = field(ex, "spill_f32_path")) {
      line += " spill=" + path->get<std::string>();
      if (const Json* bytes = field(ex, "spill_f32_bytes")) line += " spill_bytes=" + plain_of(*bytes);
    }
    line += " memory_strategy=" + ex["memory_strategy"].get<std::string>();
    for (const char* d : kPreviewDtypes) {
      const Json& p = ex[std::string(d) + "_preview"];
      if (p.empty()) continue;
      line += " preview=" + std::to_string(p.size()) + " " + d;
      if (ex[std::string(d) + "_preview_truncated"].get<bool>()) line += " truncated=true";
      Json sample = Json::array();
      for (std::size_t i = 0; i < std::min<std::size_t>(6, p.size()); ++i) {
        if (std::string(d) == "f16") sample.push_back(static_cast<double>(half_to_float(p[i].get<std::uint16_t>())));
        else sample.push_back(p[i]);
      }
      return line + " sample=" + list_of(sample, plain_of);
    }
    return line + " preview=empty";
  }
  if (t.contains("read_plan")) {
    const Json& rp = t["read_plan"];
    return prefix + " status=planned chunks=" + plain_of(rp["chunk_count"]) +
           " elements=" + plain_of(rp["logical_f32_element_count"]) +
           " stored_bytes=" + plain_of(rp["total_stored_bytes"]) +
           " logical_shape=" + shape_of(rp["logical_selection_shape"]) +
           " touch_policy=" + rp["chunk_touch_policy"].get<std::string>();
  }
  std::string line = prefix + " validated";
  if (!t["selection_axes"].is_null()) line += " selection_rank=" + plain_of(t["selection_axes"]);
  return line + " hint=pass --tet PATH for catalog and read_plan";
}

// ---- stats / plan ------------------------------------------------------------------------------

Json reduced_tree(const Json& t, bool with_execution) {
  Json out = Json::object();
  out["status"] = t["status"];
  out["accepted"] = t["accepted"];
  out["dataset"] = t["dataset"];
  for (const char* k : {"layout_version", "selection_axes", "operation"})
    if (!t[k].is_null()) out[k] = t[k];
  out["message"] = t["message"];
  if (t.contains("tet_file")) out["tet_file"] = t["tet_file"];
  if (t.contains("catalog")) {
    Json c = Json::object();
    for (const char* k : {"matched", "dataset_index", "dtype", "shape", "available_datasets"})
      if (t["catalog"].contains(k)) c[k] = t["catalog"][k];
    out["catalog"] = c;
  }
  if (t.contains("read_plan")) {
    Json r = Json::object();
    for (const char* k : {"chunk_touch_policy", "chunk_count", "total_stored_bytes", "logical_selection_shape",
                          "logical_f32_element_count"})
      r[k] = t["read_plan"][k];
    out["read_plan"] = r;
  }
  if (with_execution && t.contains("execution")) {
    std::map<std::string, Json> sorted;
    for (auto it = t["execution"].begin(); it != t["execution"].end(); ++it) {
      const std::string& k = it.key();
      if (k.size() > 8 && (k.ends_with("_preview") || k.ends_with("_preview_truncated"))) continue;
      sorted[k] = it.value();
    }
    Json e = Json::object();
    for (auto& [k, v] : sorted) e[k] = v;
    out["execution"] = e;
  }
  return out;
}

// ---- table -------------------------------------------------------------------------------------

void kv_section(std::string& out, const std::string& title,
                const std::vector<std::pair<std::string, std::string>>& rows) {
  if (rows.empty()) return;
  std::size_t w = 4;
  for (const auto& r : rows) w = std::max(w, utf8_width(r.first));
  out += title + ":\n";
  for (const auto& [k, v] : rows) out += "  " + pad_right(k, w) + "  " + v + "\n";
  out += "\n";
}

void indexed_table(std::string& out, const std::vector<double>& values) {
  out += "  " + pad_left("#", 6) + "  value\n";
  for (std::size_t i = 0; i < values.size(); ++i)
    out += "  " + pad_left(std::to_string(i), 6) + "  " + quiet_number(values[i]) + "\n";
  out += "\n";
}

void preview_table(std::string& out, const Json& ex, const Json& shape) {
  for (const char* d : {"f32", "f64", "i32", "u8"}) {
    const Json& p = ex[std::string(d) + "_preview"];
    if (p.empty()) continue;
    const bool truncated = ex[std::string(d) + "_preview_truncated"].get<bool>();
    out += "slice (" + std::string(d) + ", shape=" + shape_of(shape) + (truncated ? ", truncated" : "") + "):\n";
    std::vector<double> values;
    for (std::size_t i = 0; i < std::min<std::size_t>(p.size(), 16); ++i) values.push_back(as_double(p[i]));
    auto header = [&](std::size_t cols) {
      out += "        ";
      for (std::size_t c = 0; c < cols; ++c) out += "  " + pad_left("c" + std::to_string(c), 8);
      out += "\n";
    };
    if (shape.size() == 1) {
      const std::size_t cols = std::min<std::size_t>(shape[0].get<std::uint64_t>(), values.size());
      header(cols);
      out += "     r0 ";
      for (std::size_t c = 0; c < cols; ++c) out += "  " + pad_left(quiet_number(values[c]), 8);
      out += "\n";
    } else if (shape.size() == 2) {
      const auto rows = shape[0].get<std::uint64_t>(), cols = shape[1].get<std::uint64_t>();
      header(cols);
      for (std::uint64_t r = 0; r < rows; ++r) {
        out += "  " + pad_left("r" + std::to_string(r), 4) + " ";
        for (std::uint64_t c = 0; c < cols; ++c) {
          const std::uint64_t i = r * cols + c;
          out += "  " + pad_left(i < values.size() ? quiet_number(values[i]) : "—", 8);
        }
        out += "\n";
      }
    } else {
      out += "  (rank " + std::to_string(shape.size()) + " — linear index; use --preview to raise cap)\n";
      indexed_table(out, values);
    }
    if (truncated) out += "  … logical tensor continues beyond preview cap\n";
    out += "\n";
    return;
  }
}

std::string table_text(const Json& t) {
  std::string out;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"dataset", t["dataset"].get<std::string>()}, {"status", "planned"}, {"accepted", "true"}};
  if (!t["selection_axes"].is_null()) rows.emplace_back("selection_axes", plain_of(t["selection_axes"]));
  if (!t["operation"].is_null()) {
    const auto [key, body_ptr] = op_of(t);
    const Json& body = *body_ptr;
    rows.emplace_back("operation", body["axes"].empty() ? key + " (scalar)" : key + " axes=" + axes_of(body["axes"]));
  }
  if (t.contains("tet_file")) rows.emplace_back("tet_file", t["tet_file"].get<std::string>());
  rows.emplace_back("message", truncate_utf8(t["message"].get<std::string>(), 72));
  kv_section(out, "query", rows);

  if (t.contains("catalog") && !t["catalog"]["matched"].get<bool>()) {
    kv_section(out, "catalog", {{"matched", "false"}});
    const Json& names = t["catalog"]["available_datasets"];
    if (names.empty()) {
      out += "datasets:\n  (none)\n\n";
      return out;
    }
    out += "datasets:\n  " + pad_left("#", 3) + "  name\n";
    for (std::size_t i = 0; i < names.size(); ++i)
      out += "  " + pad_left(std::to_string(i), 3) + "  " + truncate_utf8(names[i].get<std::string>(), 40) + "\n";
    out += "\n";
    return out;
  }
  if (!t.contains("read_plan")) return out;
  const Json& rp = t["read_plan"];
  kv_section(out, "read_plan",
             {{"chunk_touch_policy", rp["chunk_touch_policy"].get<std::string>()},
              {"chunk_count", plain_of(rp["chunk_count"])},
              {"total_stored_bytes", plain_of(rp["total_stored_bytes"])},
              {"logical_shape", shape_of(rp["logical_selection_shape"])},
              {"logical_elements", plain_of(rp["logical_f32_element_count"])}});
  if (!t.contains("execution")) return out;
  const Json& ex = t["execution"];
  std::vector<std::pair<std::string, std::string>> io = {{"bytes_read", plain_of(ex["total_bytes_read_from_disk"])}};
  io.emplace_back("memory_strategy", ex["memory_strategy"].get<std::string>());
  io.emplace_back("memory_budget_bytes", plain_of(ex["memory_budget_bytes"]));
  if (const Json* p = field(ex, "spill_f32_path")) io.emplace_back("spill_path", p->get<std::string>());
  if (const Json* b = field(ex, "spill_f32_bytes")) io.emplace_back("spill_bytes", plain_of(*b));
  if (const Json* r = field(ex, "io_regime")) io.emplace_back("io_regime", r->get<std::string>());
  kv_section(out, "execution", io);

  if (!t["operation"].is_null()) {
    const auto [key, body_ptr] = op_of(t);
    const Json& body = *body_ptr;
    if (key == "covariance" || key == "correlation")
      throw UsageError("table format: covariance/correlation matrices use --format stats or full");
    if (body["axes"].empty()) {
      const auto [name, value] = scalar_display(key, body, ex);
      kv_section(out, "result", {{name, value}, {"elements", plain_of(need(ex, "operation_element_count"))}});
    } else {
      if (key == "all_finite" || key == "any_nan" || key == "any_inf")
        throw UsageError("table format: boolean partial reductions use --format quiet or stats");
      if (key == "arg_min" || key == "arg_max")
        throw UsageError("table format: " + key + " partial values use --format quiet or stats");
      if (key == "transform")
        throw UsageError("table format: transforms use the slice preview (see f32_preview / f64_preview)");
      const Json& values =
          need(ex, key == "histogram" ? "operation_reduced_histogram_counts" : "operation_reduced_" + key);
      std::vector<double> v;
      for (const auto& x : values) v.push_back(as_double(x));
      out += "result";
      if (const Json* shape = field(ex, "operation_reduced_shape")) out += " (reduced_shape=" + shape_of(*shape) + ")";
      out += ":\n";
      indexed_table(out, v);
      out += "  " + pad_left("elements", 12) + "  " + plain_of(need(ex, "operation_element_count")) + "\n\n";
    }
  }
  preview_table(out, ex, rp["logical_selection_shape"]);
  return out;
}

}  // namespace

std::optional<QueryOutputFormat> query_output_format_from_name(std::string_view name) noexcept {
  if (name == "full") return QueryOutputFormat::Full;
  if (name == "json") return QueryOutputFormat::Json;
  if (name == "stats") return QueryOutputFormat::Stats;
  if (name == "plan") return QueryOutputFormat::Plan;
  if (name == "quiet") return QueryOutputFormat::Quiet;
  if (name == "table") return QueryOutputFormat::Table;
  return std::nullopt;
}

std::string quiet_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::vector<char> buf(400);
  const int n = std::snprintf(buf.data(), buf.size(), "%.6f", v);
  std::string s(buf.data(), static_cast<std::size_t>(std::max(n, 0)));
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  return s;
}

std::string dump_query_json(const Json& tree, bool pretty) {
  std::string out;
  JsonWriter w(out, pretty ? codec::json::DumpOptions::tet_pretty() : codec::json::DumpOptions::tet_compact());
  write_tree(w, tree, false);
  return out;
}

std::string render_query_response(const QueryResponse& response, QueryOutputFormat format) {
  const Json& t = response.tree;
  switch (format) {
    case QueryOutputFormat::Full: return dump_query_json(t, true);
    case QueryOutputFormat::Json: return dump_query_json(t, false);
    case QueryOutputFormat::Stats: return dump_query_json(reduced_tree(t, true), true);
    case QueryOutputFormat::Plan: return dump_query_json(reduced_tree(t, false), true);
    case QueryOutputFormat::Quiet: return quiet_line(t);
    case QueryOutputFormat::Table: return table_text(t);
  }
  return {};
}

}  // namespace tessera::tet
