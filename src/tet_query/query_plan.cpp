// Planning (spec tet.md §4.1, §4.4): op axis and fill resolution, the strided box, the chunk touch
// list and the read plan, the geometry of reductions and tiles, and the fold I/O policy.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <set>

#include "query_internal.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet_query/selection.hpp"

namespace tessera::tet::qe {

Plan build_plan(const TetFile& file, const Dataset& ds, const DatasetMetadata* md,
                const std::vector<SelectionEntry>& selection) {
  Plan p;
  p.file = &file;
  p.ds = &ds;
  p.md = md;
  try {
    // Labels may come from coordinate datasets as well as from the footer's coords.
    const std::optional<DatasetMetadata> labelled =
        selects_by_label(selection) ? with_coordinate_labels(file, ds, md) : std::nullopt;
    p.box = selection.empty() ? ds.full_box() : resolve_selection(ds, labelled ? &*labelled : md, selection);
  } catch (const UsageError& e) {
    fail(e.what());
  }
  const std::size_t nd = ds.ndim();
  std::vector<std::vector<std::uint64_t>> touched(nd);
  std::uint64_t tiles = 1;
  p.count = 1;
  p.full_dense = true;
  for (std::size_t d = 0; d < nd; ++d) {
    const AxisRange& r = p.box[d];
    p.logical_shape.push_back(r.count());
    p.count *= r.count();  // ≤ the dataset's element count, which open() bounded
    if (r.step != 1) p.strided = true;
    if (r.step != 1 || r.start != 0 || r.stop != ds.shape[d]) p.full_dense = false;
    touched[d] = touched_chunks(r, ds.chunk_shape[d]);
    tiles *= touched[d].size();
  }
  p.logical_bytes = p.count * ds.element_size();
  p.chunks.resize(checked_size(tiles));
  for (std::uint64_t t = 0; t < tiles; ++t) {
    PlannedChunk& c = p.chunks[t];
    std::uint64_t rest = t;
    for (std::size_t d = nd; d-- > 0;) {
      c.coords[d] = touched[d][rest % touched[d].size()];
      rest /= touched[d].size();
    }
    c.entry = ds.entry_of_chunk[ds.chunk_ordinal({c.coords.data(), nd})];
  }
  p.contiguous_raw = !p.chunks.empty();
  std::uint64_t raw_total = 0, next = 0;
  for (std::size_t k = 0; k < p.chunks.size(); ++k) {
    const ChunkEntry& e = file.entry(p.chunks[k].entry);
    p.total_stored += e.stored_byte_len;
    raw_total += e.raw_byte_len;
    if (entry_codec(e) != Codec::Raw || (k > 0 && e.payload_offset != next)) p.contiguous_raw = false;
    next = e.payload_offset + e.stored_byte_len;
  }
  if (raw_total != p.logical_bytes) p.contiguous_raw = false;
  std::vector<std::uint32_t> entries;
  entries.reserve(p.chunks.size());
  for (const PlannedChunk& c : p.chunks) entries.push_back(c.entry);
  p.read_ahead = ChunkReadAhead::for_entries(file, entries);
  return p;
}

std::string_view touch_policy(const Plan& plan) {
  return plan.strided ? "strided_half_open_per_axis_json_step_applied_to_chunk_touch_list"
                      : "dense_half_open_intervals_per_axis_json_step_ignored_for_chunk_touch_list";
}

Json read_plan_json(const Plan& plan) {
  const std::size_t nd = plan.ds->ndim();
  auto u64_array = [](auto begin, auto end) {
    Json a = Json::array();
    for (auto it = begin; it != end; ++it) a.push_back(static_cast<std::uint64_t>(*it));
    return a;
  };
  Json chunks = Json::array();
  for (const auto& c : plan.chunks) {
    const ChunkEntry& e = plan.file->entry(c.entry);
    Json row = Json::object();
    row["chunk_index"] = u64_array(c.coords.begin(), c.coords.begin() + nd);
    row["payload_offset"] = e.payload_offset;
    row["stored_byte_len"] = e.stored_byte_len;
    row["raw_byte_len"] = e.raw_byte_len;
    row["codec"] = e.codec;
    chunks.push_back(std::move(row));
  }
  Json start = Json::array(), stop = Json::array(), step = Json::array();
  for (const auto& r : plan.box) {
    start.push_back(r.start);
    stop.push_back(r.stop);
    step.push_back(r.step);
  }
  Json out = Json::object();
  out["chunk_touch_policy"] = std::string(touch_policy(plan));
  out["chunk_count"] = static_cast<std::uint64_t>(plan.chunks.size());
  out["total_stored_bytes"] = plan.total_stored;
  out["chunks"] = std::move(chunks);
  out["dataset_shape"] = u64_array(plan.ds->shape.begin(), plan.ds->shape.end());
  out["chunk_shape"] = u64_array(plan.ds->chunk_shape.begin(), plan.ds->chunk_shape.end());
  out["selection_box_start"] = std::move(start);
  out["selection_box_stop_exclusive"] = std::move(stop);
  out["selection_step"] = std::move(step);
  out["logical_selection_shape"] = u64_array(plan.logical_shape.begin(), plan.logical_shape.end());
  out["logical_f32_element_count"] = plan.count;
  return out;
}

std::vector<std::size_t> resolve_axes(std::vector<std::string>& tokens, const Dataset& ds, const DatasetMetadata* md) {
  const std::size_t nd = ds.ndim();
  std::vector<std::size_t> out;
  for (auto& t : tokens) {
    if (std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      std::uint64_t v = 0;
      const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc() || ptr != t.data() + t.size() || v >= nd)
        fail("operation axis index " + t + " out of range for rank " + std::to_string(nd));
      out.push_back(static_cast<std::size_t>(v));
      continue;  // echoed as written
    }
    if (!md || !md->dim_names) fail("dimension name `" + t + "` requires footer metadata `dim_names` for this dataset");
    const auto& names = *md->dim_names;
    if (names.size() != nd)
      fail("metadata dim_names length " + std::to_string(names.size()) + " does not match dataset rank " +
           std::to_string(nd));
    const auto hits = std::count(names.begin(), names.end(), t);
    if (hits == 0) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      fail("unknown dimension name `" + t + "` (dim_names: " + list + ")");
    }
    if (hits > 1) fail("ambiguous dimension name `" + t + "` (duplicate dim_names entries)");
    const auto index = static_cast<std::size_t>(std::find(names.begin(), names.end(), t) - names.begin());
    out.push_back(index);
    t = std::to_string(index);
  }
  return out;
}

