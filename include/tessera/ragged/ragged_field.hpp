// The store-scoped readers of a ragged field (spec §5): `RaggedField::open(store, "6/h_tdigest")`
// on a Store rooted at a hive leaf (or a flat store), then
//   read_cell        one cell, 2 ranged GETs on a sharded leaf (1 when its chunk is absent)
//   read_tensors     per-block (side, side, n_bins) histograms + 0/1/2 masks (spec §5.3)
//   read_raw_values  per-cell single-observation values
//   read_locations   per-cell location words (the `ragged.locations` sibling only)
//   read_times       per-cell toc words (the `times` sibling only)
//   cell_index       (chunk id, row, col) → global cell index
// Sweeps list the array's stored objects once and read each object in one GET; with `subtree`
// they read each overlapping shard's index and only the covering inner chunks. Inner chunks are
// decoded in parallel (oneTBB); results are delivered in ascending cells-axis order.
//
// Readers never walk the hive tree and read metadata once, at open.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/store.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/ragged_array.hpp"

namespace tessera::ragged {

// A non-fatal condition a reader reports (e.g. `subtree_disjoint`); the CLI prints it.
struct Warning {
  std::string code;
  std::string message;
};
using WarningSink = std::function<void(const Warning&)>;

struct SweepOptions {
  // Restrict to the subtree below this packed area word (see morton::parse_word_or_decimal).
  std::optional<std::uint64_t> subtree;
  WarningSink warn;      // empty: warnings are dropped
  unsigned threads = 0;  // 0: oneTBB's default concurrency
};

enum class FitPolicy : std::uint8_t { Raise, DegradeResolution, CollapseBins };
enum class TensorDType : std::uint8_t { U16, U32, F32 };

// "raise" | "degrade_resolution" | "collapse_bins"; "uint16" | "uint32" | "float32". UsageError
// for anything else.
FitPolicy parse_fit_policy(std::string_view name);
TensorDType parse_tensor_dtype(std::string_view name);
std::string_view name_of(FitPolicy policy) noexcept;
std::string_view name_of(TensorDType dtype) noexcept;
std::size_t item_size(TensorDType dtype) noexcept;

struct TensorOptions {
  std::uint32_t n_bins = 128;  // 1 ≤ n_bins ≤ 2^20
  double resolution = 0.5;     // finite, > 0
  double bottom = 0.05;        // 0 ≤ bottom ≤ top ≤ 1
  double top = 0.95;
  FitPolicy fit = FitPolicy::Raise;
  TensorDType dtype = TensorDType::U32;
  std::optional<int> block_order;  // none: one block per read chunk
  std::optional<std::uint64_t> subtree;
  std::uint64_t max_block_bytes = std::uint64_t{2} << 30;
  WarningSink warn;
  unsigned threads = 0;
};

// One yielded block of read_tensors.
struct TensorBlock {
  std::uint64_t start = 0;   // first cell index of the block on the cells axis
  std::uint64_t morton = 0;  // the block's ancestor word
  int order = 0;             // its order
  std::uint32_t side = 0;    // side × side cells
  std::uint32_t n_bins = 0;  // bins actually used (collapse_bins may use fewer than asked)
  double offset = 0;         // z_lo: bin i covers [offset + i·gain, offset + (i+1)·gain)
  double gain = 0;
  TensorDType dtype = TensorDType::U32;
  std::vector<std::byte> tensor;     // side·side·n_bins elements of dtype, C order (row, col, bin)
  std::vector<std::uint8_t> mask;    // side·side: 0 unobserved / no digest, 1 observed empty, 2 data
  std::uint64_t populated = 0;       // cells with mask 2
  std::uint64_t observed_empty = 0;  // cells with mask 1
  double weight_in_window = 0;       // Σ of all bin counts before the cast
};

// One populated cell of a per-cell sweep. `row`/`col` are chunk-local (depth log4 C).
struct CellValues {
  std::uint64_t chunk_id = 0;
  std::uint32_t row = 0, col = 0;
  std::uint64_t index = 0;  // global cells-axis index (the read_cell key)
  std::vector<double> values;
};
struct CellWords {
  std::uint64_t chunk_id = 0;
  std::uint32_t row = 0, col = 0;
  std::uint64_t index = 0;
  std::vector<std::uint64_t> words;
};

// The cells axis as the `morton` coordinate describes it (spec §3.4, §3.5).
struct CellsAxis {
  std::uint64_t length = 0;
  std::uint64_t chunk_cells = 0;  // C
  int cell_order = 0;             // c: the order of the written words
  int chunk_order = 0;            // c − log4 C
  bool flat = false;              // 12·4^c full-sphere axis (index = NESTED id)
  std::uint64_t root = 0;         // single-root axis: the root word (order c − depth)
  int depth = 0;                  // single-root axis: log4(length)
  std::uint64_t root_start = 0;   // nested(root)·4^depth (0 on a flat axis)
};

// Thread-safety: immutable once opened; every member may be called concurrently. Lifetime: refers
// to the store it was opened on, which must outlive it and its copies.
class RaggedField {
 public:
  // Opens the payload array at `field` with its gates, its bound siblings (FormatError when a
  // bound sibling is missing or does not match the payload's geometry and element), and notes
  // whether `{parent}/morton` exists (readers that need chunk identity refuse without it).
  static RaggedField open(const io::Store& store, std::string field, zarr::ReadOptions options = {});

