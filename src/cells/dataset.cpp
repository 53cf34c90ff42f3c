// cells::Dataset: opening, metadata, the decoded-tile LRU and batch gathering (spec
// deltacells.md §8.1, §8.2, §8.4). Fetching and the compressed cache live in tile_cache.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <type_traits>

#include "dataset_impl.hpp"
#include "decode_kernels.hpp"
#include "rules.hpp"
#include "tessera/cells/gene_files.hpp"
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

std::unique_ptr<Dataset> Dataset::open(std::shared_ptr<const io::Store> store, const OpenOptions& options) {
  for (const auto& [name, v] :
       {std::pair{"max_cached_tiles", options.max_cached_tiles},
        std::pair{"max_prefetch_tiles", options.max_prefetch_tiles}, std::pair{"io_threads", options.io_threads},
        std::pair{"decode_threads", options.decode_threads}})
    if (v < 1) throw UsageError(std::string(name) + " must be at least 1, got " + std::to_string(v));
  const auto text = store->get("manifest.json");
  if (!text)
    throw FormatError(store->name() + ": manifest.json is missing (not a deltacells dataset, or an incomplete one)",
                      store->name(), "manifest.json");
  auto impl = std::make_unique<Impl>();
  // Errors name the manifest by its place in the store (`<dataset>/manifest.json`).
  impl->manifest = Manifest::parse({reinterpret_cast<const char*>(text->data()), text->size()},
                                   io::join_key(store->name(), "manifest.json"));
  impl->limits = impl->manifest.limits();
  impl->store = std::move(store);
  impl->options = options;
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
  return static_cast<std::uint64_t>(std::upper_bound(impl_->limits.begin(), impl_->limits.end(), cell) -
                                    impl_->limits.begin());
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
  impl_->free_buffers.clear();
}

const Dataset::Impl::Decoded& Dataset::Impl::decode(std::uint64_t t, const Tile& tile) {
  wait_for_ahead(t);
  for (auto it = decoded.begin(); it != decoded.end(); ++it) {
    if (it->tile == t) {
      decoded.splice(decoded.begin(), decoded, it);
      std::lock_guard lk(cache_mu);
      ++stats.decoded_cache_hits;
      return decoded.front();
    }
  }
  while (!decoded.empty() && decoded.size() >= static_cast<std::size_t>(options.max_cached_tiles)) {
    free_buffers.push_back(std::move(decoded.back()));
    decoded.pop_back();
  }
  Decoded d = take_buffer();
  try {
    decode_into(d, t, tile);
  } catch (...) {
    free_buffers.push_back(std::move(d));
    throw;
  }
  decoded.push_front(std::move(d));
  return decoded.front();
}

Dataset::Impl::Decoded Dataset::Impl::take_buffer() {
  Decoded d;
  if (!free_buffers.empty()) {
    d = std::move(free_buffers.back());
    free_buffers.pop_back();
  }
  if (options.decode_threads > 1 && !decode_arena)
    decode_arena = std::make_unique<tbb::task_arena>(detail::arena_size(static_cast<unsigned>(options.decode_threads)));
  return d;
}

void Dataset::Impl::prepare_buffer(Decoded& d, std::uint64_t t, const Tile& tile) const {
  // Buffers only grow, and are recycled through the free list, so once the largest tile has been
  // decoded nothing is allocated. They are sized from the fetched tile (whose frames were checked
  // to be able to hold its nonzeros), not from the manifest's claims.
  const std::size_t nnz = static_cast<std::size_t>(tile.nnz());
  d.tile = t;
  d.narrow = options.narrow_tiles && tile.narrow_decodable();
  if (d.narrow && d.genes.size() < nnz) {
    d.genes.resize(nnz);
    d.counts.resize(nnz);
  }
  if (!d.narrow && d.indices.size() < nnz) {
    d.indices.resize(nnz);
    d.values.resize(nnz);
  }
  d.wide_counts.clear();
}

