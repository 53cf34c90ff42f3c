// The TOML front-end of query documents (spec tet.md §3.1) and the flat wire form documents are
// re-serialized in (§6.5). TOML becomes the JSON tree the JSON rules read: integers → numbers,
// datetimes → strings, tables → objects, arrays of tables → arrays.
#include <algorithm>
#include <sstream>
#include <vector>

#include <toml++/toml.h>

#include "tessera/core/error.hpp"
#include "tessera/tet_query/query_document.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;

template <typename T>
std::string streamed(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

Json convert(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: {
      Json out = Json::object();
      for (const auto& [k, v] : *node.as_table()) out[std::string(k.str())] = convert(v);
      return out;
    }
    case toml::node_type::array: {
      Json out = Json::array();
      for (const auto& v : *node.as_array()) out.push_back(convert(v));
      return out;
    }
    case toml::node_type::string: return Json(node.as_string()->get());
    case toml::node_type::integer: {
      const std::int64_t v = node.as_integer()->get();
      return v >= 0 ? Json(static_cast<std::uint64_t>(v)) : Json(v);
    }
    case toml::node_type::floating_point: return Json(node.as_floating_point()->get());
    case toml::node_type::boolean: return Json(node.as_boolean()->get());
    case toml::node_type::date: return Json(streamed(node.as_date()->get()));
    case toml::node_type::time: return Json(streamed(node.as_time()->get()));
    case toml::node_type::date_time: return Json(streamed(node.as_date_time()->get()));
    default: return Json(nullptr);
  }
}

Json axes_json(const std::vector<std::string>& axes) {
  Json out = Json::array();
  for (const auto& a : axes) out.push_back(a);
  return out;
}

Json operation_wire(const QueryOperation& op) {
  Json body = Json::object();
  switch (op.op) {
    case QueryOp::Quantile:
      body["q"] = op.q;
      body["axes"] = axes_json(op.axes);
      return body;
    case QueryOp::Histogram:
      body["bins"] = op.bins;
      if (op.min) body["min"] = *op.min;
      if (op.max) body["max"] = *op.max;
      body["axes"] = axes_json(op.axes);
      return body;
    case QueryOp::NullCount:
      if (!op.fill) return axes_json(op.axes);
      body["fill"] = *op.fill;
      body["axes"] = axes_json(op.axes);
      return body;
    case QueryOp::Transform:
      body["method"] = std::string(transform_method_name(op.method));
      body["axes"] = axes_json(op.axes);
      return body;
    case QueryOp::Sum:
    case QueryOp::Mean:
    case QueryOp::Min:
    case QueryOp::Max:
    case QueryOp::Var:
    case QueryOp::Std:
    case QueryOp::Product:
    case QueryOp::NormL1:
    case QueryOp::NormL2:
    case QueryOp::Count:
    case QueryOp::AllFinite:
    case QueryOp::AnyNan:
    case QueryOp::AnyInf:
    case QueryOp::ArgMin:
    case QueryOp::ArgMax:
    case QueryOp::Median:
    case QueryOp::NanCount:
    case QueryOp::InfCount:
    case QueryOp::Covariance:
    case QueryOp::Correlation:
    case QueryOp::NanMean:
    case QueryOp::NanStd: break;
  }
  return axes_json(op.axes);
}

}  // namespace

