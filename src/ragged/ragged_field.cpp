// Opening a ragged field with its bound siblings (spec §2.4, §5), the per-cell sweep readers
// (spec §5.5), cell_index, and the leaf's exact occupancy (spec §4.5, §5.7).
#include "tessera/ragged/ragged_field.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sweep.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged {
namespace {

std::string parent_of(const std::string& path) {
  const auto cut = path.rfind('/');
  return cut == std::string::npos ? std::string() : path.substr(0, cut);
}

[[noreturn]] void binding_error(const RaggedArray& payload, const std::string& structure, const std::string& rule) {
  const std::string key = payload.array().metadata_key();
  throw FormatError(key + ": " + structure + ": " + rule, key, structure);
}

// Opens a bound sibling and checks it is a uint64 [-1] zagg-ragged/1 array on the payload's
// exact geometry (spec §2.4).
RaggedArray open_sibling(const io::Store& store, const RaggedArray& payload, const std::string& name,
                         const std::string& structure, const zarr::ReadOptions& options) {
  const std::string path = io::join_key(parent_of(payload.path()), name);
  if (!store.exists(io::join_key(path, zarr::kMetadataName)))
    binding_error(payload, structure, "bound sibling '" + path + "' does not exist");
  RaggedArray sib = RaggedArray::open(store, path, options);
  const auto& pm = payload.array().meta();
  const auto& sm = sib.array().meta();
  if (!sib.element().is_words())
    binding_error(
        payload, structure,
        "bound sibling '" + path + "' has element " + sib.element().dtype_name + " (a companion holds uint64 [-1])");
  if (sm.shape != pm.shape || sm.chunk_shape != pm.chunk_shape ||
      sib.array().read_chunk_shape() != payload.array().read_chunk_shape() ||
      sib.array().sharded() != payload.array().sharded())
    binding_error(
        payload, structure,
        "bound sibling '" + path + "' does not share the payload's shape, chunk grid, inner chunk and geometry");
  return sib;
}

template <typename Item>
std::vector<Item> collect(const std::function<void(const std::function<void(Item&&)>&)>& run) {
  std::vector<Item> out;
  run([&](Item&& item) { out.push_back(std::move(item)); });
  return out;
}

}  // namespace

RaggedField RaggedField::open(const io::Store& store, std::string field, zarr::ReadOptions options) {
  RaggedField f(store, RaggedArray::open(store, std::move(field), options));
  f.group_ = parent_of(f.payload_.path());
  if (const auto& name = f.payload_.locations_binding()) {
    f.locations_ = open_sibling(store, f.payload_, *name, "attributes.ragged.locations", options);
    if (const auto& d = f.locations_->temporal())
      binding_error(f.payload_, "attributes.ragged.locations",
                    "bound sibling carries a temporal declaration (" + d->shape + "), not located");
  }
  if (const auto& name = f.payload_.times_binding()) {
    f.times_ = open_sibling(store, f.payload_, *name, "attributes.times", options);
    if (const auto& d = f.times_->temporal(); d && d->shape != "per-centroid")
      binding_error(f.payload_, "attributes.times",
                    "bound sibling's temporal declaration has shape '" + d->shape + "', expected per-centroid");
    if (f.times_->located())
      binding_error(f.payload_, "attributes.times", "bound sibling carries a located declaration, not temporal");
  }
  const std::string morton_path = io::join_key(f.group_, "morton");
  if (store.exists(io::join_key(morton_path, zarr::kMetadataName))) {
    f.morton_.emplace(zarr::Array::open(store, morton_path, options));
    const auto& mm = f.morton_->meta();
    if (mm.data_type.vlen || mm.data_type.dtype != DType::U64 || mm.shape != f.payload_.array().shape())
      throw FormatError(f.morton_->metadata_key() + ": morton: must be a dense uint64 array of the payload's shape",
                        f.morton_->metadata_key(), "morton");
  }
  return f;
}

const zarr::Array& RaggedField::morton_array() const {
  if (!morton_) {
    const std::string path = io::join_key(group_, "morton");
    throw FormatError(
        path + ": missing: the " + payload_.path() + " readers need the sibling morton coordinate for chunk identity",
        path, "morton");
  }
  return *morton_;
}

CellsAxis RaggedField::axis() const {
  detail::MortonCache cache;
  const auto axis = detail::read_axis(payload_, morton_array(), cache);
  if (!axis) throw UsageError(payload_.path() + ": the store holds no written morton word: no cells axis to describe");
  return *axis;
}

