// Transforms (spec tet.md §3.5 `transform`, §4.6 write targets): pass 1 folds the statistics of
// each reduced cell, pass 2 rewrites every selected element in f64 and stores it in the dataset
// dtype — in memory (`ram`), in a spill file (`spill`) or in a new single-dataset `.tet` sidecar.
// Elements whose denominator is zero or non-finite become NaN and their logical indices are
// recorded in read-plan chunk order (row-major inside each tile).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>

#include "query_internal.hpp"
#include "tessera/core/civil_date.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/tet_query/query_engine.hpp"
#include "tessera/version.hpp"

namespace tessera::tet::qe {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxRecorded = 256;

struct Stats {
  std::vector<double> mean, std, min, max, norm_l1, norm_l2, sum_exp;
};

std::uint64_t reads_of(TransformMethod m) {
  return m == TransformMethod::Zscore || m == TransformMethod::Minmax || m == TransformMethod::Softmax ? 3 : 2;
}

Stats pass_one(const Plan& plan, const Reduction& red, TransformMethod m, const FoldPolicy& policy,
               const ExecContext& ctx) {
  Stats s;
  switch (m) {
    case TransformMethod::Zscore: {
      auto c = fold_stats(plan, red, CellStat::MeanStd, policy, ctx);
      s.mean = std::move(c.a);
      s.std = std::move(c.b);
      break;
    }
    case TransformMethod::Center: s.mean = fold_stats(plan, red, CellStat::MeanStd, policy, ctx).a; break;
    case TransformMethod::Scale: s.std = fold_stats(plan, red, CellStat::MeanStd, policy, ctx).b; break;
    case TransformMethod::Minmax: {
      auto c = fold_stats(plan, red, CellStat::MinMax, policy, ctx);
      s.min = std::move(c.a);
      s.max = std::move(c.b);
      break;
    }
    case TransformMethod::L1: s.norm_l1 = fold_stats(plan, red, CellStat::NormL1, policy, ctx).a; break;
    case TransformMethod::L2: s.norm_l2 = fold_stats(plan, red, CellStat::NormL2, policy, ctx).a; break;
    case TransformMethod::Log1p:
    case TransformMethod::Sqrt: s.min = fold_stats(plan, red, CellStat::Min, policy, ctx).a; break;
    case TransformMethod::Softmax: {
      s.max = fold_stats(plan, red, CellStat::Max, policy, ctx).a;
      // Σ exp(x − max) per cell: a second statistics pass, in plan order.
      s.sum_exp.assign(checked_size(red.cells), 0.0);
      const CellFrame frame = global_frame(red);
      std::vector<std::byte> scratch;
      visit_element(plan.ds->dtype, [&](auto tag) {
        using T = decltype(tag);
        constexpr std::size_t es = std::is_same_v<T, F16> ? 2 : sizeof(T);
        for (std::size_t k = 0; k < plan.chunks.size(); ++k) {
          const std::byte* tile = tile_bytes(plan, k, scratch);
          for_each_run(plan, tile_walk(plan, k), tile, red, frame, [&](const Run& r) {
            for (std::uint64_t j = 0; j < r.n; ++j) {
              const double x = load_f64<T>(r.data + j * r.stride * es);
              const std::uint64_t c = r.cell + j * r.cell_step;
              if (std::isfinite(x)) s.sum_exp[c] += std::exp(x - s.max[c]);
            }
          });
        }
      });
      break;
    }
  }
  return s;
}

// One output element: y, and whether it was forced to NaN (recorded).
struct Out {
  double y;
  bool recorded;
};

Out apply(TransformMethod m, double x, const Stats& s, std::uint64_t c) {
  if (!std::isfinite(x)) return {x, false};  // non-finite inputs pass through unchanged
  auto divide = [](double num, double den) -> Out {
    if (den == 0 || !std::isfinite(den)) return {kNaN, true};
    return {num / den, false};
  };
  switch (m) {
    case TransformMethod::Zscore: return divide(x - s.mean[c], s.std[c]);
    case TransformMethod::Minmax: return divide(x - s.min[c], s.max[c] - s.min[c]);
    case TransformMethod::L1: return divide(x, s.norm_l1[c]);
    case TransformMethod::L2: return divide(x, s.norm_l2[c]);
    case TransformMethod::Center: return {x - s.mean[c], false};
    case TransformMethod::Scale: return divide(x, s.std[c]);
    case TransformMethod::Log1p: return {std::log1p(x - s.min[c]), false};
    case TransformMethod::Sqrt: {
      const double shift = x - s.min[c];
      if (shift < 0) return {kNaN, true};
      return {std::sqrt(shift), false};
    }
    case TransformMethod::Softmax: {
      const double sum = s.sum_exp[c];
      if (sum == 0 || !std::isfinite(sum)) return {kNaN, true};
      return {std::exp(x - s.max[c]) / sum, false};
    }
  }
  return {x, false};
}

struct ChunkRecord {
  std::uint64_t count = 0;
  std::vector<std::uint64_t> first;  // up to kMaxRecorded logical indices
};

// Pass 2: writes every transformed element at its logical index of `out` (dataset dtype).
void pass_two(const Plan& plan, const Reduction& red, TransformMethod m, const Stats& s, std::byte* out, bool parallel,
              const ExecContext& ctx, std::uint64_t& nan_count, std::vector<std::uint64_t>& recorded) {
  std::vector<ChunkRecord> records(plan.chunks.size());
  const CellFrame frame = global_frame(red);
  visit_element(plan.ds->dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      constexpr std::size_t es = sizeof(T);
      for_chunks(plan.chunks.size(), parallel, ctx.threads, plan.read_ahead != nullptr, [&](std::size_t k) {
        thread_local std::vector<std::byte> scratch;
        ChunkRecord& rec = records[k];
        const std::byte* tile = tile_bytes(plan, k, scratch);
        for_each_run(plan, tile_walk(plan, k), tile, red, frame, [&](const Run& r) {
          for (std::uint64_t j = 0; j < r.n; ++j) {
            const Out o = apply(m, load_f64<T>(r.data + j * r.stride * es), s, r.cell + j * r.cell_step);
            const T y = static_cast<T>(o.y);
            std::memcpy(out + (r.logical + j) * es, &y, es);
            if (o.recorded) {
              if (rec.first.size() < kMaxRecorded) rec.first.push_back(r.logical + j);
              ++rec.count;
            }
          }
        });
      });
    }
  });
  for (const auto& rec : records) {
    nan_count += rec.count;
    for (auto i : rec.first)
      if (recorded.size() < kMaxRecorded) recorded.push_back(i);
  }
}