std::size_t toml_nesting_depth(std::string_view text) noexcept {
  constexpr std::string_view kBasic3 = "\"\"\"", kLiteral3 = "'''";
  std::size_t deepest = 0;
  std::size_t table_depth = 0;  // components of the last [header] / [[header]], plus one
  std::size_t key_dots = 0;     // dotted-key components since the last top-level line began
  std::vector<char> open;       // '[' and '{' of inline arrays and tables
  bool line_start = true, key_mode = true, header = false;
  const auto note = [&] { deepest = std::max(deepest, table_depth + key_dots + open.size() + 1); };
  // i at an opening quote; returns the index of the last byte of the closing quote.
  const auto skip_string = [&](std::size_t i) {
    const char q = text[i];
    const std::string_view triple = q == '"' ? kBasic3 : kLiteral3;
    const bool multi = text.substr(i, 3) == triple;
    for (std::size_t j = i + (multi ? 3 : 1); j < text.size(); ++j) {
      if (q == '"' && text[j] == '\\') {
        ++j;
      } else if (text[j] == q) {
        if (!multi) return j;
        if (text.substr(j, 3) == triple) return j + 2;
      }
    }
    return text.size();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true, header = false;  // a header never spans lines
      if (open.empty()) key_mode = true, key_dots = 0;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    const bool at_line_start = line_start;
    line_start = false;
    switch (c) {
      case '#':
        while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        break;
      case '"':
      case '\'': i = skip_string(i); break;
      case '.':
        if (key_mode || header) ++key_dots, note();
        break;
      case '=': key_mode = false; break;
      case '[':
        if (at_line_start && open.empty()) {
          header = true, key_dots = 0;
          if (i + 1 < text.size() && text[i + 1] == '[') ++i;
        } else {
          open.push_back('['), key_mode = false, note();
        }
        break;
      case '{': open.push_back('{'), key_mode = true, note(); break;
      case ',':
        if (!open.empty() && open.back() == '{') key_mode = true;
        break;
      case ']':
      case '}':
        if (header && open.empty()) {
          header = false, table_depth = key_dots + 2, key_dots = 0;  // +1 for an array of tables
          if (i + 1 < text.size() && text[i + 1] == ']') ++i;
          note();
        } else if (!open.empty()) {
          open.pop_back(), key_mode = false;
        }
        break;
      default: break;
    }
  }
  return deepest;
}

Json toml_to_json(std::string_view text) {
  try {
    const toml::table table = toml::parse(text);
    return convert(table);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw FormatError("invalid query TOML: " + std::string(e.description()) + " at line " + std::to_string(where.line) +
                      " column " + std::to_string(where.column));
  }
}

Json query_document_json(const QueryDocument& doc) {
  Json out = Json::object();
  if (doc.layout_version) out["layout_version"] = *doc.layout_version;
  out["dataset"] = doc.dataset;
  if (doc.selection) {
    Json sel = Json::array();
    for (const auto& e : *doc.selection) {
      Json axis = Json::object();
      if (e.start) axis["start"] = *e.start;
      if (e.stop) axis["stop"] = *e.stop;
      if (e.step) axis["step"] = *e.step;
      if (e.start_label) axis["start_label"] = *e.start_label;
      if (e.stop_label) axis["stop_label"] = *e.stop_label;
      sel.push_back(axis);
    }
    out["selection"] = sel;
  }
  if (doc.operation) out[std::string(query_op_key(doc.operation->op))] = operation_wire(*doc.operation);
  if (doc.spill) out["spill"] = *doc.spill;
  if (doc.write) {
    const WriteSpec& w = *doc.write;
    if (!w.as_object) {
      out["write"] = std::string(write_target_name(w.target));
    } else {
      Json o = Json::object();
      if (w.target_given) o["target"] = std::string(write_target_name(w.target));
      if (w.path) o["path"] = *w.path;
      if (w.timestamp) o["timestamp"] = *w.timestamp;
      out["write"] = o;
    }
  }
  if (doc.execution) {
    const ExecutionHints& h = *doc.execution;
    Json e = Json::object();
    if (h.memory_budget_bytes) e["memory_budget_bytes"] = *h.memory_budget_bytes;
    if (h.memory_budget_percent) e["memory_budget_percent"] = *h.memory_budget_percent;
    else if (h.memory_budget_percent_bps) e["memory_budget_percent_bps"] = *h.memory_budget_percent_bps;
    if (h.fold_parallel) e["fold_parallel"] = *h.fold_parallel;
    if (h.device) e["device"] = *h.device;
    out["execution"] = e;
  }
  return out;
}

}  // namespace tessera::tet
