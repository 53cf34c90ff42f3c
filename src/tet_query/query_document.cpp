// Query document parsing (spec tet.md §3.1–3.4): the size and depth limits, the top-level key
// checks in the reference's order, reserved keys, axis specs and operation parameters. TOML
// documents are converted to the same JSON tree first (query_toml.cpp) so one set of rules
// applies to both.
#include "tessera/tet_query/query_document.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/codec/json_fields.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;

constexpr std::array<std::string_view, kQueryOpCount> kOpKeys = {
    "sum",        "mean",        "min",      "max",        "var",       "std",       "product",
    "norm_l1",    "norm_l2",     "count",    "all_finite", "any_nan",   "any_inf",   "arg_min",
    "arg_max",    "median",      "quantile", "histogram",  "nan_count", "inf_count", "null_count",
    "covariance", "correlation", "nan_mean", "nan_std",    "transform"};

constexpr std::array<std::string_view, 6> kReservedKeys = {"layout_version", "dataset", "selection",
                                                           "spill",          "write",   "execution"};

constexpr std::size_t kMaxNameBytes = 1024;
constexpr std::size_t kMaxAxisLabel = 32;

[[noreturn]] void fail(const std::string& text) { throw UsageError("validation: " + text); }

// Composite nesting depth, computed without recursion so a hostile document cannot exhaust the
// stack (nlohmann parses and destroys deep trees iteratively too).
std::size_t composite_depth(const Json& root) {
  std::size_t best = 0;
  std::vector<std::pair<const Json*, std::size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    best = std::max(best, depth + 1);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return best;
}

void check_size(std::string_view text) {
  if (text.size() > kMaxQueryBytes)
    fail("query document exceeds maximum size (" + std::to_string(text.size()) + " bytes, limit 1048576)");
}

void fail_depth(std::size_t d) {
  if (d > kMaxQueryDepth) fail("query document nesting depth " + std::to_string(d) + " exceeds maximum 64");
}

// JSON text is measured before any tree exists (the one scanner every JSON parse uses); a tree
// converted from TOML is measured after toml++ has bounded its own nesting.
void check_depth(std::string_view json_text) { fail_depth(codec::json::nesting_depth(json_text)); }
void check_depth(const Json& v) { fail_depth(composite_depth(v)); }

using codec::json::as_uint64;

std::optional<double> as_f64(const Json& v) {
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

std::uint64_t u64_field(const std::string& name, const Json& v) {
  if (!v.is_number()) fail("`" + name + "` must be a number");
  if (auto u = as_uint64(v)) return *u;
  fail("`" + name + "` must be a non-negative integer");
}

// ---- axis specs (§3.3) -------------------------------------------------------------------------

std::string axis_token(const std::string& s) {
  if (s.empty()) fail("operation axis label must not be empty");
  if (s.size() > kMaxAxisLabel) fail("axis label exceeds maximum length (32)");
  const bool digits = std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) return s;
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto tail = [&](char c) { return head(c) || (c >= '0' && c <= '9') || c == '-'; };
  if (head(s[0]) && std::all_of(s.begin() + 1, s.end(), tail)) return s;
  fail("invalid axis label \"" + s + "\" (use a non-negative decimal index or a dimension name)");
}

std::string axis_number(const Json& v) {
  if (auto u = as_uint64(v)) return std::to_string(*u);
  fail("axis index must be a non-negative integer");
}

std::vector<std::string> axis_spec(const Json& v) {
  if (v.is_null()) fail("axis spec must not be null");
  if (v.is_number()) return {axis_number(v)};
  if (v.is_string()) return {axis_token(v.get<std::string>())};
  if (v.is_array()) {
    std::vector<std::string> out;
    for (const auto& item : v) {
      if (item.is_number()) out.push_back(axis_number(item));
      else if (item.is_string()) out.push_back(axis_token(item.get<std::string>()));
      else fail("axis list entries must be numbers or strings");
    }
    return out;
  }
  if (v.is_object()) {
    if (v.contains("axis")) return axis_spec(v["axis"]);
    if (v.contains("axes")) return axis_spec(v["axes"]);
    fail("axis object must include `axis` or `axes`");
  }
  fail("axis spec must be a number, string, or array");
}

