// Planning (spec tet.md §4.1, §4.4): op axis and fill resolution, the strided box, the chunk touch
// list and the read plan, the geometry of reductions and tiles, and the fold I/O policy.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <functional>
#include <mutex>
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

void choose_read_path(Plan& plan) {
  if (plan.chunks.empty()) return;
  // The probe reads the first touched chunks' bytes (at most 16 MiB), which the scan reads next.
  std::uint64_t begin = UINT64_MAX, end = 0;
  bool frames = false;
  for (const PlannedChunk& c : plan.chunks) {
    const ChunkEntry& e = plan.file->entry(c.entry);
    begin = std::min(begin, e.payload_offset);
    end = std::max(end, e.payload_offset + e.stored_byte_len);
    frames = frames || entry_codec(e) != Codec::Raw;
  }
  // Only zstd frames need the probe: raw pieces measure themselves on the fold, and a probe's
  // touches of the map would make their first mapped pieces look cheap.
  if (frames) plan.read_path = io::choose_read_path(plan.file->source(), begin, end - begin, plan.total_stored);
  const io::ReadPath forced = io::configured_read_path();
  const bool local = !plan.read_ahead && plan.file->source().view(0, 0) != nullptr;
  plan.raw_pieces = local && (forced == io::ReadPath::Pread ||
                              (forced == io::ReadPath::Auto && plan.total_stored >= io::kProbeMinScanBytes));
  plan.measure_pieces = plan.raw_pieces && forced == io::ReadPath::Auto;
  if (!plan.read_ahead && plan.total_stored >= io::kProbeMinScanBytes)
    plan.hinted = std::make_shared<std::vector<std::atomic<bool>>>(plan.chunks.size());
}

const std::byte* tile_view(const Plan& plan, std::size_t k) {
  const ChunkEntry& e = plan.file->entry(plan.chunks[k].entry);
  if (entry_codec(e) != Codec::Raw || plan.raw_pieces) return nullptr;
  return plan.file->source().view(e.payload_offset, e.raw_byte_len);
}

bool reads_raw_pieces(const Plan& plan, std::size_t k) {
  return plan.raw_pieces && entry_codec(plan.file->entry(plan.chunks[k].entry)) == Codec::Raw;
}

const std::byte* tile_bytes(const Plan& plan, std::size_t k, std::vector<std::byte>& scratch) {
  if (const std::byte* v = tile_view(plan, k)) return v;
  ChunkReadAhead::Hold hold;
  if (plan.read_ahead) hold = plan.read_ahead->before(k);
  const std::uint32_t entry = plan.chunks[k].entry;
  plan.file->decode_chunk_into(entry, scratch, plan.read_path.chosen);
  return scratch.data();
}

void hint_chunk(const Plan& plan, std::size_t k) {
  if (!plan.hinted || k >= plan.chunks.size() || (*plan.hinted)[k].exchange(true)) return;
  const ChunkEntry& e = plan.file->entry(plan.chunks[k].entry);
  plan.file->source().will_need(e.payload_offset, e.stored_byte_len);
}

namespace {

// Whether fold pieces are viewed in the map or copied out with pread, measured once per process
// on the fold itself: the first pieces alternate between the two ways and each is timed with its
// fold, and the faster per byte is taken from then on. A bare sum is not enough to decide: on
// some machines an mmap sum beats a pread sum while the fold, whose loads also compute, runs
// faster from a copy in the L2 cache than from the map.
class PieceWay {
 public:
  static constexpr int kTrialsPerWay = 48;
  static constexpr int kTrialRun = 4;
  static constexpr std::uint64_t kTrialMinBytes = std::uint64_t{128} << 10;  // timings of less are noise
  static constexpr double kViewMargin = 1.1;

