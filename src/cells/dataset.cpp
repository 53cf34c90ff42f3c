// cells::Dataset: opening, metadata and batch gathering (spec
// deltacells.md §8.1, §8.2, §8.4). Fetching and the compressed cache live in tile_cache.cpp, the
// decoded tiles in decoded_cache.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <type_traits>

#include "dataset_impl.hpp"
#include "rules.hpp"
#include "row_copy.hpp"
#include "tessera/cells/batch_columns.hpp"
#include "tessera/cells/gene_files.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cells {

using detail::fail;

std::string tile_key(std::uint64_t tile) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "tiles/tile_%06llu.dct", static_cast<unsigned long long>(tile));
  return buf;
}

std::string local_path_of(const std::string& path_or_uri) { return io::local_path(path_or_uri); }

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::~Dataset() { close(); }

std::unique_ptr<Dataset> Dataset::open(const std::string& path_or_uri, const OpenOptions& options) {
  if (io::is_remote_uri(path_or_uri))
    return open(std::shared_ptr<const io::Store>(io::open_store(path_or_uri)), options);
  const std::string path = local_path_of(path_or_uri);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw IoError("no such file or directory", path);
  if (!std::filesystem::is_directory(path, ec)) throw UsageError(path + " is not a deltacells dataset directory", path);
  return open(std::make_shared<const io::DirectoryStore>(path), options);
}

OpenOptions fetch_depth(OpenOptions options, bool remote, std::uint64_t mean_tile_bytes) {
  constexpr int kLocalThreads = 4, kLocalTiles = 8, kMinRemote = 4, kMaxRemote = 32;
  int depth = kLocalThreads;
  if (remote) {
    const std::uint64_t tiles = kRemoteBytesInFlight / std::max<std::uint64_t>(mean_tile_bytes, 1);
    depth = static_cast<int>(std::clamp<std::uint64_t>(tiles, kMinRemote, kMaxRemote));
  }
  if (options.io_threads == 0) options.io_threads = depth;
  if (options.max_prefetch_tiles == 0) options.max_prefetch_tiles = remote ? depth + 2 : kLocalTiles;
  return options;
}

std::unique_ptr<Dataset> Dataset::open(std::shared_ptr<const io::Store> store, const OpenOptions& options) {
  for (const auto& [name, v] :
       {std::pair{"max_prefetch_tiles", options.max_prefetch_tiles}, std::pair{"io_threads", options.io_threads}})
    if (v < 0)
      throw UsageError(std::string(name) + " must be 0 (chosen for the store) or at least 1, got " + std::to_string(v));
  if (options.decode_threads < 1)
    throw UsageError("decode_threads must be at least 1, got " + std::to_string(options.decode_threads));
  if (options.max_cached_tiles < 0)
    throw UsageError("max_cached_tiles must be 0 (adaptive) or a tile count, got " +
                     std::to_string(options.max_cached_tiles));
  const auto text = store->get("manifest.json");
  if (!text)
    throw FormatError(store->name() + ": manifest.json is missing (not a deltacells dataset, or an incomplete one)",
                      store->name(), "manifest.json");
  auto impl = std::make_unique<Impl>();
  // Errors name the manifest by its place in the store (`<dataset>/manifest.json`).
  impl->manifest = Manifest::parse({reinterpret_cast<const char*>(text->data()), text->size()},
                                   io::join_key(store->name(), "manifest.json"));
  impl->limits = impl->manifest.limits();
  if (!impl->limits.empty() && impl->limits[0] > 0)
    impl->first_tile_inverse = 1.0 / static_cast<double>(impl->limits[0]);
  for (const std::uint64_t bytes : impl->manifest.tile_bytes)
    impl->stored_bytes = add_u64(impl->stored_bytes, bytes).value_or(~std::uint64_t{0});
  const std::uint64_t n_tiles = std::max<std::uint64_t>(impl->manifest.n_tiles(), 1);
  impl->options = fetch_depth(options, store->remote(), impl->stored_bytes / n_tiles);
  impl->store = std::move(store);
  // As many buffers as tiles are cached or in flight at once.
  impl->tile_buffers =
      std::make_shared<io::KeptBuffers>(static_cast<std::size_t>(std::max(impl->options.max_prefetch_tiles, 1)) + 2);
  return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
}