void check_axes_for_execution(const std::vector<std::size_t>& axes, std::size_t rank) {
  std::set<std::size_t> seen;
  for (std::size_t a : axes)
    if (!seen.insert(a).second) fail("duplicate operation axis index " + std::to_string(a));
  if (!axes.empty() && seen.size() == rank)
    fail("operation axes list reduces every dimension; use \"axes\": [] for a scalar reduction");
}

namespace {

std::optional<double> parse_fill_text(const std::string& raw) {
  std::string s = raw;
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && ws(s.front())) s.erase(s.begin());
  while (!s.empty() && ws(s.back())) s.pop_back();
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "nan" || lower == "+nan" || lower == "-nan") return std::nan("");
  bool negative = false;
  std::string body = lower;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.erase(body.begin());
  }
  if (body == "inf" || body == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (body.empty() || body[0] == '+' || body[0] == '-') return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || ptr != body.data() + body.size()) return std::nullopt;
  return negative ? -v : v;
}

}  // namespace

double resolve_fill(const std::optional<double>& query_fill, const DatasetMetadata* md) {
  if (query_fill) return *query_fill;
  if (md) {
    for (const char* key : {"_FillValue", "missing_value", "fill_value"}) {
      auto it = md->attrs.find(key);
      if (it == md->attrs.end()) continue;
      if (auto v = parse_fill_text(it->second)) return *v;
      fail("invalid fill value \"" + it->second + "\"");
    }
  }
  fail("null_count requires `fill` in the query or dataset attr (_FillValue, missing_value, fill_value)");
}