std::string join_x(const std::vector<std::uint64_t>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "x" : "") + std::to_string(v[i]);
  return out;
}

std::string utc_stamp() { return utc_text(std::time(nullptr), "%Y%m%dT%H%M%SZ"); }

// Writes the sidecar (§4.6) from the transformed selection and moves it into place.
void write_sidecar(const Plan& plan, const QueryOperation& op, const std::byte* data, const std::string& destination,
                   const ExecContext& ctx) {
  const std::string method(transform_method_name(op.method));
  const std::string out_name = plan.ds->name + "-" + method;
  const std::string now = std::to_string(std::time(nullptr));
  WriterOptions options;
  HistoryRow row;
  row.op = "transform";
  row.source = ctx.tet_path;
  row.at = now;
  row.parents = {ctx.tet_path};
  row.params["dataset"] = plan.ds->name;
  row.params["method"] = method;
  row.params["output_dataset"] = out_name;
  row.params["logical_selection_shape"] = join_x(plan.logical_shape);
  if (!plan.full_dense) {
    std::vector<std::uint64_t> start, stop, step;
    for (const auto& r : plan.box) {
      start.push_back(r.start);
      stop.push_back(r.stop);
      step.push_back(r.step);
    }
    row.params["selection_box_start"] = join_x(start);
    row.params["selection_box_stop_exclusive"] = join_x(stop);
    if (plan.strided) row.params["selection_step"] = join_x(step);
  }
  options.history.push_back(row);
  FileMetadata file;
  file.tool = "tessera tet query transform";
  file.library_version = kVersion;
  file.created_at = now;
  options.metadata.file = file;
  DatasetMetadata md = plan.md ? *plan.md : DatasetMetadata{};
  md.attrs["derived_from"] = plan.ds->name;
  options.metadata.datasets[out_name] = md;

  {
    // The writer's atomic sink puts the file in place only at commit.
    TetWriter writer(destination, options);
    DatasetSpec spec;
    spec.name = out_name;
    spec.dtype = plan.ds->dtype;
    spec.shape = plan.logical_shape;
    spec.chunk_shape = plan.logical_shape;
    const std::uint32_t id = writer.add_dataset(spec);
    writer.write_dataset(id, {data, checked_size(plan.logical_bytes)});
    writer.commit();
  }
}

Json doubles(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(x);
  return a;
}

}  // namespace