const Manifest& Dataset::manifest() const noexcept { return impl_->manifest; }
const io::Store& Dataset::store() const noexcept { return *impl_->store; }
const OpenOptions& Dataset::options() const noexcept { return impl_->options; }
const std::vector<std::uint64_t>& Dataset::limits() const noexcept { return impl_->limits; }

std::pair<std::uint64_t, std::uint64_t> Dataset::tile_bounds(std::uint64_t tile) const {
  if (tile >= n_tiles())
    throw UsageError("tile " + std::to_string(tile) + " outside [0, " + std::to_string(n_tiles()) + ")");
  return {tile == 0 ? 0 : impl_->limits[tile - 1], impl_->limits[tile]};
}

std::uint64_t Dataset::tile_of(std::uint64_t cell) const {
  if (cell >= n_cells())
    throw UsageError("cell " + std::to_string(cell) + " outside [0, " + std::to_string(n_cells()) + ")");
  return Impl::tile_of(impl_->limits, impl_->first_tile_inverse, cell);
}

const std::vector<std::string>& Dataset::var_names() {
  std::lock_guard lk(impl_->api_mu);
  if (!impl_->var_names) {
    std::vector<std::string> names;
    if (impl_->manifest.has_var_names) {
      const auto bytes = impl_->store->get("var_names.txt");
      if (!bytes) fail("var_names.txt", "", "has_var_names is true but the object is missing", "N4");
      names = decode_var_names({reinterpret_cast<const char*>(bytes->data()), bytes->size()}, n_genes());
    }
    impl_->var_names = std::move(names);
  }
  return *impl_->var_names;
}

const std::vector<std::int32_t>& Dataset::gene_order() {
  std::lock_guard lk(impl_->api_mu);
  if (!impl_->gene_order) {
    std::vector<std::int32_t> order;
    if (impl_->manifest.has_gene_order) {
      const auto src = impl_->store->open("gene_order.npy");
      if (!src) fail("gene_order.npy", "", "has_gene_order is true but the object is missing", "N3");
      order = decode_gene_order(*src, n_genes());
    }
    impl_->gene_order = std::move(order);
  }
  return *impl_->gene_order;
}

std::shared_ptr<const Tile> Dataset::get_tile(std::uint64_t tile) {
  tile_bounds(tile);
  if (impl_->stopping) throw UsageError("dataset is closed");
  return impl_->get_tile(tile);
}

std::size_t Dataset::prefetch(std::span<const std::uint64_t> tiles) {
  for (const auto t : tiles) tile_bounds(t);
  if (impl_->stopping) return 0;
  return impl_->prefetch(tiles);
}

std::size_t Dataset::prefetch_cells(std::span<const std::int64_t> cells) {
  std::vector<std::uint64_t> tiles;
  for (const auto c : cells) {
    if (c < 0) throw UsageError("cell " + std::to_string(c) + " outside [0, " + std::to_string(n_cells()) + ")");
    const auto t = tile_of(static_cast<std::uint64_t>(c));
    if (std::find(tiles.begin(), tiles.end(), t) == tiles.end()) tiles.push_back(t);
  }
  return prefetch(tiles);
}

DatasetStats Dataset::stats() const {
  std::lock_guard lk(impl_->cache_mu);
  return impl_->stats;
}

void Dataset::close() {
  if (!impl_) return;
  impl_->stop();
  std::lock_guard lk(impl_->api_mu);
  impl_->decoded.clear();
  impl_->decoded_entry.clear();
  impl_->free_buffers.clear();
}