void Dataset::Impl::count_decode(std::chrono::steady_clock::time_point t0) {
  std::lock_guard lk(cache_mu);
  ++stats.tiles_decoded;
  stats.decode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Dataset::Impl::decode_into(Decoded& d, std::uint64_t t, const Tile& tile) {
  prepare_buffer(d, t, tile);
  const std::size_t nnz = static_cast<std::size_t>(tile.nnz());
  const DecodeOptions how{.threads = options.decode_threads > 1 ? 0u : 1u};
  const auto run = [&] {
    if (d.narrow) tile.decode_narrow({d.genes.data(), nnz}, {d.counts.data(), nnz}, d.wide_counts, how);
    else tile.decode({d.indices.data(), nnz}, {d.values.data(), nnz}, how);
  };
  const auto t0 = std::chrono::steady_clock::now();
  if (options.decode_threads > 1) decode_arena->execute(run);
  else run();
  count_decode(t0);
}

namespace {

// Batches above this size (indices and values) are written with streaming stores.
constexpr std::uint64_t kStreamBatchBytes = std::uint64_t{16} << 20;

// Copies one row of a decoded tile into a batch, converting the values to V. A batch of an
// epoch (~200 MB) is far larger than the caches, so with `stream` the row is written with
// non-temporal stores: the destination lines are not read in first (a third of the copy's
// memory traffic) and do not evict the decoded tile the next rows come from. The caller fences.
template <typename V>
void copy_row(const std::int32_t* idx, const std::int32_t* val, std::size_t len, std::int32_t* out_idx, V* out_val,
              bool stream) {
#if defined(__SSE2__)
  if (stream) {
    std::size_t j = 0;
    // Scalar until the destinations are 16-byte aligned (both are when their offsets agree).
    const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; };
    for (; j < len && (misaligned(out_idx + j) || misaligned(out_val + j)); ++j) {
      out_idx[j] = idx[j];
      out_val[j] = static_cast<V>(val[j]);
    }
    if ((reinterpret_cast<std::uintptr_t>(out_idx + j) - reinterpret_cast<std::uintptr_t>(out_val + j)) % 16 == 0) {
      // Every load of a step comes before its stores. The four arrays are large allocations at
      // the same offset within a page, so a row copied to its own position (a tile read in
      // order) puts val[j] at the same address bits 0-11 as out_idx[j]: a load issued after
      // that store waits for it (4K aliasing), which made in-order gathers twice as slow.
      for (; j + 8 <= len; j += 8) {
        const __m128i i0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + j));
        const __m128i i1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + j + 4));
        const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(val + j));
        const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(val + j + 4));
        detail::store128<true>(out_idx + j, i0);
        detail::store128<true>(out_idx + j + 4, i1);
        detail::store_counts<true>(out_val + j, v0);
        detail::store_counts<true>(out_val + j + 4, v1);
      }
    }
    idx += j, val += j, out_idx += j, out_val += j, len -= j;
  }
#else
  (void)stream;
#endif
  if (len == 0) return;  // an empty row may come with null pointers, which memcpy must not get
  std::memcpy(out_idx, idx, len * sizeof(std::int32_t));
  if constexpr (std::is_same_v<V, std::int32_t>) std::memcpy(out_val, val, len * sizeof(std::int32_t));
  else std::transform(val, val + len, out_val, [](std::int32_t v) { return static_cast<V>(v); });
}

#if defined(TESSERA_CELLS_AVX2)
// widen_row's streamed loop with AVX2: sixteen nonzeros, four 32-byte stores per step. Both
// destinations must be 32-byte aligned.
template <typename V>
__attribute__((target("avx2"))) std::size_t widen_avx2(const std::uint16_t* genes, const std::uint16_t* counts,
                                                       std::size_t j, std::size_t len, std::int32_t* out_idx,
                                                       V* out_val) {
  for (; j + 16 <= len; j += 16) {
    const __m128i g0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j));
    const __m128i g1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j + 8));
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j));
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j + 8));
    detail::stream_counts256(out_idx + j, _mm256_cvtepu16_epi32(g0));
    detail::stream_counts256(out_idx + j + 8, _mm256_cvtepu16_epi32(g1));
    detail::stream_counts256(out_val + j, _mm256_cvtepu16_epi32(c0));
    detail::stream_counts256(out_val + j + 8, _mm256_cvtepu16_epi32(c1));
  }
  return j;
}
#endif

// copy_row for a narrow decoded tile: widens the uint16 genes and counts to int32 and V.
template <typename V>
void widen_row(const std::uint16_t* genes, const std::uint16_t* counts, std::size_t len, std::int32_t* out_idx,
               V* out_val, bool stream) {
  std::size_t j = 0;
#if defined(__SSE2__)
  if (stream) {
#if defined(TESSERA_CELLS_AVX2)
    const bool avx2 = detail::cpu_has_avx2();
    const std::size_t align = avx2 ? 32 : 16;
#else
    const std::size_t align = 16;
#endif
    const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % align != 0; };
    for (std::size_t k = 0; k < align / 4 && j < len && (misaligned(out_idx + j) || misaligned(out_val + j));
         ++k, ++j) {
      out_idx[j] = genes[j];
      out_val[j] = static_cast<V>(counts[j]);
    }
#if defined(TESSERA_CELLS_AVX2)
    if (avx2 && !misaligned(out_idx + j) && !misaligned(out_val + j))
      j = widen_avx2<V>(genes, counts, j, len, out_idx, out_val);
#endif
    if ((reinterpret_cast<std::uintptr_t>(out_idx + j) - reinterpret_cast<std::uintptr_t>(out_val + j)) % 16 == 0 &&
        reinterpret_cast<std::uintptr_t>(out_idx + j) % 16 == 0) {
      const __m128i z = _mm_setzero_si128();
      for (; j + 8 <= len; j += 8) {
        const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j));
        detail::store128<true>(out_idx + j, _mm_unpacklo_epi16(g, z));
        detail::store128<true>(out_idx + j + 4, _mm_unpackhi_epi16(g, z));
        detail::store_counts<true>(out_val + j, _mm_unpacklo_epi16(c, z));
        detail::store_counts<true>(out_val + j + 4, _mm_unpackhi_epi16(c, z));
      }
    }
  }