  // Which way the next piece takes (true: view) and whether it is timed.
  bool view_next(bool& timed) {
    const int decided = decided_.load(std::memory_order_acquire);
    timed = false;
    if (decided >= 0) return decided == 1;
    const std::lock_guard lock(mutex_);
    if (trials_[0] >= kTrialsPerWay && trials_[1] >= kTrialsPerWay) return decided_.load() == 1;
    // Runs of kTrialRun pieces take one way, so that a copy's hardware prefetch running on into
    // the next piece's memory flatters at most the first piece of a run of views. The runs are
    // short because the first pieces of a process run slower than the rest (copies timed at
    // 0.12–0.14 ns per byte in the trials and 0.10 after them), and long runs let the way that
    // went first carry more of that.
    const bool view = (trials_[0] + trials_[1]) / kTrialRun % 2 == 1;
    ++trials_[view ? 1 : 0];
    timed = true;
    return view;
  }
  // Every timed piece is recorded; once all are in, the way with the lower median time per byte
  // is fixed (a median, so a piece that lost its CPU or met a cold page cannot decide alone;
  // copies when the pieces were too small to time). Views must win by kViewMargin: a wrong view
  // costs far more than a wrong copy (views ran 1.2–5 × slower than copies where mapped pages
  // were dear, copies at most 1.25 × slower where they were cheap), and copies keep a scan's
  // page faults bounded.
  void record(bool view, std::uint64_t ns, std::uint64_t bytes) {
    const std::lock_guard lock(mutex_);
    if (bytes >= kTrialMinBytes)
      ns_per_byte_[view ? 1 : 0].push_back(static_cast<double>(ns) / static_cast<double>(bytes));
    if (++recorded_ < 2 * kTrialsPerWay) return;
    auto median = [](std::vector<double>& v) {
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    const bool view_wins = !ns_per_byte_[0].empty() && !ns_per_byte_[1].empty() &&
                           median(ns_per_byte_[1]) * kViewMargin < median(ns_per_byte_[0]);
    decided_.store(view_wins ? 1 : 0, std::memory_order_release);
  }

 private:
  std::mutex mutex_;
  std::atomic<int> decided_{-1};
  int trials_[2] = {0, 0};
  int recorded_ = 0;
  std::vector<double> ns_per_byte_[2];  // timed pieces: copies, views
};

PieceWay& piece_way() {
  static PieceWay way;
  return way;
}

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

void for_each_raw_piece(const Plan& plan, std::size_t k, const TileWalk& w,
                        const std::function<void(const TileWalk&, const std::byte*)>& f) {
  constexpr std::uint64_t kPieceBytes = std::uint64_t{512} << 10;  // copy and fold stay in the L2 cache
  const std::size_t nd = w.rank;
  for (std::size_t d = 0; d < nd; ++d)
    if (w.count[d] == 0) return;
  const std::uint64_t es = plan.ds->element_size();
  std::array<std::uint64_t, kMaxRank> ts{};  // tile strides, in elements
  ts[nd - 1] = 1;
  for (std::size_t d = nd - 1; d-- > 0;) ts[d] = ts[d + 1] * w.extent[d + 1];
  // inner[d]: elements from the first to the last one the walk visits on axes after d, plus one.
  std::array<std::uint64_t, kMaxRank + 1> inner{};
  inner[nd] = 1;
  for (std::size_t d = nd; d-- > 0;) inner[d] = inner[d + 1] + (w.count[d] - 1) * w.step[d] * ts[d];
  // The split axis: the outermost one (never the last, whose runs stay whole) whose one index
  // spans at most a piece; pieces take `rows` of its indices and one index of each axis before it.
  std::size_t split = nd == 1 ? 0 : nd - 2;
  for (std::size_t d = 0; nd > 1 && d + 1 < nd; ++d)
    if (inner[d + 1] * es <= kPieceBytes) {
      split = d;
      break;
    }
  const std::uint64_t row_elems = nd == 1 ? inner[0] : w.step[split] * ts[split];
  const std::uint64_t rows =
      nd == 1 ? w.count[0] : std::max<std::uint64_t>(1, kPieceBytes / std::max<std::uint64_t>(1, row_elems * es));
  const ChunkEntry& e = plan.file->entry(plan.chunks[k].entry);
  const io::ByteSource& source = plan.file->source();
  thread_local std::vector<std::byte> buffer;
  std::array<std::uint64_t, kMaxRank> idx{};  // indices of the axes before `split`
  while (true) {
    for (std::uint64_t i = 0; i < w.count[split]; i += rows) {
      const std::uint64_t n = std::min(rows, w.count[split] - i);
      TileWalk pw = w;
      std::uint64_t base = 0;  // the piece's first element, tile-local
      for (std::size_t d = 0; d < nd; ++d) {
        std::uint64_t first = w.tile_first[d];
        if (d < split) {
          first += idx[d] * w.step[d];
          pw.first_pos[d] = w.first_pos[d] + idx[d];
          pw.count[d] = 1;
        } else if (d == split) {
          first += i * w.step[d];
          pw.first_pos[d] = w.first_pos[d] + i;
          pw.count[d] = n;
        }
        base += first * ts[d];
        pw.tile_first[d] = 0;
      }
      const std::uint64_t elems = nd == 1 ? inner[0] : (n - 1) * w.step[split] * ts[split] + inner[split + 1];
      const std::size_t bytes = checked_size(elems * es, "tile piece");
      if (buffer.size() < bytes) buffer.resize(bytes);
      const std::uint64_t at = e.payload_offset + base * es;
      bool timed = false;
      const bool view = plan.measure_pieces && piece_way().view_next(timed);
      const std::uint64_t t0 = timed ? steady_ns() : 0;
      if (view) {
        f(pw, source.view(at, bytes));
      } else {
        source.read_at(at, std::span(buffer).first(bytes));
        f(pw, buffer.data());
      }
      if (timed) piece_way().record(view, steady_ns() - t0, bytes);
    }
    std::size_t d = split;
    while (d-- > 0) {
      if (++idx[d] < w.count[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
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

void for_chunks(std::size_t count, bool parallel, unsigned threads, bool in_order,
                const std::function<void(std::size_t)>& f) {
  if (!parallel || count <= 1 || threads == 1) {
    for (std::size_t k = 0; k < count; ++k) f(k);
    return;
  }
  if (in_order) return for_each_in_order(count, threads, f);
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