namespace {

// Resolves `subtree` for a per-cell sweep: nullopt span = whole store; `skip` when nothing can be
// yielded (empty store, disjoint subtree).
struct ResolvedSpan {
  std::optional<detail::CellSpan> span;
  bool skip = false;
};

ResolvedSpan resolve_subtree(const RaggedArray& payload, const zarr::Array& morton,
                             std::optional<std::uint64_t> subtree, const WarningSink& warn,
                             detail::MortonCache& cache) {
  if (!subtree) return {};
  const auto info = morton::check(*subtree, "subtree", morton::Source::User);
  if (info.point)
    throw UsageError("subtree: " + std::to_string(*subtree) + " is a point word; a subtree needs an area word");
  const auto axis = detail::read_axis(payload, morton, cache);
  if (!axis) return {std::nullopt, true};  // empty store: nothing to yield
  const detail::CellSpan span = detail::subtree_span(*axis, *subtree);
  if (span.empty()) {
    if (warn)
      warn({"subtree_disjoint",
            "subtree " + morton::to_decimal(*subtree) + " is disjoint from the cells axis of " + payload.path() +
                (axis->flat ? std::string(" (full sphere)") : " (root " + morton::to_decimal(axis->root) + ")")});
    return {std::nullopt, true};
  }
  return {span, false};
}

// Sweeps `array` (payload or a sibling) and hands every populated cell inside the span to `cell`.
void per_cell_sweep(
    const RaggedField& field, const zarr::Array& array, const SweepOptions& options, const zarr::Array& morton,
    const std::function<void(const detail::PopulatedChunk&, std::uint64_t rank, std::span<const std::byte>)>& cell) {
  detail::chunk_depth(field.payload());
  detail::MortonCache cache;
  const ResolvedSpan r = resolve_subtree(field.payload(), morton, options.subtree, options.warn, cache);
  if (r.skip) return;
  detail::SweepRequest req{&array, &morton, r.span, options.threads, &cache, {}};
  detail::sweep(req, [&](detail::SweepBatch& batch) {
    for (const detail::PopulatedChunk& chunk : batch.chunks) {
      for (std::uint64_t rank = 0; rank < chunk.cells.size(); ++rank) {
        const auto payload = chunk.cells[rank];
        if (payload.empty()) continue;
        const std::uint64_t index = chunk.start + rank;
        if (r.span && (index < r.span->begin || index >= r.span->end)) continue;
        cell(chunk, rank, payload);
      }
    }
  });
}

std::vector<std::uint64_t> decode_words(const RaggedArray& array, std::span<const std::byte> payload,
                                        std::uint64_t index) {
  std::vector<std::uint64_t> out(array.rows_of(payload, index));
  if (!out.empty()) std::memcpy(out.data(), payload.data(), out.size() * 8);
  return out;
}

}  // namespace

void RaggedField::read_raw_values(const SweepOptions& options, const std::function<void(CellValues&&)>& sink) const {
  if (payload_.weights() == Weights::Flux)
    throw UsageError(payload_.path() +
                     ": read_raw_values is refused on a flux field (weights are photoelectron estimates, not counts)");
  const Element& el = payload_.element();
  const bool digest = el.is_tdigest();
  if (!digest && !(el.inner_shape.empty() && el.dtype != DType::Bool))
    throw UsageError(payload_.path() + ": read_raw_values needs a t-digest or flat numeric element");
  per_cell_sweep(*this, payload_.array(), options, morton_array(),
                 [&](const detail::PopulatedChunk& chunk, std::uint64_t rank, auto payload) {
                   const std::uint64_t index = chunk.start + rank;
                   const std::uint64_t rows = payload_.rows_of(payload, index);
                   CellValues out;
                   out.chunk_id = chunk.chunk_id;
                   const auto rc = morton::rank_to_rowcol(rank);
                   out.row = rc.row, out.col = rc.col;
                   out.index = index;
                   out.values.resize(rows);
                   for (std::uint64_t i = 0; i < rows; ++i) {
                     if (!digest) {
                       visit_dtype(el.dtype, [&](auto t) {
                         using T = decltype(t);
                         out.values[i] = static_cast<double>(load_le<T>(payload.data() + i * sizeof(T)));
                       });
                       continue;
                     }
                     out.values[i] = static_cast<double>(load_le<float>(payload.data() + i * 8));
                     const float w = load_le<float>(payload.data() + i * 8 + 4);
                     if (w != 1.0f)
                       throw UsageError(payload_.path() + ": cell " + std::to_string(index) + " of chunk " +
                                        morton::to_decimal(chunk.chunk_id) + " row " + std::to_string(i) +
                                        " has weight " + std::to_string(w) +
                                        ": read_raw_values needs single-observation centroids (every weight 1)");
                   }
                   sink(std::move(out));
                 });
}