const Json& parametric_object(std::string_view op, const Json& v) {
  if (!v.is_object()) fail("`" + std::string(op) + "` must be a JSON object (e.g. { \"q\": 0.95, \"axis\": 0 })");
  return v;
}

std::vector<std::string> object_axes(const Json& obj) {
  if (obj.contains("axis")) return axis_spec(obj["axis"]);
  if (obj.contains("axes")) return axis_spec(obj["axes"]);
  return {};
}

std::optional<TransformMethod> method_from_name(std::string_view s) {
  for (int m = 0; m <= static_cast<int>(TransformMethod::Softmax); ++m)
    if (transform_method_name(static_cast<TransformMethod>(m)) == s) return static_cast<TransformMethod>(m);
  return std::nullopt;
}

QueryOperation parse_operation(QueryOp op, const Json& v) {
  QueryOperation out;
  out.op = op;
  const std::string_view key = query_op_key(op);
  switch (op) {
    case QueryOp::Quantile: {
      const Json& obj = parametric_object(key, v);
      out.axes = object_axes(obj);
      auto q = obj.contains("q") ? as_f64(obj["q"]) : std::nullopt;
      if (!q) fail("`quantile.q` is required");
      out.q = *q;
      break;
    }
    case QueryOp::Histogram: {
      const Json& obj = parametric_object(key, v);
      out.axes = object_axes(obj);
      auto bins = obj.contains("bins") ? as_uint64(obj["bins"]) : std::nullopt;
      if (!bins || *bins > UINT32_MAX) fail("`histogram.bins` is required");
      out.bins = static_cast<std::uint32_t>(*bins);
      if (obj.contains("min")) out.min = as_f64(obj["min"]);
      if (obj.contains("max")) out.max = as_f64(obj["max"]);
      break;
    }
    case QueryOp::NullCount:
      if (v.is_object()) {
        out.axes = object_axes(v);
        if (v.contains("fill")) out.fill = as_f64(v["fill"]);
      } else {
        out.axes = axis_spec(v);
      }
      break;
    case QueryOp::Transform: {
      const Json& obj = parametric_object(key, v);
      out.axes = object_axes(obj);
      if (!obj.contains("method") || !obj["method"].is_string()) fail("`transform.method` is required");
      const auto name = obj["method"].get<std::string>();
      auto m = method_from_name(name);
      if (!m)
        fail("unknown transform method `" + name +
             "` (expected zscore, minmax, l1, l2, center, scale, log1p, sqrt, or softmax)");
      out.method = *m;
      break;
    }
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
    case QueryOp::NanStd: out.axes = axis_spec(v); break;
  }
  return out;
}

void validate_operation(const QueryOperation& op) {
  if (op.axes.size() > 8) fail("operation has " + std::to_string(op.axes.size()) + " axes; maximum is 8");
  switch (op.op) {
    case QueryOp::Quantile:
      if (!(op.q >= 0.0 && op.q <= 1.0)) fail("quantile q must be in [0.0, 1.0], got " + codec::json::format_f64(op.q));
      break;
    case QueryOp::Histogram:
      if (op.bins == 0) fail("histogram bins must be >= 1");
      if (op.bins > 4096) fail("histogram bins exceeds maximum 4096 (got " + std::to_string(op.bins) + ")");
      if (op.min.has_value() != op.max.has_value()) fail("histogram requires both `min` and `max` when either is set");
      if (op.min && (!std::isfinite(*op.min) || !std::isfinite(*op.max))) fail("histogram min/max must be finite");
      if (op.min && *op.min >= *op.max)
        fail("histogram min must be < max (got " + codec::json::format_f64(*op.min) +
             " >= " + codec::json::format_f64(*op.max) + ")");
      break;
    case QueryOp::Covariance:
    case QueryOp::Correlation:
      if (op.axes.size() != 1) fail("covariance/correlation require exactly one observation axis (e.g. `\"axis\": 0`)");
      break;
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
    case QueryOp::NullCount:
    case QueryOp::NanMean:
    case QueryOp::NanStd:
    case QueryOp::Transform: break;
  }
}

