// Private pieces shared by the rooms of the query engine: the plan (§4.1), the geometry of a
// reduction (which axes fold into which output cell), the run visitor that walks the selected
// elements of one decoded tile, element loads, and the engine entry points each room provides.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/read_path.hpp"
#include "tessera/tet/read_ahead.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet_query/query_document.hpp"

namespace tessera::tet::qe {

using codec::json::Json;

inline constexpr std::uint64_t kWindowBytes = 67108864;  // 64 MiB linear-scan window

[[noreturn]] inline void fail(const std::string& text) { throw UsageError("validation: " + text); }

struct PlannedChunk {
  std::uint32_t entry = 0;
  std::array<std::uint64_t, kMaxRank> coords{};
};

struct Plan {
  const TetFile* file = nullptr;
  const Dataset* ds = nullptr;
  const DatasetMetadata* md = nullptr;
  Box box;
  std::vector<std::uint64_t> logical_shape;
  std::uint64_t count = 0;           // selected elements
  std::uint64_t logical_bytes = 0;   // count × element size
  std::vector<PlannedChunk> chunks;  // touched chunks, row-major grid order
  std::uint64_t total_stored = 0;
  bool strided = false;     // some step > 1
  bool full_dense = false;  // whole dataset, every step 1
  bool contiguous_raw = false;
  // Fetches `chunks` ahead of the fold when the file is remote (tet/read_ahead.hpp); shared by
  // the plan's copies, null for a local file.
  std::shared_ptr<ChunkReadAhead> read_ahead;
  // How an executing query reaches chunk bytes (io/read_path.hpp), set by choose_read_path.
  // `read_path` is for zstd frames: Mmap decodes them in place, Pread copies them into a reused
  // per-thread buffer first. Raw chunks of a local file are either views of the map (`raw_pieces`
  // false) or read in cache-sized pieces (for_each_raw_piece), each copied out with pread or, when
  // `measure_pieces`, viewed or copied as the process's first pieces measured faster with the fold.
  io::ReadPathProbe read_path;
  bool raw_pieces = false;
  bool measure_pieces = false;
  // Once-per-chunk read-ahead hints to a local file (see hint_chunk); null when none are sent.
  std::shared_ptr<std::vector<std::atomic<bool>>> hinted;
};

Plan build_plan(const TetFile& file, const Dataset& ds, const DatasetMetadata* md,
                const std::vector<SelectionEntry>& selection);
// Picks the plan's read path before it executes: the forced one (TESSERA_READ_PATH), else the
// process's measurement over the first touched chunks (io::choose_read_path).
void choose_read_path(Plan& plan);
Json read_plan_json(const Plan& plan);
std::string_view touch_policy(const Plan& plan);

// Resolves op axis tokens against the dataset (§3.3): returns indices and rewrites the tokens to
// their decimal form. Then the execution-time checks (duplicates, every axis).
std::vector<std::size_t> resolve_axes(std::vector<std::string>& tokens, const Dataset& ds, const DatasetMetadata* md);
void check_axes_for_execution(const std::vector<std::size_t>& axes, std::size_t rank);
// null_count fill: the query's, else the dataset attrs (§3.4).
double resolve_fill(const std::optional<double>& query_fill, const DatasetMetadata* md);

// Which selection axes fold into which output cell. Cells are row-major over the kept axes,
// fibers row-major over the reduced ones (ascending axis order).
struct Reduction {
  std::size_t rank = 0;
  std::array<bool, kMaxRank> reduced{};
  std::vector<std::uint64_t> kept_shape;
  std::uint64_t cells = 1;
  std::uint64_t fiber_len = 1;
  std::array<std::uint64_t, kMaxRank> cell_stride{};   // 0 on reduced axes
  std::array<std::uint64_t, kMaxRank> fiber_stride{};  // 0 on kept axes
};
Reduction make_reduction(const std::vector<std::uint64_t>& logical_shape, const std::vector<std::size_t>& axes);

// A run of selected elements along the last axis of one tile: consecutive logical indices.
struct Run {
  const std::byte* data = nullptr;
  std::uint64_t n = 0;
  std::uint64_t stride = 1;   // in elements, inside the tile
  std::uint64_t logical = 0;  // logical index of the first element
  std::uint64_t cell = 0;     // output cell of the first element (caller's cell frame)
  std::uint64_t cell_step = 0;
  std::uint64_t fiber = 0;  // index inside the reduced fiber of the first element
  std::uint64_t fiber_step = 0;
};

// Cell frame of a caller: cell = Σ (p_d − origin_d) · stride_d over kept axes.
struct CellFrame {
  std::array<std::uint64_t, kMaxRank> origin{};
  std::array<std::uint64_t, kMaxRank> stride{};
};

// Per-axis placement of one touched tile inside the selection.
struct TileWalk {
  std::size_t rank = 0;
  std::array<std::uint64_t, kMaxRank> extent{};      // tile extent
  std::array<std::uint64_t, kMaxRank> tile_first{};  // first selected tile-local index
  std::array<std::uint64_t, kMaxRank> count{};       // selected indices in this tile
  std::array<std::uint64_t, kMaxRank> step{};
  std::array<std::uint64_t, kMaxRank> first_pos{};  // logical position of the first one
};
TileWalk tile_walk(const Plan& plan, std::size_t k);

template <typename F>
void for_each_run(const Plan& plan, const TileWalk& w, const std::byte* tile, const Reduction& red,
                  const CellFrame& frame, F&& f) {
  const std::size_t nd = w.rank;
  const std::size_t es = plan.ds->element_size();
  std::array<std::uint64_t, kMaxRank> tile_stride{}, logical_stride{}, idx{};
  tile_stride[nd - 1] = logical_stride[nd - 1] = 1;
  for (std::size_t d = nd - 1; d-- > 0;) {
    tile_stride[d] = tile_stride[d + 1] * w.extent[d + 1];
    logical_stride[d] = logical_stride[d + 1] * plan.logical_shape[d + 1];
  }
  const std::size_t last = nd - 1;
  Run r;
  r.n = w.count[last];
  r.stride = w.step[last];
  r.cell_step = red.reduced[last] ? 0 : frame.stride[last];
  r.fiber_step = red.fiber_stride[last];
  while (true) {
    std::uint64_t off = 0, logical = 0, cell = 0, fiber = 0;
    for (std::size_t d = 0; d < nd; ++d) {
      const std::uint64_t p = w.first_pos[d] + idx[d];
      off += (w.tile_first[d] + idx[d] * w.step[d]) * tile_stride[d];
      logical += p * logical_stride[d];
      if (red.reduced[d]) fiber += p * red.fiber_stride[d];
      else cell += (p - frame.origin[d]) * frame.stride[d];
    }
    r.data = tile + off * es;
    r.logical = logical;
    r.cell = cell;
    r.fiber = fiber;
    f(r);
    std::size_t d = last;
    while (d-- > 0) {
      if (++idx[d] < w.count[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

// The global cell frame of a reduction (origin 0, the reduction's own strides).
inline CellFrame global_frame(const Reduction& red) {
  CellFrame f;
  f.stride = red.cell_stride;
  return f;
}

// Tile bytes of planned chunk k: a view of the mapped file for raw chunks (Mmap path), else read
// or decoded into `scratch` (one decoded chunk per worker).
const std::byte* tile_bytes(const Plan& plan, std::size_t k, std::vector<std::byte>& scratch);
// The view tile_bytes would return without decoding, or nullptr when chunk k needs a decode.
const std::byte* tile_view(const Plan& plan, std::size_t k);
// Whether a fold reads raw chunk k through for_each_raw_piece.
bool reads_raw_pieces(const Plan& plan, std::size_t k);
// Cuts walk `w` of raw chunk k into pieces of about 512 KiB of contiguous tile bytes, each a whole
// number of runs (a run is never split, so every cell receives the same additions in the same
// order as from a view of the whole tile), copies each into a reused per-thread buffer and calls
// f(piece walk, piece bytes). A piece walk addresses its bytes from the piece's first byte.
void for_each_raw_piece(const Plan& plan, std::size_t k, const TileWalk& w,
                        const std::function<void(const TileWalk&, const std::byte*)>& f);
// Tells a local file, once per chunk, that chunk k will be read soon, so a cold scan streams from
// the disk ahead of the fold (ByteSource::will_need). No-op for small scans and remote files.
void hint_chunk(const Plan& plan, std::size_t k);

// Element loads, promoted to f64 (§3.5). F16 is a tag: its storage is the binary16 bit pattern.
struct F16 {
  std::uint16_t bits;
};
template <typename T>
inline double load_f64(const std::byte* p) noexcept {
  if constexpr (std::is_same_v<T, F16>) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return half_to_double(h);
  } else {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(v);
  }
}
// Calls f(T{}) with the element tag type of a .tet dtype.
template <typename F>
decltype(auto) visit_element(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    case DType::I32: return f(std::int32_t{});
    case DType::I64: return f(std::int64_t{});
    case DType::U8: return f(std::uint8_t{});
    case DType::U16: return f(std::uint16_t{});
    case DType::I16: return f(std::int16_t{});
    case DType::U32: return f(std::uint32_t{});
    case DType::U64: return f(std::uint64_t{});
    case DType::F16: return f(F16{});
    case DType::Bool:
    case DType::I8: break;  // no .tet dtype (§1.4): a plan never carries one
  }
  throw UnsupportedError(std::string("dtype ") + std::string(dtype_info(t).name) + " has no .tet element type");
}

// Everything execution needs besides the plan.
struct ExecContext {
  std::uint64_t preview = 0;
  std::uint64_t budget = 1;
  std::optional<std::uint64_t> available;
  std::optional<bool> fold_parallel_hint;
  unsigned threads = 0;
  std::string relative_base;               // absolute directory for relative spill paths
  std::vector<std::string> allowed_roots;  // canonical allowed spill roots
  std::string tet_path;                    // as given (sidecar history)
};

// Fold policy of §4.4 for a plan.
struct FoldPolicy {
  bool parallel = false;
  bool linear_scan = false;
  std::string io_regime;
};
FoldPolicy fold_policy(const Plan& plan, const ExecContext& ctx);

// The first min(P, n) logical elements as raw element bytes.
struct PreviewBuffer {
  std::uint64_t limit = 0;
  std::size_t es = 0;
  std::vector<std::byte> bytes;
  void init(std::uint64_t preview, std::uint64_t count, std::size_t element_size) {
    limit = std::min(preview, count);
    es = element_size;
    bytes.assign(limit * es, std::byte{0});
  }
  void take(const Run& r) {
    if (r.logical >= limit) return;
    const std::uint64_t n = std::min(r.n, limit - r.logical);
    for (std::uint64_t j = 0; j < n; ++j)
      std::memcpy(bytes.data() + (r.logical + j) * es, r.data + j * r.stride * es, es);
  }
};

// Results of executing an op, as response fields (name → value) plus the strategy facts.
struct ExecResult {
  std::vector<std::pair<std::string, Json>> fields;  // operation_* / transform_* / spill_*
  std::string memory_strategy;
  std::uint64_t reads = 1;   // reads of the plan (transforms read it 2 or 3 times)
  bool fold_fields = false;  // emit fold_parallel / io_regime / fold_linear_scan
  FoldPolicy policy;
  PreviewBuffer preview;
  std::vector<double> preview_values;  // transforms: previews of transformed values
  bool tier_c_zero_preview = false;    // all ten _truncated flags = n > 0
};

// Streaming folds (query_fold.cpp): every A/B op, and the plain preview (op == nullopt).
ExecResult run_fold(const Plan& plan, const QueryOperation* op, const std::vector<std::size_t>& axes, double fill,
                    const ExecContext& ctx);
// Per-cell statistics for transforms (query_fold.cpp): MeanStd → a = mean, b = std; MinMax →
// a = min, b = max; the others fill `a`.
enum class CellStat { MeanStd, MinMax, Min, Max, NormL1, NormL2 };
struct StatCells {
  std::vector<double> a, b;
};
StatCells fold_stats(const Plan& plan, const Reduction& red, CellStat stat, const FoldPolicy& policy,
                     const ExecContext& ctx);
// Tier C (query_materialize.cpp).
ExecResult run_materialize(const Plan& plan, const QueryOperation& op, const std::vector<std::size_t>& axes,
                           const ExecContext& ctx);
// mmap_spill (query_spill.cpp): writes the selection to a user path.
ExecResult run_spill_export(const Plan& plan, const std::string& user_path, const ExecContext& ctx);
// Transforms (query_transform.cpp).
ExecResult run_transform(const Plan& plan, const QueryOperation& op, const std::vector<std::size_t>& axes,
                         const WriteSpec& write, const ExecContext& ctx);

// Spill paths (query_spill.cpp).
std::string resolve_user_path(const std::string& user_path, const ExecContext& ctx);
std::string temp_spill_path(const ExecContext& ctx, const std::string& prefix, const std::string& ext);

// A file of `bytes` bytes mapped read-write (shared), removed on destruction unless kept.
class MappedFile {
 public:
  MappedFile(const std::string& path, std::uint64_t bytes, bool keep);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::byte* data() noexcept { return data_; }
  std::uint64_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }
  void keep() noexcept { keep_ = true; }
  void sync();

 private:
  std::string path_;
  std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  int fd_ = -1;
  bool keep_ = false;
};

// A user-named spill output (`"spill"`, `write.target = "spill"`): the bytes are mapped from the
// atomic sink's temporary file next to the destination and appear under the final name only at
// commit(), so a failed or killed query leaves an earlier file intact and never a partial one
// under the final name. A destination that is not a regular file or a new name is refused (a
// memory map cannot be streamed to a device or FIFO).
class SpillOutput {
 public:
  SpillOutput(const std::string& path, std::uint64_t bytes);
  std::byte* data() noexcept { return map_->data(); }
  // msync, fsync, rename into place.
  void commit();

 private:
  io::AtomicFileSink sink_;  // declared first: the mapping is gone before the sink removes its temp
  std::unique_ptr<MappedFile> map_;
};

// Runs f(k) for every planned chunk index, in parallel unless `parallel` is false. `in_order`:
// threads take the indices in increasing order (tet::for_each_in_order), as a plan's read-ahead
// needs (pass `plan.read_ahead != nullptr`); otherwise the range is split recursively between them.
void for_chunks(std::size_t count, bool parallel, unsigned threads, bool in_order,
                const std::function<void(std::size_t)>& f);

}  // namespace tessera::tet::qe