namespace {

void words_sweep(const RaggedField& field, const RaggedArray& sibling, const SweepOptions& options,
                 const zarr::Array& morton, const std::function<void(CellWords&&)>& sink) {
  per_cell_sweep(field, sibling.array(), options, morton,
                 [&](const detail::PopulatedChunk& chunk, std::uint64_t rank, auto payload) {
                   CellWords out;
                   out.chunk_id = chunk.chunk_id;
                   const auto rc = morton::rank_to_rowcol(rank);
                   out.row = rc.row, out.col = rc.col;
                   out.index = chunk.start + rank;
                   out.words = decode_words(sibling, payload, out.index);
                   sink(std::move(out));
                 });
}

}  // namespace

void RaggedField::read_locations(const SweepOptions& options, const std::function<void(CellWords&&)>& sink) const {
  if (!locations_) throw UsageError(payload_.path() + ": the field is not located (no ragged.locations binding)");
  words_sweep(*this, *locations_, options, morton_array(), sink);
}

void RaggedField::read_times(const SweepOptions& options, const std::function<void(CellWords&&)>& sink) const {
  if (!times_) throw UsageError(payload_.path() + ": the field has no per-centroid times (no times binding)");
  words_sweep(*this, *times_, options, morton_array(), sink);
}

std::vector<CellValues> RaggedField::read_raw_values(const SweepOptions& options) const {
  return collect<CellValues>([&](const auto& sink) { read_raw_values(options, sink); });
}
std::vector<CellWords> RaggedField::read_locations(const SweepOptions& options) const {
  return collect<CellWords>([&](const auto& sink) { read_locations(options, sink); });
}
std::vector<CellWords> RaggedField::read_times(const SweepOptions& options) const {
  return collect<CellWords>([&](const auto& sink) { read_times(options, sink); });
}
std::vector<TensorBlock> RaggedField::read_tensors(const TensorOptions& options) const {
  return collect<TensorBlock>([&](const auto& sink) { read_tensors(options, sink); });
}

std::uint64_t RaggedField::cell_index(std::uint64_t chunk_id, std::int64_t row, std::int64_t col) const {
  const int depth = detail::chunk_depth(payload_);
  const std::int64_t side = std::int64_t{1} << depth;
  if (row < 0 || row >= side || col < 0 || col >= side)
    throw UsageError(payload_.path() + ": (row " + std::to_string(row) + ", col " + std::to_string(col) +
                     ") outside the read chunk's [0, " + std::to_string(side) + ") square");
  const auto info = morton::check(chunk_id, "chunk id", morton::Source::User);
  const zarr::Array& morton = morton_array();
  detail::MortonCache cache;
  const auto axis = detail::read_axis(payload_, morton, cache);
  const std::string shown = morton::to_decimal(chunk_id);
  if (!axis) throw UsageError(payload_.path() + ": no stored read chunk has id " + shown + " (the store is empty)");
  if (info.point || info.order != axis->chunk_order)
    throw UsageError(payload_.path() + ": " + shown + " is not a read-chunk id: read chunks of this field have order " +
                     std::to_string(axis->chunk_order) + " (a coarser block id names no single chunk)");
  const detail::CellSpan span = detail::subtree_span(*axis, chunk_id);
  const auto unknown = [&]() -> std::uint64_t {
    throw UsageError(payload_.path() + ": no stored read chunk has id " + shown);
  };
  if (span.empty()) return unknown();
  // Confirm the id against the stored words of that chunk (no payload bytes).
  std::vector<std::uint64_t> words;
  const zarr::Box cached = cache.object ? morton.stored_span(*cache.object) : zarr::Box{{0, 0}};
  if (cached[0].begin <= span.begin && span.end <= cached[0].end) {
    words.assign(cache.words.begin() + static_cast<std::ptrdiff_t>(span.begin - cached[0].begin),
                 cache.words.begin() + static_cast<std::ptrdiff_t>(span.end - cached[0].begin));
  } else {
    const auto bytes = morton.read_box({{span.begin, span.end}});
    words.resize(bytes.size() / 8);
    std::memcpy(words.data(), bytes.data(), words.size() * 8);
  }
  int order = axis->cell_order;
  const auto id = detail::chunk_id_of(words, payload_.chunk_cells(), morton.path(), &order);
  if (!id || *id != chunk_id) return unknown();
  return span.begin + morton::rowcol_to_rank(static_cast<std::uint32_t>(row), static_cast<std::uint32_t>(col));
}