// ---- reserved keys -----------------------------------------------------------------------------

std::string bounded_path(const std::string& name, const Json& v, const std::string& type_text) {
  if (!v.is_string()) fail(type_text);
  auto s = v.get<std::string>();
  if (s.empty()) fail("`" + name + "` path must not be empty");
  if (s.size() > kMaxNameBytes)
    fail("`" + name + "` path exceeds maximum length (" + std::to_string(s.size()) + " > 1024)");
  return s;
}

WriteTarget write_target(const std::string& s) {
  if (s == "switch") return WriteTarget::Switch;
  if (s == "spill") return WriteTarget::Spill;
  if (s == "sidecar") return WriteTarget::Sidecar;
  if (s == "ram") return WriteTarget::Ram;
  fail("unknown write target `" + s + "` (expected switch, spill, sidecar, or ram)");
}

WriteSpec parse_write(const Json& v) {
  WriteSpec w;
  if (v.is_string()) {
    w.target = write_target(v.get<std::string>());
    w.target_given = true;
    return w;
  }
  if (!v.is_object())
    fail("`write` must be a target string (`switch`, `spill`, `sidecar`, `ram`) or an object with `target` / `path`");
  w.as_object = true;
  for (const auto& [k, item] : v.items())
    if (k != "target" && k != "path" && k != "timestamp") fail("unknown field `write." + k + "`");
  if (v.contains("target")) {
    if (!v["target"].is_string()) fail("`write.target` must be a string");
    w.target = write_target(v["target"].get<std::string>());
    w.target_given = true;
  }
  if (v.contains("path")) w.path = bounded_path("write.path", v["path"], "`write.path` must be a string");
  if (v.contains("timestamp")) {
    if (!v["timestamp"].is_boolean()) fail("`write.timestamp` must be a boolean");
    w.timestamp = v["timestamp"].get<bool>();
  }
  if (w.path && w.target != WriteTarget::Spill && w.target != WriteTarget::Sidecar)
    fail("`write.path` is only valid with `spill` or `sidecar` targets");
  if (w.timestamp && w.target != WriteTarget::Sidecar)
    fail("`write.timestamp` is only valid with the `sidecar` target");
  return w;
}

ExecutionHints parse_execution(const Json& v) {
  if (!v.is_object()) fail("`execution` must be a JSON object");
  for (const auto& [k, item] : v.items())
    if (k != "memory_budget_bytes" && k != "memory_budget_percent" && k != "memory_budget_percent_bps" &&
        k != "fold_parallel" && k != "device")
      fail("unknown field `execution." + k + "`");
  ExecutionHints h;
  if (v.contains("memory_budget_bytes"))
    h.memory_budget_bytes = u64_field("execution.memory_budget_bytes", v["memory_budget_bytes"]);
  if (v.contains("memory_budget_percent_bps")) {
    const std::uint64_t bps = u64_field("execution.memory_budget_percent_bps", v["memory_budget_percent_bps"]);
    if (bps > 10000) fail("`execution.memory_budget_percent_bps` must be <= 10000 (100%)");
    h.memory_budget_percent_bps = static_cast<std::uint16_t>(bps);
  }
  if (v.contains("memory_budget_percent")) {
    if (h.memory_budget_percent_bps)
      fail("use either `execution.memory_budget_percent` or `execution.memory_budget_percent_bps`, not both");
    const auto pct = as_f64(v["memory_budget_percent"]);
    if (!pct) fail("`execution.memory_budget_percent` must be a number");
    if (!(*pct >= 0.0 && *pct <= 100.0))
      fail("`execution.memory_budget_percent` must be in [0, 100], got " + codec::json::format_f64(*pct));
    h.memory_budget_percent = *pct;
    h.memory_budget_percent_bps = static_cast<std::uint16_t>(std::llround(*pct * 100.0));
  }
  if (v.contains("fold_parallel")) {
    if (!v["fold_parallel"].is_boolean()) fail("`execution.fold_parallel` must be a boolean");
    h.fold_parallel = v["fold_parallel"].get<bool>();
  }
  if (v.contains("device")) {
    if (!v["device"].is_string()) fail("`execution.device` must be a string");
    h.device = normalize_device(v["device"].get<std::string>());
  }
  return h;
}

