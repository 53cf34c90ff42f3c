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

std::vector<CellBlock> make_blocks(const Reduction& red, const TileWalk& w, std::size_t cell_bytes) {
  constexpr std::uint64_t kBlockBytes = std::uint64_t{256} * 1024;
  const std::uint64_t target = std::max<std::uint64_t>(1, kBlockBytes / cell_bytes);
  std::vector<std::size_t> kept;
  std::uint64_t inner = 1;
  for (std::size_t d = 0; d < red.rank; ++d)
    if (!red.reduced[d]) {
      kept.push_back(d);
      inner *= w.count[d];
    }
  if (inner <= target) return {CellBlock{}};
  // The outermost kept axis whose inner cells fit is cut into slabs; kept axes before it are
  // walked one index at a time.
  std::size_t i = 0;
  for (; i < kept.size(); ++i) {
    inner /= w.count[kept[i]];
    if (inner <= target) break;
  }
  const std::size_t axis = kept[i];
  const std::uint64_t slab = std::max<std::uint64_t>(1, target / inner);
  std::vector<CellBlock> blocks;
  std::array<std::uint64_t, kMaxRank> idx{};
  while (true) {
    for (std::uint64_t lo = 0; lo < w.count[axis]; lo += slab) {
      CellBlock b;
      for (std::size_t o = 0; o < i; ++o) {
        b.cut[kept[o]] = true;
        b.lo[kept[o]] = idx[o];
        b.n[kept[o]] = 1;
      }
      b.cut[axis] = true;
      b.lo[axis] = lo;
      b.n[axis] = std::min(slab, w.count[axis] - lo);
      blocks.push_back(b);
    }
    std::size_t o = i;
    while (o-- > 0) {
      if (++idx[o] < w.count[kept[o]]) break;
      idx[o] = 0;
    }
    if (o == static_cast<std::size_t>(-1)) return blocks;
  }
}

TileWalk restrict_walk(TileWalk w, const CellBlock& b) {
  for (std::size_t d = 0; d < w.rank; ++d) {
    if (!b.cut[d]) continue;
    w.tile_first[d] += b.lo[d] * w.step[d];
    w.first_pos[d] += b.lo[d];
    w.count[d] = b.n[d];
  }
  return w;
}

std::uint64_t group_row_base(const Group& g, const Reduction& red, std::uint64_t row) {
  std::uint64_t global = 0;
  std::size_t kd = g.shape.size();
  for (std::size_t d = red.rank; d-- > 0;) {
    if (red.reduced[d]) continue;
    std::uint64_t i = 0;
    if (kd-- < g.shape.size()) {  // not the innermost kept axis: take its index from `row`
      i = row % g.shape[kd];
      row /= g.shape[kd];
    }
    global += (g.frame.origin[d] + i) * red.cell_stride[d];
  }
  return global;
}

Json f64_array(const std::vector<double>& v) {
  Json a = Json::array();
  a.get_ref<Json::array_t&>().reserve(v.size());
  for (double x : v) a.push_back(x);
  return a;
}

}  // namespace fold

StatCells fold_stats(const Plan& plan, const Reduction& red, CellStat stat, const FoldPolicy& policy,
                     const ExecContext& ctx) {
  return visit_element(plan.ds->dtype,
                       [&](auto tag) { return fold::stats_for<decltype(tag)>(plan, red, stat, policy, ctx); });
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
