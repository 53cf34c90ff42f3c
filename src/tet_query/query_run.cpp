// Query orchestration (spec tet.md §4.1–4.3, §4.7, §5.2): opens the file, matches the dataset,
// resolves axes, fill and selection, builds the read plan, picks the execution strategy and
// assembles the response tree in the reference's key order.
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "query_internal.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera::tet {
namespace {

using qe::Json;
namespace fs = std::filesystem;

const char* const kMessageNoTet =
    "query accepted and validated; pass `--tet PATH` for catalog + read_plan, or add `--execute` with `--tet` for a "
    "capped raw f32 mmap preview";
const char* const kMessageMatched =
    "query accepted; dataset matched; read_plan lists mmap payload regions for touched chunks";
const char* const kMessageMiss = "query accepted; dataset name not found in this file (see catalog.available_datasets)";

// §5.2 execution key order; every field a strategy produces is emitted in this order.
constexpr std::array<const char*, 95> kExecutionOrder = {"total_bytes_read_from_disk",
                                                         "f32_preview",
                                                         "f32_preview_truncated",
                                                         "f64_preview",
                                                         "f64_preview_truncated",
                                                         "i32_preview",
                                                         "i32_preview_truncated",
                                                         "i64_preview",
                                                         "i64_preview_truncated",
                                                         "u8_preview",
                                                         "u8_preview_truncated",
                                                         "u16_preview",
                                                         "u16_preview_truncated",
                                                         "i16_preview",
                                                         "i16_preview_truncated",
                                                         "u32_preview",
                                                         "u32_preview_truncated",
                                                         "u64_preview",
                                                         "u64_preview_truncated",
                                                         "f16_preview",
                                                         "f16_preview_truncated",
                                                         "operation_element_count",
                                                         "operation_sum",
                                                         "operation_mean",
                                                         "operation_median",
                                                         "operation_quantile",
                                                         "operation_histogram_counts",
                                                         "operation_histogram_edges",
                                                         "operation_histogram_excluded",
                                                         "operation_min",
                                                         "operation_max",
                                                         "operation_var",
                                                         "operation_std",
                                                         "operation_nan_mean",
                                                         "operation_nan_std",
                                                         "operation_product",
                                                         "operation_norm_l1",
                                                         "operation_norm_l2",
                                                         "operation_all_finite",
                                                         "operation_any_nan",
                                                         "operation_any_inf",
                                                         "operation_nan_count",
                                                         "operation_inf_count",
                                                         "operation_null_count",
                                                         "operation_argmin_index",
                                                         "operation_argmax_index",
                                                         "memory_strategy",
                                                         "spill_f32_path",
                                                         "spill_f32_bytes",
                                                         "memory_budget_bytes",
                                                         "host_available_ram_bytes",
                                                         "logical_selection_f32_bytes",
                                                         "logical_selection_bytes",
                                                         "fold_parallel",
                                                         "fold_workers",
                                                         "io_regime",
                                                         "fold_linear_scan",
                                                         "device_requested",
                                                         "device_used",
                                                         "device_fallback_reason",
                                                         "device_gpu_reduce",
                                                         "device_gpu_pipeline",
                                                         "device_gpu_multi",
                                                         "operation_reduced_shape",
                                                         "operation_reduced_sum",
                                                         "operation_reduced_mean",
                                                         "operation_reduced_median",
                                                         "operation_reduced_quantile",
                                                         "operation_reduced_histogram_counts",
                                                         "operation_reduced_histogram_excluded",
                                                         "operation_reduced_min",
                                                         "operation_reduced_max",
                                                         "operation_reduced_count",
                                                         "operation_reduced_var",
                                                         "operation_reduced_std",
                                                         "operation_reduced_nan_mean",
                                                         "operation_reduced_nan_std",
                                                         "operation_reduced_product",
                                                         "operation_reduced_norm_l1",
                                                         "operation_reduced_norm_l2",
                                                         "operation_reduced_all_finite",
                                                         "operation_reduced_any_nan",
                                                         "operation_reduced_any_inf",
                                                         "operation_reduced_nan_count",
                                                         "operation_reduced_inf_count",
                                                         "operation_reduced_null_count",
                                                         "operation_reduced_argmin",
                                                         "operation_reduced_argmax",
                                                         "operation_covariance",
                                                         "operation_covariance_order",
                                                         "operation_correlation",
                                                         "operation_correlation_order",
                                                         "transform_method",
                                                         "transform_div_by_zero_indices",
                                                         "transform_div_by_zero_count"};

constexpr std::array<DType, 10> kPreviewOrder = {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8,
                                                 DType::U16, DType::I16, DType::U32, DType::U64, DType::F16};

Json u64_array(const std::vector<std::uint64_t>& v) {
  Json a = Json::array();
  for (auto x : v) a.push_back(x);
  return a;
}

// Preview values of the dataset dtype: exact integers (u64 too, TD-7), f16 bit patterns, floats
// as doubles (f32 ones are printed with f32 digits by the output room).
Json preview_json(DType dtype, const qe::PreviewBuffer& p) {
  Json a = Json::array();
  const std::size_t n = p.limit;
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* e = p.bytes.data() + i * p.es;
    switch (dtype) {
      case DType::F32: {
        float v;
        std::memcpy(&v, e, 4);
        a.push_back(static_cast<double>(v));
        break;
      }
      case DType::F64: {
        double v;
        std::memcpy(&v, e, 8);
        a.push_back(v);
        break;
      }
      case DType::I32: {
        std::int32_t v;
        std::memcpy(&v, e, 4);
        a.push_back(v);
        break;
      }
      case DType::I64: {
        std::int64_t v;
        std::memcpy(&v, e, 8);
        a.push_back(v);
        break;
      }
      case DType::U8: a.push_back(static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(e[0]))); break;
      case DType::U16:
      case DType::F16: {
        std::uint16_t v;
        std::memcpy(&v, e, 2);
        a.push_back(static_cast<std::uint64_t>(v));
        break;
      }
      case DType::I16: {
        std::int16_t v;
        std::memcpy(&v, e, 2);
        a.push_back(static_cast<std::int64_t>(v));
        break;
      }
      case DType::U32: {
        std::uint32_t v;
        std::memcpy(&v, e, 4);
        a.push_back(static_cast<std::uint64_t>(v));
        break;
      }
      case DType::U64: {
        std::uint64_t v;
        std::memcpy(&v, e, 8);
        a.push_back(v);
        break;
      }
      case DType::Bool:
      case DType::I8: break;  // no .tet dtype
    }
  }
  return a;
}