namespace {

using detail::copy_row;
using detail::kStreamBatchBytes;
using detail::widen_row;

// One batch request in progress: validates the cells, groups them by tile, pins and fetches
// those tiles, and writes the output indptr from the tiles' indptr (no decoding). `fill` then
// decodes each tile once, through the LRU, and copies its rows into place. The tiles stay pinned
// until the request is destroyed. Caller holds api_mu (the grouping scratch lives in Impl).
class BatchRequest {
 public:
  // `row_lengths` false leaves indptr to fill_kept, which writes it (the rows' full lengths are
  // then not needed, and finding them costs a cache miss per cell).
  BatchRequest(Dataset& ds, Dataset::Impl& impl, std::span<const std::int64_t> cells, std::vector<std::int64_t>& indptr,
               bool row_lengths = true)
      : impl_(impl), cells_(cells), indptr_(indptr) {
    ++impl.requests;
    const std::uint64_t n_cells = ds.n_cells();
    for (const auto c : cells)
      if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
        throw UsageError("cell " + std::to_string(c) + " outside the valid range [0, " + std::to_string(n_cells) + ")");
    group(ds);
    impl.pin(impl.plan.tiles);
    guard_.impl = &impl;
    // Tiles already decoded answer from their own copy of the indptr: only the others are
    // fetched (a batch from a dataset kept decoded reads nothing from the store).
    auto& plan = impl.plan;
    plan.to_fetch.clear();
    for (const auto t : plan.tiles)
      if (!impl.find_decoded(t)) plan.to_fetch.push_back(t);
    if (plan.to_fetch.size() > 1) impl.prefetch(plan.to_fetch);
    // Row lengths from each tile's indptr, then their running sum.
    plan.parsed.assign(plan.tiles.size(), nullptr);
    indptr.resize(cells.size() + 1);
    indptr[0] = 0;
    for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
      std::span<const std::int64_t> ip;
      if (const auto* d = impl.find_decoded(plan.tiles[k])) {
        ip = d->indptr;
      } else {
        plan.parsed[k] = impl.get_tile(plan.tiles[k]);
        ip = plan.parsed[k]->indptr();
      }
      if (!row_lengths) continue;
      const std::uint64_t start = tile_start(k);
      for (std::size_t p = plan.offsets[k]; p < plan.offsets[k + 1]; ++p) {
        const std::size_t i = plan.order[p];
        const std::uint64_t r = static_cast<std::uint64_t>(cells[i]) - start;
        indptr[i + 1] = ip[r + 1] - ip[r];
      }
    }
    if (row_lengths) std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  }
  BatchRequest(const BatchRequest&) = delete;
  BatchRequest& operator=(const BatchRequest&) = delete;

  std::uint64_t nnz() const noexcept { return static_cast<std::uint64_t>(indptr_.back()); }

  template <typename V>
  void fill(std::span<std::int32_t> out_indices, std::span<V> out_values) {
    const std::uint64_t nnz = this->nnz();
    if (out_indices.size() < nnz || out_values.size() < nnz)
      throw UsageError("output buffers hold " + std::to_string(std::min(out_indices.size(), out_values.size())) +
                       " entries; the batch has " + std::to_string(nnz) + " nonzeros");
    const auto& plan = impl_.plan;
    const bool stream = nnz * 8 > kStreamBatchBytes;
    for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
      const auto& d = decode_tile(k);
      const std::uint64_t start = tile_start(k);
      const auto& ip = d.indptr;
      const auto rows = [&](auto&& each_row) {
        for (std::size_t p = plan.offsets[k]; p < plan.offsets[k + 1]; ++p) {
          const std::size_t i = plan.order[p];
          const std::uint64_t r = static_cast<std::uint64_t>(cells_[i]) - start;
          each_row(static_cast<std::size_t>(ip[r]), static_cast<std::size_t>(ip[r + 1] - ip[r]),
                   static_cast<std::size_t>(indptr_[i]));
        }
      };
      if (!d.narrow) {
        rows([&](std::size_t lo, std::size_t len, std::size_t dst) {
          copy_row<V>(d.indices.data() + lo, d.values.data() + lo, len, out_indices.data() + dst,
                      out_values.data() + dst, stream);
        });
        continue;
      }
      rows([&](std::size_t lo, std::size_t len, std::size_t dst) {
        widen_row<V>(d.genes.data() + lo, d.counts.data() + lo, len, out_indices.data() + dst, out_values.data() + dst,
                     stream);
      });
      if (d.wide_counts.empty()) continue;
        // Counts above 65535 were widened as 65535: overwrite them, after fencing the streamed
        // stores so that these plain ones land last.
#if defined(__SSE2__)
      if (stream) _mm_sfence();
#endif
      const auto& wide = d.wide_counts;
      rows([&](std::size_t lo, std::size_t len, std::size_t dst) {
        auto w = std::lower_bound(wide.begin(), wide.end(), std::uint64_t{lo},
                                  [](const WideCount& c, std::uint64_t pos) { return c.position < pos; });
        for (; w != wide.end() && w->position < lo + len; ++w)
          out_values[dst + (w->position - lo)] = static_cast<V>(w->count);
      });
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence();  // the streamed rows are visible to other threads once we return
#endif
  }