std::vector<SelectionEntry> selection_entries(const Json& v) {
  try {
    // The selection room reads nlohmann's sorted-map tree; the document tree keeps insertion
    // order, which does not matter for a selection.
    return parse_selection(nlohmann::json::parse(v.dump()));
  } catch (const UsageError& e) {
    const std::string what = e.what();
    if (what.find("unknown field") != std::string::npos) throw FormatError("invalid query JSON: " + what);
    fail(what);
  }
}

std::string trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

// Parses a JSON tree that already passed the size and depth limits.
QueryDocument parse_query_tree(const Json& doc);

QueryDocument parse_query_tree(const Json& doc) {
  if (!doc.is_object()) fail("query document must be a JSON object");
  if (doc.contains("operation"))
    fail("nested `operation` is not supported; use a top-level op key (e.g. `\"mean\": 0`)");
  if (doc.contains("output")) fail("nested `output` is not supported; use top-level `\"spill\": \"path\"`");
  // First unknown key in byte order, as the reference's sorted map reports it.
  std::vector<std::string> keys;
  for (const auto& [k, item] : doc.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) {
    const bool known = std::find(kReservedKeys.begin(), kReservedKeys.end(), k) != kReservedKeys.end() ||
                       query_op_from_key(k).has_value();
    if (!known) fail("unknown field `" + k + "`");
  }
  if (!doc.contains("dataset") || !doc["dataset"].is_string()) fail("`dataset` must be a string");

  QueryDocument out;
  out.dataset = doc["dataset"].get<std::string>();
  if (doc.contains("layout_version")) {
    const std::uint64_t v = u64_field("layout_version", doc["layout_version"]);
    if (v > UINT32_MAX) fail("`layout_version` must be a non-negative integer");
    out.layout_version = static_cast<std::uint32_t>(v);
  }
  if (doc.contains("selection")) out.selection = selection_entries(doc["selection"]);
  if (doc.contains("spill"))
    out.spill = bounded_path("spill", doc["spill"],
                             "`spill` must be a string path (relative to the `.tet` parent or absolute)");
  if (doc.contains("write")) out.write = parse_write(doc["write"]);
  if (doc.contains("execution")) out.execution = parse_execution(doc["execution"]);
  for (std::size_t i = 0; i < kQueryOpCount; ++i) {
    const std::string key(kOpKeys[i]);
    if (!doc.contains(key)) continue;
    if (out.operation) fail("query document must include at most one reduction key");
    out.operation = parse_operation(static_cast<QueryOp>(i), doc[key]);
  }

  // Value rules (the reference validates after reading the wire form).
  if (trim(out.dataset).empty()) fail("`dataset` must be a non-empty string");
  if (out.dataset.size() > kMaxNameBytes)
    fail("`dataset` name exceeds maximum length (" + std::to_string(out.dataset.size()) + " > 1024)");
  if (out.operation) {
    validate_operation(*out.operation);
    if (out.operation->op == QueryOp::Transform) {
      if (out.spill) fail("transform operations use top-level `write`, not `spill`");
    } else if (out.write) {
      fail("`write` is only valid with `transform`");
    }
  } else if (out.write) {
    fail("`write` requires a transform operation");
  }
  return out;
}

std::string_view query_op_key(QueryOp op) noexcept { return kOpKeys[static_cast<std::size_t>(op)]; }

std::optional<QueryOp> query_op_from_key(std::string_view key) noexcept {
  for (std::size_t i = 0; i < kQueryOpCount; ++i)
    if (kOpKeys[i] == key) return static_cast<QueryOp>(i);
  return std::nullopt;
}