Json catalog_json(const TetFile& file, const Dataset& ds) {
  Json c = Json::object();
  c["matched"] = true;
  c["dataset_index"] = ds.id;
  c["dtype"] = tag_from_dtype(ds.dtype);
  c["shape"] = u64_array(ds.shape);
  c["chunk_shape"] = u64_array(ds.chunk_shape);
  c["chunk_index_rows"] = static_cast<std::uint64_t>(ds.entry_of_chunk.size());
  c["dataset_" + std::string(tag_name(tag_from_dtype(ds.dtype))) + "_bytes"] = ds.logical_bytes;
  Json fe = Json::object();
  fe["memory_budget_percent_bps"] = file.layout().index_header.memory_budget_percent_bps;
  fe["memory_budget_bytes"] = file.layout().index_header.memory_budget_bytes;
  c["file_execution"] = std::move(fe);
  return c;
}

// The directory relative spill paths are joined to: the local `.tet` file's directory, or the
// working directory for a remote file, as for a bare file name (a URL's "directory" is not a
// place to write: taking it as a path made directories named `http:` in the working directory).
std::string relative_base_of(const std::string& tet_path) {
  if (io::is_remote_uri(tet_path)) return fs::current_path().lexically_normal().string();
  const fs::path parent = fs::path(io::local_path(tet_path)).parent_path();
  return fs::absolute(parent.empty() ? fs::current_path() : parent).lexically_normal().string();
}

std::vector<std::string> allowed_roots(const std::string& base, const std::vector<std::string>& extra) {
  std::vector<std::string> roots{base};
  for (const auto& r : cache_roots()) roots.push_back(r);
  for (const auto& r : extra) roots.push_back(fs::absolute(r).lexically_normal().string());
  std::vector<std::string> out;
  for (const auto& r : roots) {
    std::error_code ec;
    fs::create_directories(r, ec);
    const fs::path canon = fs::weakly_canonical(r, ec);
    out.push_back(ec ? r : canon.string());
  }
  return out;
}

std::optional<std::string> device_fallback(const std::string& device, const QueryOperation* op, DType dtype,
                                           std::uint64_t logical_bytes) {
  if (!op) return "preview_or_spill_only";
  if (is_materializing_op(op->op)) return "tier_c_materialize";
  if (device == "cpu") return std::nullopt;
  if (dtype != DType::F32 && dtype != DType::F16) return "gpu_unsupported_dtype";
  if (!op->axes.empty() || op->op == QueryOp::Transform) return "gpu_unsupported_op";
  if (device == "auto" && logical_bytes < 64ull * 1024 * 1024) return "auto_below_size_threshold";
  return "gpu_feature_disabled";
}