  // The rows with only the genes of plan.kept, numbered as output columns and ascending in each
  // row, into `out` (indptr included). A row's kept nonzeros are known only once its tile is
  // decoded, so they are staged in tile order (kept_genes.hpp) and copied into request order at
  // the end. A tile kept decoded is read through its projection onto these genes, or else its
  // gene index (each built the first time it is worth it).
  template <typename V>
  void fill_kept(SparseBatch& out, std::vector<V>& out_values) {
    if (fill_projected(out, out_values)) return;
    auto& plan = impl_.plan;
    auto& stage = plan.stage;
    stage.reset(cells_.size());
    for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
      decode_tile(k);
      auto& d = *impl_.find_decoded(plan.tiles[k]);  // decode_tile's, mutable for its index
      const std::uint64_t start = tile_start(k);
      plan.tile_rows.clear();
      for (std::size_t p = plan.offsets[k]; p < plan.offsets[k + 1]; ++p)
        plan.tile_rows.push_back({plan.order[p], static_cast<std::uint64_t>(cells_[plan.order[p]]) - start});
      const auto* index = impl_.gene_index_of(d);
      if (!index) detail::stage_scanned(d, plan.tile_rows, plan.kept, stage, indptr_);
      else if (const auto* projection = impl_.projection_of(d, *index))
        detail::stage_projected(*projection, plan.tile_rows, stage, indptr_);
      else detail::stage_indexed(*index, plan.tile_rows, plan.kept, stage, indptr_);
    }
    indptr_[0] = 0;
    std::partial_sum(indptr_.begin(), indptr_.end(), indptr_.begin());
    // A repeated cell is staged once by the gene index and copied once per request.
    const auto nnz = static_cast<std::size_t>(indptr_.back());
    out.indices.resize(nnz);
    out_values.resize(nnz);
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      const auto to = static_cast<std::uint64_t>(indptr_[i]), len = static_cast<std::uint64_t>(indptr_[i + 1]) - to;
      const std::uint64_t from = stage.first[i];
      for (std::uint64_t e = 0; e < len; ++e) {  // a few per row: a loop, not a call to memmove
        out.indices[to + e] = stage.columns[from + e];
        out_values[to + e] = static_cast<V>(stage.counts[from + e]);
      }
    }
  }

 private:
  // fill_kept when every tile is kept decoded with a projection onto plan.kept (the steady state
  // of batches over one gene list): each row's length is known up front, so its entries are
  // copied straight into place, with no staging. False, having done nothing, otherwise.
  template <typename V>
  bool fill_projected(SparseBatch& out, std::vector<V>& out_values) {
    auto& plan = impl_.plan;
    auto& projections = plan.projections;
    projections.clear();
    for (const auto t : plan.tiles) {
      const auto* d = impl_.find_decoded(t);
      if (!d || !d->projection.onto(plan.kept.columns)) return false;
      projections.push_back(&d->projection);
    }
    const auto each_row = [&](auto&& fn) {
      for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
        const std::uint64_t start = tile_start(k);
        for (std::size_t p = plan.offsets[k]; p < plan.offsets[k + 1]; ++p) {
          const std::size_t i = plan.order[p];
          fn(*projections[k], i, static_cast<std::uint64_t>(cells_[i]) - start);
        }
      }
    };
    // The rows are scattered over the projections: their bounds are independent loads that
    // overlap, and each row's entries are requested while the lengths are summed.
    each_row([&](const detail::GeneProjection& pr, std::size_t i, std::uint64_t r) {
      const std::uint32_t lo = pr.indptr[r];
      __builtin_prefetch(pr.entries.data() + lo);
      indptr_[i + 1] = pr.indptr[r + 1] - lo;
    });
    indptr_[0] = 0;
    std::partial_sum(indptr_.begin(), indptr_.end(), indptr_.begin());
    const auto nnz = static_cast<std::size_t>(indptr_.back());
    out.indices.resize(nnz);
    out_values.resize(nnz);
    each_row([&](const detail::GeneProjection& pr, std::size_t i, std::uint64_t r) {
      const std::uint32_t lo = pr.indptr[r], len = pr.indptr[r + 1] - lo;
      const auto to = static_cast<std::size_t>(indptr_[i]);
      for (std::uint32_t e = 0; e < len; ++e) {  // a few per row: a loop, not a call to memmove
        out.indices[to + e] = pr.entries[lo + e].column;
        out_values[to + e] = static_cast<V>(pr.entries[lo + e].count);
      }
    });
    for (const auto t : plan.tiles) (void)impl_.decode(t, nullptr);  // the LRU order and statistics
    return true;
  }

  // The request's k-th tile, decoded; the next one starts decoding in the background (helped
  // by this thread when it gets there), so a batch over several tiles, such as a whole
  // dataset or random cells, decodes on two cores while it gathers.
  const Dataset::Impl::Decoded& decode_tile(std::size_t k) {
    const auto& plan = impl_.plan;
    const auto& d = impl_.decode(plan.tiles[k], plan.parsed[k].get());
    if (k + 1 < plan.tiles.size()) impl_.decode_ahead_locked(plan.tiles[k + 1], plan.tiles[k]);
    return d;
  }

  std::uint64_t tile_start(std::size_t k) const {
    const std::uint64_t t = impl_.plan.tiles[k];
    return t == 0 ? 0 : impl_.limits[t - 1];
  }

  // Fills plan.tiles (distinct, first-appearance order) and, per tile, the request positions in
  // it (order[offsets[k] .. offsets[k+1])), a counting sort with no per-call allocation once the
  // scratch has grown.
  void group(Dataset& ds) {
    auto& plan = impl_.plan;
    plan.tiles.clear();
    plan.slot_of.resize(cells_.size());
    if (plan.slot_by_tile.size() != ds.n_tiles()) plan.slot_by_tile.assign(ds.n_tiles(), kNoSlot);
    const std::span<const std::uint64_t> limits = impl_.limits;
    const double first_tile_inverse = impl_.first_tile_inverse;
    std::uint64_t lo = 1, hi = 0, tile = 0;  // bounds of the last cell's tile (empty at first)
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      const auto c = static_cast<std::uint64_t>(cells_[i]);
      if (c < lo || c >= hi) {  // consecutive cells mostly share a tile: skip the search
        tile = Dataset::Impl::tile_of(limits, first_tile_inverse, c);  // c was checked by the constructor
        lo = tile == 0 ? 0 : limits[tile - 1];
        hi = limits[tile];
      }
      std::size_t& slot = plan.slot_by_tile[tile];
      if (slot == kNoSlot) {
        slot = plan.tiles.size();
        plan.tiles.push_back(tile);
      }
      plan.slot_of[i] = slot;
    }
    plan.offsets.assign(plan.tiles.size() + 1, 0);
    for (std::size_t i = 0; i < cells_.size(); ++i) ++plan.offsets[plan.slot_of[i] + 1];
    std::partial_sum(plan.offsets.begin(), plan.offsets.end(), plan.offsets.begin());
    plan.order.resize(cells_.size());
    plan.cursor.assign(plan.offsets.begin(), plan.offsets.end() - 1);
    for (std::size_t i = 0; i < cells_.size(); ++i) plan.order[plan.cursor[plan.slot_of[i]]++] = i;
    for (const auto t : plan.tiles) plan.slot_by_tile[t] = kNoSlot;  // leave it clean for the next call
  }

  // Unpins the tiles and drops the references to them, also when the constructor throws after
  // pinning (a member is destroyed then, the request itself is not).
  struct Guard {
    Dataset::Impl* impl = nullptr;
    ~Guard() {
      if (!impl) return;
      impl->unpin(impl->plan.tiles);
      for (auto& t : impl->plan.parsed) t.reset();  // the compressed cache decides what stays alive
    }
  };

  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);
  Dataset::Impl& impl_;
  std::span<const std::int64_t> cells_;
  std::vector<std::int64_t>& indptr_;
  Guard guard_;
};

}  // namespace