#else
  (void)stream;
#endif
  for (; j < len; ++j) {  // the compiler vectorizes this loop itself
    out_idx[j] = genes[j];
    out_val[j] = static_cast<V>(counts[j]);
  }
}

// One batch request in progress: validates the cells, groups them by tile, pins and fetches
// those tiles, and writes the output indptr from the tiles' indptr (no decoding). `fill` then
// decodes each tile once, through the LRU, and copies its rows into place. The tiles stay pinned
// until the request is destroyed. Caller holds api_mu (the grouping scratch lives in Impl).
class BatchRequest {
 public:
  BatchRequest(Dataset& ds, Dataset::Impl& impl, std::span<const std::int64_t> cells, std::vector<std::int64_t>& indptr)
      : impl_(impl), cells_(cells), indptr_(indptr) {
    const std::uint64_t n_cells = ds.n_cells();
    for (const auto c : cells)
      if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
        throw UsageError("cell " + std::to_string(c) + " outside the valid range [0, " + std::to_string(n_cells) + ")");
    group(ds);
    impl.pin(impl.plan.tiles);
    guard_.impl = &impl;
    if (impl.plan.tiles.size() > 1) impl.prefetch(impl.plan.tiles);
    // Row lengths from each tile's indptr, then their running sum.
    auto& plan = impl.plan;
    plan.parsed.resize(plan.tiles.size());
    indptr.resize(cells.size() + 1);
    indptr[0] = 0;
    for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
      plan.parsed[k] = impl.get_tile(plan.tiles[k]);
      const auto ip = plan.parsed[k]->indptr();
      const std::uint64_t start = tile_start(k);
      for (std::size_t p = plan.offsets[k]; p < plan.offsets[k + 1]; ++p) {
        const std::size_t i = plan.order[p];
        const std::uint64_t r = static_cast<std::uint64_t>(cells[i]) - start;
        indptr[i + 1] = ip[r + 1] - ip[r];
      }
    }
    std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
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
      const auto& d = impl_.decode(plan.tiles[k], *plan.parsed[k]);
      const std::uint64_t start = tile_start(k);
      const auto ip = plan.parsed[k]->indptr();
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

 private:
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
    std::uint64_t lo = 1, hi = 0, tile = 0;  // bounds of the last cell's tile (empty at first)
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      const auto c = static_cast<std::uint64_t>(cells_[i]);
      if (c < lo || c >= hi) {  // consecutive cells mostly share a tile: skip the search
        tile = ds.tile_of(c);
        lo = tile == 0 ? 0 : impl_.limits[tile - 1];
        hi = impl_.limits[tile];
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
  std::lock_guard lk(impl_->api_mu);
  std::vector<std::int64_t> indptr;
  return BatchRequest(*this, *impl_, cells, indptr).nnz();
}

void Dataset::get_batch(std::span<const std::int64_t> cells, Values values, SparseBatch& out) {
  std::lock_guard lk(impl_->api_mu);
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

SparseBatch Dataset::get_batch(std::span<const std::int64_t> cells, Values values) {
  SparseBatch b;
  get_batch(cells, values, b);
  return b;
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices,
                                                  std::span<std::int32_t> out_values) {
  std::lock_guard lk(impl_->api_mu);
  std::vector<std::int64_t> indptr;
  BatchRequest(*this, *impl_, cells, indptr).fill<std::int32_t>(out_indices, out_values);
  return indptr;
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices, std::span<float> out_values) {
  std::lock_guard lk(impl_->api_mu);
  std::vector<std::int64_t> indptr;
  BatchRequest(*this, *impl_, cells, indptr).fill<float>(out_indices, out_values);
  return indptr;
}

}  // namespace tessera::cells