Reduction make_reduction(const std::vector<std::uint64_t>& shape, const std::vector<std::size_t>& axes) {
  Reduction r;
  r.rank = shape.size();
  if (axes.empty()) {
    for (std::size_t d = 0; d < r.rank; ++d) r.reduced[d] = true;
  } else {
    for (std::size_t a : axes) r.reduced[a] = true;
  }
  std::uint64_t cs = 1, fs = 1;
  for (std::size_t d = r.rank; d-- > 0;) {
    if (r.reduced[d]) {
      r.fiber_stride[d] = fs;
      fs *= shape[d];
    } else {
      r.cell_stride[d] = cs;
      cs *= shape[d];
    }
  }
  r.cells = cs;
  r.fiber_len = fs;
  for (std::size_t d = 0; d < r.rank; ++d)
    if (!r.reduced[d]) r.kept_shape.push_back(shape[d]);
  return r;
}

TileWalk tile_walk(const Plan& plan, std::size_t k) {
  const std::size_t nd = plan.ds->ndim();
  TileWalk w;
  w.rank = nd;
  std::array<std::uint64_t, kMaxRank> origin{};
  plan.ds->tile_extent({plan.chunks[k].coords.data(), nd}, {origin.data(), nd}, {w.extent.data(), nd});
  for (std::size_t d = 0; d < nd; ++d) {
    const AxisRange& r = plan.box[d];
    const std::uint64_t lo = std::max(origin[d], r.start);
    const std::uint64_t first = r.start + (lo - r.start + r.step - 1) / r.step * r.step;
    const std::uint64_t hi = std::min(origin[d] + w.extent[d], r.stop);
    w.step[d] = r.step;
    w.count[d] = first < hi ? (hi - first - 1) / r.step + 1 : 0;
    w.tile_first[d] = first - origin[d];
    w.first_pos[d] = (first - r.start) / r.step;
  }
  return w;
}

const std::byte* tile_view(const Plan& plan, std::size_t k) {
  const ChunkEntry& e = plan.file->entry(plan.chunks[k].entry);
  return entry_codec(e) == Codec::Raw ? plan.file->source().view(e.payload_offset, e.raw_byte_len) : nullptr;
}

const std::byte* tile_bytes(const Plan& plan, std::size_t k, std::vector<std::byte>& scratch) {
  if (const std::byte* v = tile_view(plan, k)) return v;
  if (plan.read_ahead) plan.read_ahead->before(k);
  const std::uint32_t entry = plan.chunks[k].entry;
  plan.file->decode_chunk_into(entry, scratch);
  return scratch.data();
}

FoldPolicy fold_policy(const Plan& plan, const ExecContext& ctx) {
  FoldPolicy p;
  bool out_of_core = false;
  if (!ctx.available) {
    p.io_regime = "unknown";
  } else {
    // available × 8500 / 10000 without overflow for any u64
    const std::uint64_t limit = *ctx.available / 10000 * 8500 + *ctx.available % 10000 * 8500 / 10000;
    out_of_core = plan.logical_bytes > limit;
    p.io_regime = out_of_core ? "out_of_core" : "in_core";
  }
  p.linear_scan = out_of_core && plan.full_dense && plan.contiguous_raw && ctx.fold_parallel_hint != true;
  p.parallel = !p.linear_scan && ctx.fold_parallel_hint.value_or(true) && plan.chunks.size() > 1;
  return p;
}

void for_chunks(std::size_t count, bool parallel, unsigned threads, const std::function<void(std::size_t)>& f) {
  if (!parallel || count <= 1 || threads == 1) {
    for (std::size_t k = 0; k < count; ++k) f(k);
    return;
  }
  auto body = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t k = r.begin(); k != r.end(); ++k) f(k);
    });
  };
  if (threads > 1) {
    tbb::task_arena arena(static_cast<int>(threads));
    arena.execute(body);
  } else {
    body();
  }
}

}  // namespace tessera::tet::qe