ExecResult run_transform(const Plan& plan, const QueryOperation& op, const std::vector<std::size_t>& axes,
                         const WriteSpec& write, const ExecContext& ctx) {
  ExecResult res;
  res.fold_fields = true;
  res.policy = fold_policy(plan, ctx);
  res.reads = reads_of(op.method);
  const std::size_t es = plan.ds->element_size();

  WriteTarget target = write.target;
  if (target == WriteTarget::Switch) target = plan.logical_bytes <= ctx.budget ? WriteTarget::Ram : WriteTarget::Spill;
  if (target == WriteTarget::Ram && plan.logical_bytes > ctx.budget)
    fail("logical selection (" + std::to_string(plan.count) + " elements, " + std::to_string(plan.logical_bytes) +
         " bytes) exceeds memory_budget_bytes (" + std::to_string(ctx.budget) +
         "); use `write`: `switch` or `spill`, or raise execution.memory_budget_bytes");

  std::string destination;
  if (target == WriteTarget::Spill)
    destination = write.path ? resolve_user_path(*write.path, ctx) : temp_spill_path(ctx, "transform", ".bin");
  if (target == WriteTarget::Sidecar) {
    std::string name = write.path.value_or("");
    if (name.empty()) {
      const std::string stem = fs::path(ctx.tet_path).stem().string();
      name = stem + "." + std::string(transform_method_name(op.method)) +
             (write.timestamp.value_or(true) ? "." + utc_stamp() : "") + ".tet";
    }
    destination = resolve_user_path(name, ctx);
  }

  const Reduction red = make_reduction(plan.logical_shape, axes);
  const Stats stats = pass_one(plan, red, op.method, res.policy, ctx);

  std::unique_ptr<MappedFile> file;
  std::unique_ptr<SpillOutput> spill;
  std::vector<std::uint64_t> memory;  // 8-byte aligned
  std::byte* out;
  if (target == WriteTarget::Ram) {
    memory.resize(checked_size((plan.logical_bytes + 7) / 8));
    out = reinterpret_cast<std::byte*>(memory.data());
  } else if (target == WriteTarget::Spill) {
    spill = std::make_unique<SpillOutput>(destination, plan.logical_bytes);
    out = spill->data();
  } else {
    file = std::make_unique<MappedFile>(temp_spill_path(ctx, "sidecar-data", ".bin"), plan.logical_bytes, false);
    out = file->data();
  }
  std::uint64_t nan_count = 0;
  std::vector<std::uint64_t> recorded;
  pass_two(plan, red, op.method, stats, out, res.policy.parallel, ctx, nan_count, recorded);

  const std::uint64_t shown = std::min(ctx.preview, plan.count);
  for (std::uint64_t i = 0; i < shown; ++i) {
    if (es == 4) {
      float v;
      std::memcpy(&v, out + i * 4, 4);
      res.preview_values.push_back(v);
    } else {
      double v;
      std::memcpy(&v, out + i * 8, 8);
      res.preview_values.push_back(v);
    }
  }

  if (target == WriteTarget::Ram) {
    res.memory_strategy = "transform_ram";
  } else if (target == WriteTarget::Spill) {
    spill->commit();
    res.memory_strategy = "transform_spill";
    res.fields.emplace_back("spill_f32_path", destination);
    res.fields.emplace_back("spill_f32_bytes", plan.logical_bytes);
  } else {
    write_sidecar(plan, op, out, destination, ctx);
    res.memory_strategy = "transform_sidecar";
    res.fields.emplace_back("spill_f32_path", destination);
    res.fields.emplace_back("spill_f32_bytes", plan.logical_bytes);
  }

  const bool scalar = axes.empty();
  auto stat = [&](const char* name, const std::vector<double>& v, bool computed) {
    if (scalar) {
      if (computed) res.fields.emplace_back(std::string("operation_") + name, v[0]);
    } else {
      res.fields.emplace_back(std::string("operation_reduced_") + name, computed ? doubles(v) : Json::array());
    }
  };
  const TransformMethod m = op.method;
  const bool softmax = m == TransformMethod::Softmax;
  stat("mean", stats.mean, !stats.mean.empty());
  stat("min", stats.min, !stats.min.empty());
  stat("max", stats.max, !stats.max.empty());
  stat("std", stats.std, !stats.std.empty());
  stat("norm_l1", stats.norm_l1, !stats.norm_l1.empty() && !softmax);
  stat("norm_l2", stats.norm_l2, !stats.norm_l2.empty() && !softmax);
  res.fields.emplace_back("transform_method", std::string(transform_method_name(m)));
  if (nan_count > 0) {
    Json idx = Json::array();
    for (auto i : recorded) idx.push_back(i);
    res.fields.emplace_back("transform_div_by_zero_indices", std::move(idx));
    res.fields.emplace_back("transform_div_by_zero_count", nan_count);
  }
  return res;
}

}  // namespace tessera::tet::qe