Json execute(const QueryDocument& doc, const qe::Plan& plan, const std::vector<std::size_t>& axes, double fill,
             const QueryOptions& options) {
  const QueryOperation* op = doc.operation ? &*doc.operation : nullptr;
  if (!op && !doc.spill && options.preview == 0)
    qe::fail(
        "preview limit 0 without `operation` or `spill` would attach an empty execution block; omit `--execute`, "
        "set `spill`, or use a positive `--preview`");
  const ExecutionHints* hints = doc.execution ? &*doc.execution : nullptr;
  const auto& header = plan.file->layout().index_header;
  qe::ExecContext ctx;
  ctx.preview = options.preview;
  ctx.available = available_ram_bytes();
  ctx.budget =
      resolve_memory_budget(hints, header.memory_budget_percent_bps, header.memory_budget_bytes, ctx.available);
  ctx.fold_parallel_hint = hints ? hints->fold_parallel : std::nullopt;
  ctx.threads = options.threads;
  ctx.tet_path = *options.tet_path;
  ctx.relative_base = relative_base_of(*options.tet_path);
  ctx.allowed_roots = allowed_roots(ctx.relative_base, options.spill_allow);

  const Dataset& ds = *plan.ds;
  qe::ExecResult res;
  if (!op && doc.spill) {
    res = qe::run_spill_export(plan, *doc.spill, ctx);
  } else if (!op) {
    res = qe::run_fold(plan, nullptr, {}, 0, ctx);
  } else {
    if (op->op == QueryOp::Covariance || op->op == QueryOp::Correlation) {
      if (plan.logical_shape.size() != 2)
        qe::fail("covariance/correlation require a rank-2 logical selection (got rank " +
                 std::to_string(plan.logical_shape.size()) + ")");
    }
    qe::check_axes_for_execution(axes, ds.ndim());
    if (op->op == QueryOp::Transform) {
      if (ds.dtype != DType::F32 && ds.dtype != DType::F64) qe::fail("transform requires f32 or f64 datasets");
      res = qe::run_transform(plan, *op, axes, doc.write ? *doc.write : WriteSpec{}, ctx);
    } else if (is_materializing_op(op->op)) {
      res = qe::run_materialize(plan, *op, axes, ctx);
    } else {
      res = qe::run_fold(plan, op, axes, fill, ctx);
    }
  }

  std::map<std::string, Json> f;
  f["total_bytes_read_from_disk"] = res.reads * plan.total_stored;
  const bool all_flags = res.tier_c_zero_preview && options.preview == 0;
  for (DType t : kPreviewOrder) {
    const std::string name(tag_name(tag_from_dtype(t)));
    if (t == ds.dtype) {
      if (!res.preview_values.empty() || (op && op->op == QueryOp::Transform)) {
        Json a = Json::array();
        for (double v : res.preview_values) a.push_back(v);
        f[name + "_preview"] = std::move(a);
      } else {
        f[name + "_preview"] = preview_json(t, res.preview);
      }
      f[name + "_preview_truncated"] = plan.count > options.preview;
    } else {
      f[name + "_preview"] = Json::array();
      f[name + "_preview_truncated"] = all_flags && plan.count > 0;
    }
  }
  if (op) f["operation_element_count"] = plan.count;
  if (op && !axes.empty() && op->op != QueryOp::Covariance && op->op != QueryOp::Correlation) {
    const qe::Reduction red = qe::make_reduction(plan.logical_shape, axes);
    f["operation_reduced_shape"] = u64_array(red.kept_shape);
  }
  for (auto& [k, v] : res.fields) f[k] = std::move(v);
  f["memory_strategy"] = res.memory_strategy;
  f["memory_budget_bytes"] = ctx.budget;
  if (ctx.available) f["host_available_ram_bytes"] = *ctx.available;
  if (ds.dtype == DType::F32) f["logical_selection_f32_bytes"] = plan.logical_bytes;
  f["logical_selection_bytes"] = plan.logical_bytes;
  if (res.fold_fields) {
    f["fold_parallel"] = res.policy.parallel;
    f["io_regime"] = res.policy.io_regime;
    f["fold_linear_scan"] = res.policy.linear_scan;
  }
  const std::optional<std::string> device = options.device ? options.device : (hints ? hints->device : std::nullopt);
  if (device) {
    f["device_requested"] = *device;
    if (auto reason = device_fallback(*device, op, ds.dtype, plan.logical_bytes)) f["device_fallback_reason"] = *reason;
  }
  f["device_used"] = "cpu";
  f["device_gpu_reduce"] = false;
  f["device_gpu_pipeline"] = false;
  f["device_gpu_multi"] = false;

  Json ex = Json::object();
  for (const char* key : kExecutionOrder) {
    auto it = f.find(key);
    if (it != f.end()) ex[key] = std::move(it->second);
  }
  return ex;
}

}  // namespace

