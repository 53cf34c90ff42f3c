// Streaming folds (spec tet.md §4.2 `streaming_fold`, §3.5): every tier A/B op, scalar and
// partial, on every dtype, without a buffer of the selection. Chunks are grouped by their
// coordinates on the kept axes (groups own disjoint output cells); each group is cut into a
// fixed number of units whose partial accumulators are merged in plan order, so the result is
// the same with any number of threads and in sequential mode. The plain capped preview and the
// linear scan of §4.4 run through the same machinery.
#include "query_fold_kernels.hpp"

namespace tessera::tet::qe {
namespace fold {

std::vector<Group> make_groups(const Plan& plan, const Reduction& red) {
  std::vector<Group> groups;
  std::map<std::vector<std::uint64_t>, std::size_t> by_key;
  const std::size_t nd = red.rank;
  for (std::size_t k = 0; k < plan.chunks.size(); ++k) {
    std::vector<std::uint64_t> key;
    for (std::size_t d = 0; d < nd; ++d)
      if (!red.reduced[d]) key.push_back(plan.chunks[k].coords[d]);
    auto [it, inserted] = by_key.emplace(key, groups.size());
    if (inserted) {
      Group g;
      const TileWalk w = tile_walk(plan, k);
      std::uint64_t stride = 1;
      for (std::size_t d = nd; d-- > 0;) {
        if (red.reduced[d]) continue;
        g.frame.origin[d] = w.first_pos[d];
        g.frame.stride[d] = stride;
        stride *= w.count[d];
      }
      g.cells = stride;
      for (std::size_t d = 0; d < nd; ++d)
        if (!red.reduced[d]) g.shape.push_back(w.count[d]);
      groups.push_back(std::move(g));
    }
    groups[it->second].chunks.push_back(k);
  }
  return groups;
}

std::vector<Unit> make_units(const std::vector<Group>& groups) {
  std::vector<Unit> units;
  const std::size_t g = groups.size();
  for (std::size_t i = 0; i < g; ++i) {
    const std::size_t members = groups[i].chunks.size();
    std::size_t k;
    if (groups[i].cells * members <= 65536) k = members;
    else k = g >= 8 ? 1 : std::min<std::size_t>(members, (16 + g - 1) / g);
    for (std::size_t s = 0; s < k; ++s) units.push_back({i, members * s / k, members * (s + 1) / k});
  }
  return units;
}

Json f64_array(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(x);
  return a;
}

}  // namespace fold

StatCells fold_stats(const Plan& plan, const Reduction& red, CellStat stat, const FoldPolicy& policy,
                     const ExecContext& ctx) {
  return visit_element(plan.ds->dtype, [&](auto tag) { return fold::stats_for<decltype(tag)>(plan, red, stat, policy, ctx); });
}

ExecResult run_fold(const Plan& plan, const QueryOperation* op, const std::vector<std::size_t>& axes, double fill,
                    const ExecContext& ctx) {
  ExecResult res;
  res.policy = fold_policy(plan, ctx);
  res.fold_fields = op != nullptr;
  res.memory_strategy = op ? "streaming_fold" : "capped_in_memory";
  res.preview.init(ctx.preview, plan.count, plan.ds->element_size());
  if (!op) res.policy.parallel = plan.chunks.size() > 1;
  const Reduction red = make_reduction(plan.logical_shape, axes);
  visit_element(plan.ds->dtype, [&](auto tag) {
    using T = decltype(tag);
    fold::dispatch<T>(plan, op, red, axes.empty(), fill, ctx, res);
  });
  return res;
}

}  // namespace tessera::tet::qe