std::uint64_t Dataset::batch_nnz(std::span<const std::int64_t> cells) {
  const auto lk = impl_->lock_request();
  std::vector<std::int64_t> indptr;
  return BatchRequest(*this, *impl_, cells, indptr).nnz();
}

void Dataset::get_batch(std::span<const std::int64_t> cells, Values values, SparseBatch& out) {
  const auto lk = impl_->lock_request();
  BatchRequest req(*this, *impl_, cells, out.indptr);
  const auto nnz = static_cast<std::size_t>(req.nnz());
  out.values = values;
  out.n_genes = n_genes();
  // resize() keeps the capacity and zero-fills only growth beyond the current size, so a reused
  // batch of similar size costs neither page faults nor a full clear before it is overwritten.
  out.indices.resize(nnz);
  if (values == Values::Int32) {
    out.values_float32.clear();
    out.values_int32.resize(nnz);
    req.fill<std::int32_t>(out.indices, out.values_int32);
  } else {
    out.values_int32.clear();
    out.values_float32.resize(nnz);
    req.fill<float>(out.indices, out.values_float32);
  }
}

void Dataset::get_batch(std::span<const std::int64_t> cells, std::span<const std::int64_t> genes, Values values,
                        SparseBatch& out) {
  if (genes.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw LimitError("get_batch: more than 2^31 - 1 genes asked for");
  const std::uint64_t n = n_genes();
  for (const auto g : genes)
    if (g < 0 || static_cast<std::uint64_t>(g) >= n)
      throw UsageError("gene column " + std::to_string(g) + " outside [0, " + std::to_string(n) + ")");
  if (genes.size() * 4 > n) {
    // Most nonzeros are kept: staging them would cost a copy more than gathering whole rows and
    // selecting in place (a whole-dataset permutation also runs over threads there).
    get_batch(cells, values, out);
    out = select_columns(std::move(out), genes);
    return;
  }
  const auto lk = impl_->lock_request();
  auto& plan = impl_->plan;
  plan.genes_again = std::equal(genes.begin(), genes.end(), plan.previous_genes.begin(), plan.previous_genes.end());
  // assign is O(n_genes): skipped when it holds these genes already (it may never have been
  // assigned when they are none).
  if (!plan.genes_again || plan.kept.columns != plan.previous_genes || plan.kept.keep.size() != n)
    plan.kept.assign(genes, n);
  plan.previous_genes = plan.kept.columns;
  BatchRequest req(*this, *impl_, cells, out.indptr, /*row_lengths=*/false);
  out.values = values;
  out.n_genes = genes.size();
  if (values == Values::Int32) {
    out.values_float32.clear();
    req.fill_kept<std::int32_t>(out, out.values_int32);
  } else {
    out.values_int32.clear();
    req.fill_kept<float>(out, out.values_float32);
  }
}

SparseBatch Dataset::get_batch(std::span<const std::int64_t> cells, Values values) {
  SparseBatch b;
  get_batch(cells, values, b);
  return b;
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices,
                                                  std::span<std::int32_t> out_values) {
  const auto lk = impl_->lock_request();
  std::vector<std::int64_t> indptr;
  BatchRequest(*this, *impl_, cells, indptr).fill<std::int32_t>(out_indices, out_values);
  return indptr;
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices, std::span<float> out_values) {
  const auto lk = impl_->lock_request();
  std::vector<std::int64_t> indptr;
  BatchRequest(*this, *impl_, cells, indptr).fill<float>(out_indices, out_values);
  return indptr;
}

}  // namespace tessera::cells