bool is_materializing_op(QueryOp op) noexcept {
  return op == QueryOp::Median || op == QueryOp::Quantile || op == QueryOp::Histogram || op == QueryOp::Covariance ||
         op == QueryOp::Correlation;
}

std::string_view transform_method_name(TransformMethod m) noexcept {
  static constexpr std::array<std::string_view, 9> kNames = {"zscore", "minmax", "l1",   "l2",     "center",
                                                             "scale",  "log1p",  "sqrt", "softmax"};
  return kNames[static_cast<std::size_t>(m)];
}

std::string_view write_target_name(WriteTarget t) noexcept {
  static constexpr std::array<std::string_view, 4> kNames = {"switch", "spill", "sidecar", "ram"};
  return kNames[static_cast<std::size_t>(t)];
}

QuerySyntax detect_query_syntax(std::optional<std::string_view> path_hint, std::string_view text) {
  if (path_hint) {
    const auto dot = path_hint->rfind('.');
    const auto slash = path_hint->find_last_of('/');
    if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
      const auto ext = path_hint->substr(dot + 1);
      if (ext == "json") return QuerySyntax::Json;
      if (ext == "toml") return QuerySyntax::Toml;
    }
  }
  const std::string t = trim(text);
  return !t.empty() && t.front() == '{' ? QuerySyntax::Json : QuerySyntax::Toml;
}

QueryDocument parse_query_json(std::string_view text) {
  check_size(text);
  check_depth(text);
  Json tree;
  try {
    tree = Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    std::string detail = e.what();
    if (auto pos = detail.find("] "); detail.rfind("[json.exception", 0) == 0 && pos != std::string::npos)
      detail = detail.substr(pos + 2);
    throw FormatError("invalid query JSON: " + detail);
  }
  return parse_query_tree(tree);
}

QueryDocument parse_query_toml(std::string_view text) {
  check_size(text);
  fail_depth(toml_nesting_depth(text));
  const Json tree = toml_to_json(text);
  check_depth(tree);
  return parse_query_tree(tree);
}

QueryDocument parse_query_text(std::string_view text, QuerySyntax syntax) {
  return syntax == QuerySyntax::Json ? parse_query_json(text) : parse_query_toml(text);
}

std::string normalize_device(std::string_view token) {
  std::string t(token);
  for (char& c : t)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (t == "cpu" || t == "auto" || t == "metal" || t == "cuda" || t == "rocm" || t == "cuda:multi" || t == "rocm:multi")
    return t;
  for (const std::string prefix : {"cuda:", "rocm:"}) {
    if (t.rfind(prefix, 0) != 0) continue;
    const std::string n = t.substr(prefix.size());
    const bool digits =
        !n.empty() && n.size() <= 9 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      fail("invalid device `" + std::string(token) + "` (expected " + prefix.substr(0, 4) + ":N with non-negative N)");
    return prefix + std::to_string(std::stoul(n));
  }
  fail("unknown device `" + std::string(token) +
       "` (expected cpu, auto, metal, cuda[:N| :multi], or rocm[:N| :multi])");
}

Json operation_echo(const QueryOperation& op) {
  Json body = Json::object();
  Json axes = Json::array();
  for (const auto& a : op.axes) axes.push_back(a);
  switch (op.op) {
    case QueryOp::Transform:
      body["method"] = std::string(transform_method_name(op.method));
      body["axes"] = axes;
      break;
    case QueryOp::Quantile:
      body["axes"] = axes;
      body["q"] = op.q;
      break;
    case QueryOp::Histogram:
      body["axes"] = axes;
      body["bins"] = op.bins;
      body["min"] = op.min ? Json(*op.min) : Json(nullptr);
      body["max"] = op.max ? Json(*op.max) : Json(nullptr);
      break;
    case QueryOp::NullCount:
      body["axes"] = axes;
      body["fill"] = op.fill ? Json(*op.fill) : Json(nullptr);
      break;
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
    case QueryOp::NanStd: body["axes"] = axes; break;
  }
  Json out = Json::object();
  out[std::string(query_op_key(op.op))] = body;
  return out;
}

}  // namespace tessera::tet