std::optional<std::uint64_t> available_ram_bytes() {
  if (const char* env = std::getenv("TESSERA_TET_AVAILABLE_RAM_BYTES")) {
    std::uint64_t v = 0;
    const std::string_view s(env);
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && ptr == s.data() + s.size()) return v;
  }
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::uint64_t resolve_memory_budget(const ExecutionHints* hints, std::uint16_t file_bps, std::uint32_t file_bytes,
                                    std::optional<std::uint64_t> available) {
  if (hints && hints->memory_budget_bytes) return std::max<std::uint64_t>(1, *hints->memory_budget_bytes);
  if (file_bytes > 0) return file_bytes;
  std::uint64_t bps = 2500;
  if (hints && hints->memory_budget_percent_bps && *hints->memory_budget_percent_bps > 0)
    bps = *hints->memory_budget_percent_bps;
  else if (file_bps > 0) bps = file_bps;
  if (!available) return 268435456;
  const unsigned __int128 v = static_cast<unsigned __int128>(*available) * bps / 10000;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(v));
}

std::vector<std::string> cache_roots() {
  std::vector<std::string> roots;
  auto add = [&](const char* var, const char* suffix) {
    const char* v = std::getenv(var);
    if (v && *v) roots.push_back((fs::path(v) / suffix / "tessera" / "tet").string());
  };
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) {
    add("XDG_CACHE_HOME", "");
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    roots.push_back((fs::path(home) / ".cache" / "tessera" / "tet").string());
    roots.push_back((fs::path(home) / ".local" / "cache" / "tessera" / "tet").string());
  }
  add("TMPDIR", "");
  add("TEMP", "");
  add("TMP", "");
  for (auto& r : roots) r = fs::path(r).lexically_normal().string();
  return roots;
}

QueryResponse run_query(const QueryDocument& input, const QueryOptions& options) {
  QueryDocument doc = input;
  QueryResponse resp;
  Json& t = resp.tree;
  t = Json::object();
  t["status"] = "planned";
  t["accepted"] = true;
  t["layout_version"] = doc.layout_version ? Json(*doc.layout_version) : Json(nullptr);
  t["dataset"] = doc.dataset;
  t["selection_axes"] = doc.selection ? Json(static_cast<std::uint64_t>(doc.selection->size())) : Json(nullptr);
  t["operation"] = nullptr;
  t["message"] = kMessageNoTet;
  if (!options.tet_path) {
    if (options.execute) throw UsageError("--execute requires --tet");
    if (doc.operation) t["operation"] = operation_echo(*doc.operation);
    return resp;
  }
  t["tet_file"] = *options.tet_path;

  const TetFile file = TetFile::open(*options.tet_path);
  const Dataset* ds = file.find(doc.dataset);
  if (!ds) {
    if (doc.operation) t["operation"] = operation_echo(*doc.operation);
    t["message"] = kMessageMiss;
    Json c = Json::object();
    c["matched"] = false;
    Json fe = Json::object();
    fe["memory_budget_percent_bps"] = file.layout().index_header.memory_budget_percent_bps;
    fe["memory_budget_bytes"] = file.layout().index_header.memory_budget_bytes;
    c["file_execution"] = std::move(fe);
    Json names = Json::array();
    for (const auto& d : file.datasets()) {
      names.push_back(d.name);
      resp.available_datasets.push_back(d.name);
    }
    c["available_datasets"] = std::move(names);
    t["catalog"] = std::move(c);
    return resp;
  }
  resp.dataset_matched = true;
  const DatasetMetadata* md = file.metadata_of(ds->name);

  std::vector<std::size_t> axes;
  double fill = 0;
  if (doc.operation) {
    axes = qe::resolve_axes(doc.operation->axes, *ds, md);
    if (doc.operation->op == QueryOp::NullCount) {
      fill = qe::resolve_fill(doc.operation->fill, md);
      doc.operation->fill = fill;
    }
    t["operation"] = operation_echo(*doc.operation);
  }
  qe::Plan plan = qe::build_plan(file, *ds, md, doc.selection ? *doc.selection : std::vector<SelectionEntry>{});
  if (doc.operation && !options.execute)
    qe::fail(
        "`operation` requires mmap execution with an explicit preview limit (e.g. `--execute --preview-f32 64`, "
        "or `--preview-f32 0` to omit preview floats)");

  t["catalog"] = catalog_json(file, *ds);
  t["read_plan"] = qe::read_plan_json(plan);
  std::string message = kMessageMatched;
  if (options.execute) {
    qe::choose_read_path(plan);
    t["execution"] = execute(doc, plan, axes, fill, options);
    message += doc.operation ? "; operation executed (see execution.memory_strategy and operation_*)"
                             : "; mmap f32 preview attached (see execution)";
  }
  t["message"] = message;
  return resp;
}

}  // namespace tessera::tet