  const io::Store& store() const noexcept { return *store_; }
  const RaggedArray& payload() const noexcept { return payload_; }
  const std::optional<RaggedArray>& locations() const noexcept { return locations_; }
  const std::optional<RaggedArray>& times() const noexcept { return times_; }
  const std::string& group() const noexcept { return group_; }
  bool has_morton() const noexcept { return morton_.has_value(); }

  RaggedCell read_cell(std::int64_t cell) const { return payload_.read_cell(cell); }

  // Reads the axis description: one LIST of `morton`'s objects and one GET of the first.
  CellsAxis axis() const;

  // Blocks in ascending order. The sink may move a block's vectors out to keep them; the storage
  // it leaves in the block is reused for later blocks (so keep no pointer into a block you did
  // not move from), which makes a sink that only reads its blocks allocate nothing per block.
  void read_tensors(const TensorOptions& options, const std::function<void(TensorBlock&&)>& sink) const;
  std::vector<TensorBlock> read_tensors(const TensorOptions& options = {}) const;

  void read_raw_values(const SweepOptions& options, const std::function<void(CellValues&&)>& sink) const;
  std::vector<CellValues> read_raw_values(const SweepOptions& options = {}) const;
  void read_locations(const SweepOptions& options, const std::function<void(CellWords&&)>& sink) const;
  std::vector<CellWords> read_locations(const SweepOptions& options = {}) const;
  void read_times(const SweepOptions& options, const std::function<void(CellWords&&)>& sink) const;
  std::vector<CellWords> read_times(const SweepOptions& options = {}) const;

  // Spec §5.5: chunk_start + rowcol_to_rank(row, col). UsageError for row/col outside
  // [0, side), a word that is not a read-chunk id (coarser block ids included), or an id no
  // stored chunk carries. Reads only `morton` (2 GETs sharded).
  std::uint64_t cell_index(std::uint64_t chunk_id, std::int64_t row, std::int64_t col) const;

 private:
  RaggedField(const io::Store& store, RaggedArray payload) : store_(&store), payload_(std::move(payload)) {}
  const zarr::Array& morton_array() const;

  const io::Store* store_;
  RaggedArray payload_;
  std::optional<RaggedArray> locations_, times_;
  std::optional<zarr::Array> morton_;
  std::string group_;
};

// Exact occupancy of a leaf (spec §4.5, §5.7).
struct Occupancy {
  enum class Kind : std::uint8_t { None, Full, Bitmap };
  Kind kind = Kind::None;
  std::uint64_t shard = 0;              // Bitmap: the shard word the sidecar was decoded against
  std::vector<std::uint64_t> occupied;  // Bitmap: occupied cell words, ascending
  int cell_order = 0;                   // Bitmap/Full: the envelope's cell order (when given)
};

// Whether cells are observed, looked up word by word for words that mostly come in ascending
// order, as a block's words do: each lookup gallops forward from the one before (about one
// comparison per cell) instead of a binary search of the whole leaf's occupancy, and a word
// before the last one found is searched from the start. Full: every cell; None: none; Bitmap:
// written words (not 0) in `occupied`. The occupancy must outlive the cursor.
class OccupancyCursor {
 public:
  explicit OccupancyCursor(const Occupancy& occupancy) noexcept
      : occupancy_(occupancy), at_(occupancy.occupied.begin()) {}
  bool observed(std::uint64_t word) noexcept;

 private:
  const Occupancy& occupancy_;
  std::vector<std::uint64_t>::const_iterator at_;  // the lower bound of the last word looked up
};

// True iff the store root carries a stamp whose coverage envelope passes the gate and is
// `full`, or `bitmap` with an existing sidecar. One stamp read plus (bitmap) one HEAD.
bool has_exact_occupancy(const io::Store& store);

// Loads the occupancy a tensor mask uses: the sidecar decoded against `axis` (whose root must
// equal the shard a `*.zarr` store name names; the envelope's cell order must equal the axis
// order). Kind::None when the store has no exact occupancy.
Occupancy read_occupancy(const io::Store& store, const CellsAxis& axis);

}  // namespace tessera::ragged
