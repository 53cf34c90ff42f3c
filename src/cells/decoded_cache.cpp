// The decoded tiles of a cells::Dataset (spec deltacells.md §8.4): an LRU whose buffers are
// recycled, with the admission policy OpenOptions::max_cached_tiles describes. Decoding a tile
// for the first time keeps it only among the two most recent ("transient") tiles, so a single
// pass over a dataset of any size costs two tiles of memory. A tile decoded a second time has
// shown it is reused (random batches, a second epoch) and becomes "hot": hot tiles stay decoded
// up to decoded_cache_bytes. Every function here runs with api_mu held.
#include <algorithm>
#include <chrono>

#include "dataset_impl.hpp"
#include "rules.hpp"

namespace tessera::cells {

namespace {
constexpr std::size_t kTransientTiles = 2;  // the tile being read and the next one (decode-ahead)
}  // namespace

std::uint64_t Dataset::Impl::decoded_bytes(std::uint64_t t) const {
  const bool narrow = options.narrow_tiles && manifest.n_genes <= Tile::kNarrowMaxGenes;
  return manifest.tile_nnz[t] * (narrow ? 2 * sizeof(std::uint16_t) : 2 * sizeof(std::int32_t));
}

std::uint64_t Dataset::Impl::hot_decoded_bytes() const {
  std::uint64_t sum = 0;
  for (const auto& d : decoded)
    if (d.hot) sum += decoded_bytes(d.tile) + d.by_gene.bytes() + d.projection.bytes();
  return sum;
}

const detail::GeneIndex* Dataset::Impl::gene_index_of(Decoded& d) {
  if (d.by_gene.built()) return &d.by_gene;
  if (!d.hot) {
    // Read by its first request only so far: its index would cost more than the scan it saves.
    if (d.first_request == requests || options.max_cached_tiles > 0) return nullptr;
    if (hot_decoded_bytes() + decoded_bytes(d.tile) > options.decoded_cache_bytes) return nullptr;
    d.hot = true;
  }
  const std::uint64_t used = hot_decoded_bytes();
  if (used >= options.decoded_cache_bytes) return nullptr;
  const std::uint64_t room = options.decoded_cache_bytes - used;
  const std::size_t nnz = d.indptr.empty() ? 0 : static_cast<std::size_t>(d.indptr.back());
  const bool built =
      d.narrow ? d.by_gene.build<std::uint16_t, std::uint16_t>(d.indptr, {d.genes.data(), nnz}, {d.counts.data(), nnz},
                                                               d.wide_counts, manifest.n_genes, room)
               : d.by_gene.build<std::int32_t, std::int32_t>(d.indptr, {d.indices.data(), nnz}, {d.values.data(), nnz},
                                                             {}, manifest.n_genes, room);
  if (!built) return nullptr;
  std::lock_guard lk(cache_mu);
  ++stats.gene_indexes_built;
  return &d.by_gene;
}

const detail::GeneProjection* Dataset::Impl::projection_of(Decoded& d, const detail::GeneIndex& index) {
  if (d.projection.onto(plan.kept.columns)) return &d.projection;
  if (!plan.genes_again) return nullptr;
  const std::uint64_t used = hot_decoded_bytes() - d.projection.bytes();  // a stale one is replaced
  if (used >= options.decoded_cache_bytes) return nullptr;
  if (!detail::project(index, plan.kept, plan.stage, options.decoded_cache_bytes - used, d.projection)) return nullptr;
  std::lock_guard lk(cache_mu);
  ++stats.gene_projections_built;
  return &d.projection;
}

std::int32_t detail::DecodedTile::count_at(std::uint64_t j) const {
  if (!narrow) return values[j];
  if (counts[j] != 0xFFFF) return counts[j];
  const auto w = std::lower_bound(wide_counts.begin(), wide_counts.end(), j,
                                  [](const WideCount& c, std::uint64_t pos) { return c.position < pos; });
  return w != wide_counts.end() && w->position == j ? static_cast<std::int32_t>(w->count) : 0xFFFF;
}

Dataset::Impl::Decoded* Dataset::Impl::find_decoded(std::uint64_t t) {
  if (t >= decoded_entry.size() || decoded_entry[t] == decoded.end()) return nullptr;
  return &*decoded_entry[t];
}

Dataset::Impl::Decoded& Dataset::Impl::insert_decoded(Decoded&& d) {
  if (decoded_entry.size() != limits.size()) decoded_entry.assign(limits.size(), decoded.end());
  d.first_request = requests;
  decoded.push_front(std::move(d));
  decoded_entry[decoded.front().tile] = decoded.begin();
  return decoded.front();
}

void Dataset::Impl::recycle(Decoded&& d) {
  d.by_gene.clear();
  d.projection.clear();
  // Two spare buffers cover the transient tiles; more would hold memory no cache accounts for.
  if (free_buffers.size() < kTransientTiles) free_buffers.push_back(std::move(d));
}

std::optional<bool> Dataset::Impl::make_decoded_room(std::uint64_t t, std::optional<std::uint64_t> keep) {
  // Evicts the least recently used entry that `which` accepts (never `keep`); false if none.
  const auto evict_lru = [&](auto&& which) {
    auto victim = std::find_if(decoded.rbegin(), decoded.rend(),
                               [&](const Decoded& d) { return (!keep || d.tile != *keep) && which(d); });
    if (victim == decoded.rend()) return false;
    const auto entry = std::next(victim).base();
    decoded_entry[entry->tile] = decoded.end();
    recycle(std::move(*entry));
    decoded.erase(entry);
    return true;
  };
  const auto count = [&](bool hot) {
    return static_cast<std::size_t>(
        std::count_if(decoded.begin(), decoded.end(), [&](const Decoded& d) { return d.hot == hot; }));
  };
  if (options.max_cached_tiles > 0) {  // a plain LRU of that many tiles
    while (decoded.size() + 1 > static_cast<std::size_t>(options.max_cached_tiles))
      if (!evict_lru([](const Decoded&) { return true; })) return std::nullopt;
    return false;
  }
  if (decoded_before.size() != limits.size()) decoded_before.assign(limits.size(), 0);
  const std::uint64_t bytes = decoded_bytes(t);
  const bool hot = decoded_before[t] != 0 && bytes <= options.decoded_cache_bytes;
  decoded_before[t] = 1;
  if (!hot) {
    while (count(false) + 1 > kTransientTiles)
      if (!evict_lru([](const Decoded& d) { return !d.hot; })) return std::nullopt;
    return false;
  }
  // When only `keep` is left to evict the budget is exceeded by that one tile until it goes.
  while (hot_decoded_bytes() + bytes > options.decoded_cache_bytes)
    if (!evict_lru([](const Decoded& d) { return d.hot; })) break;
  return true;
}

const Dataset::Impl::Decoded& Dataset::Impl::decode(std::uint64_t t, const Tile* tile) {
  wait_for_ahead(t);
  if (Decoded* d = find_decoded(t)) {
    decoded.splice(decoded.begin(), decoded, decoded_entry[t]);
    std::lock_guard lk(cache_mu);
    ++stats.decoded_cache_hits;
    return *d;
  }
  // Room first, so that an evicted buffer is the one this decode reuses. Without `keep` the
  // room can always be made.
  // A tile the request found decoded may have been evicted since (by its other tiles).
  std::shared_ptr<const Tile> fetched;
  if (!tile) {
    fetched = get_tile(t);
    tile = fetched.get();
  }
  const bool hot = make_decoded_room(t, std::nullopt).value_or(false);
  Decoded d = take_buffer();
  try {
    decode_into(d, t, *tile);
  } catch (...) {
    recycle(std::move(d));
    throw;
  }
  d.hot = hot;
  return insert_decoded(std::move(d));
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
  d.indptr.assign(tile.indptr().begin(), tile.indptr().end());
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
  d.by_gene.clear();
  d.projection.clear();
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

}  // namespace tessera::cells