bool has_exact_occupancy(const io::Store& store) {
  const auto stamp = hive::read_commit_stamp(store);
  if (!stamp || !stamp->coverage.present) return false;
  const auto& env = stamp->coverage;
  if (env.encoding == hive::CoverageEnvelope::Encoding::Full) return true;
  return env.encoding == hive::CoverageEnvelope::Encoding::Bitmap && env.sidecar && store.exists(*env.sidecar);
}

bool OccupancyCursor::observed(std::uint64_t word) noexcept {
  if (occupancy_.kind != Occupancy::Kind::Bitmap) return occupancy_.kind == Occupancy::Kind::Full;
  if (word == 0) return false;
  const auto begin = occupancy_.occupied.begin(), end = occupancy_.occupied.end();
  if (at_ != begin && *(at_ - 1) >= word) {
    at_ = std::lower_bound(begin, at_, word);  // out of order: search what lies before
  } else {
    // Every word before at_ is below `word`: gallop forward in steps of 1, 2, 4, … until one
    // reaches it, then search the last step.
    std::ptrdiff_t step = 1;
    while (at_ != end && *at_ < word) {
      const auto next = end - at_ > step ? at_ + step : end;
      if (next == end || *next >= word) {
        at_ = std::lower_bound(at_ + 1, next, word);
        break;
      }
      at_ = next;
      step *= 2;
    }
  }
  return at_ != end && *at_ == word;
}

Occupancy read_occupancy(const io::Store& store, const CellsAxis& axis) {
  Occupancy occ;
  const auto stamp = hive::read_commit_stamp(store);
  if (!stamp || !stamp->coverage.present) return occ;
  const auto& env = stamp->coverage;
  const std::string key(zarr::kMetadataName);
  const auto fail = [&](const std::string& rule) {
    throw FormatError(key + ": morton_hive_commit.coverage: " + rule, key, "morton_hive_commit.coverage");
  };
  if (env.encoding == hive::CoverageEnvelope::Encoding::Full) {
    occ.kind = Occupancy::Kind::Full;
    occ.cell_order = env.cell_order ? static_cast<int>(*env.cell_order) : axis.cell_order;
    return occ;
  }
  if (env.encoding != hive::CoverageEnvelope::Encoding::Bitmap || !env.sidecar || axis.flat) return occ;
  const auto object = store.get(*env.sidecar);
  if (!object) return occ;  // missing sidecar: degrade to the 2-state mask
  const int shard_order = axis.cell_order - axis.depth;
  if (!env.cell_order || *env.cell_order <= shard_order || *env.cell_order > morton::kMaxOrder)
    fail("cell_order must be an integer greater than the shard order " + std::to_string(shard_order));
  if (*env.cell_order != axis.cell_order)
    fail("cell_order " + std::to_string(*env.cell_order) + " differs from the cells-axis order " +
         std::to_string(axis.cell_order));
  // A leaf whose basename names a shard must hold that shard's axis.
  const std::string& name = store.name();
  const auto slash = name.find_last_not_of('/');
  const std::string trimmed = slash == std::string::npos ? name : name.substr(0, slash + 1);
  const std::string basename = trimmed.substr(trimmed.rfind('/') == std::string::npos ? 0 : trimmed.rfind('/') + 1);
  if (const auto named = hive::shard_of_basename(basename); named && *named != axis.root)
    fail("the leaf is named for shard " + morton::to_decimal(*named) + " but its morton words lie under " +
         morton::to_decimal(axis.root));
  const int depth = static_cast<int>(*env.cell_order) - shard_order;
  const auto ranks = hive::decode_sidecar(*object, depth, *env.sidecar);
  occ.kind = Occupancy::Kind::Bitmap;
  occ.shard = axis.root;
  occ.cell_order = static_cast<int>(*env.cell_order);
  occ.occupied.reserve(ranks.size());
  for (const std::uint64_t r : ranks) occ.occupied.push_back(morton::descendant(axis.root, depth, r));
  return occ;
}

}  // namespace tessera::ragged
