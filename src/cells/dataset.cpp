// cells::Dataset: opening, metadata, the decoded-tile LRU and batch gathering (spec
// deltacells.md §8.1, §8.2, §8.4). Fetching and the compressed cache live in tile_cache.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "dataset_impl.hpp"
#include "rules.hpp"
#include "tessera/cells/gene_files.hpp"

namespace tessera::cells {

using detail::fail;

std::string tile_key(std::uint64_t tile) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "tiles/tile_%06llu.dct", static_cast<unsigned long long>(tile));
  return buf;
}

std::string local_path_of(const std::string& path_or_uri) {
  const auto colon = path_or_uri.find("://");
  if (colon == std::string::npos) return path_or_uri;
  const std::string scheme = path_or_uri.substr(0, colon);
  if (scheme == "file") return path_or_uri.substr(colon + 3);
  throw UsageError("unsupported URI scheme " + scheme + "://" + " (supported: local paths, file://)", path_or_uri);
}

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::~Dataset() { close(); }

std::unique_ptr<Dataset> Dataset::open(const std::string& path_or_uri, const OpenOptions& options) {
  const std::string path = local_path_of(path_or_uri);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw IoError("no such file or directory", path);
  if (!std::filesystem::is_directory(path, ec)) throw UsageError(path + " is not a deltacells dataset directory", path);
  return open(std::make_shared<const io::DirectoryStore>(path), options);
}

std::unique_ptr<Dataset> Dataset::open(std::shared_ptr<const io::Store> store, const OpenOptions& options) {
  for (const auto& [name, v] : {std::pair{"max_cached_tiles", options.max_cached_tiles},
                                std::pair{"max_prefetch_tiles", options.max_prefetch_tiles},
                                std::pair{"io_threads", options.io_threads},
                                std::pair{"decode_threads", options.decode_threads}})
    if (v < 1) throw UsageError(std::string(name) + " must be at least 1, got " + std::to_string(v));
  const auto text = store->get("manifest.json");
  if (!text)
    throw FormatError(store->name() + ": manifest.json is missing (not a deltacells dataset, or an incomplete one)",
                      store->name(), "manifest.json");
  auto impl = std::make_unique<Impl>();
  impl->manifest = Manifest::parse({reinterpret_cast<const char*>(text->data()), text->size()});
  impl->limits = impl->manifest.limits();
  impl->store = std::move(store);
  impl->options = options;
  return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
}

const Manifest& Dataset::manifest() const noexcept { return impl_->manifest; }
const io::Store& Dataset::store() const noexcept { return *impl_->store; }
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
  for (auto it = decoded.begin(); it != decoded.end(); ++it) {
    if (it->tile == t) {
      decoded.splice(decoded.begin(), decoded, it);
      std::lock_guard lk(cache_mu);
      ++stats.decoded_cache_hits;
      return decoded.front();
    }
  }
  while (decoded.size() >= static_cast<std::size_t>(options.max_cached_tiles)) {
    free_buffers.push_back(std::move(decoded.back()));
    decoded.pop_back();
  }
  Decoded d;
  if (!free_buffers.empty()) {
    d = std::move(free_buffers.back());
    free_buffers.pop_back();
  }
  // Buffers only grow, and are recycled through the free list, so once the largest tile has been
  // decoded nothing is allocated. They are sized from the fetched tile (whose frames were checked
  // to be able to hold its nonzeros), not from the manifest's claims.
  const std::size_t need = static_cast<std::size_t>(tile.nnz());
  if (d.indices.size() < need) {
    d.indices.resize(need);
    d.values.resize(need);
  }
  d.tile = t;
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t nnz = need;
  try {
    if (options.decode_threads > 1) {
      if (!decode_arena) decode_arena = std::make_unique<tbb::task_arena>(detail::arena_size(static_cast<unsigned>(options.decode_threads)));
      decode_arena->execute([&] { tile.decode({d.indices.data(), nnz}, {d.values.data(), nnz}, {.threads = 0}); });
    } else {
      tile.decode({d.indices.data(), nnz}, {d.values.data(), nnz}, {.threads = 1});
    }
  } catch (...) {
    free_buffers.push_back(std::move(d));
    throw;
  }
  {
    std::lock_guard lk(cache_mu);
    ++stats.tiles_decoded;
    stats.decode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  decoded.push_front(std::move(d));
  return decoded.front();
}

namespace {

// The request grouped by tile: for each distinct tile (in order of first appearance) the
// positions of the request that fall in it.
struct Plan {
  std::vector<std::uint64_t> tile_of_cell;
  std::vector<std::uint64_t> tiles;                 // distinct, first-appearance order
  std::vector<std::vector<std::size_t>> positions;  // per entry of `tiles`
};

// Fetches every tile a request touches (pinned, so the cache keeps them) and computes the
// output indptr; with `fill`, decodes each tile once and copies its rows into place.
template <typename V>
std::vector<std::int64_t> gather(Dataset& ds, Dataset::Impl& impl, std::span<const std::int64_t> cells,
                                 std::span<std::int32_t> out_indices, std::span<V> out_values, bool fill,
                                 std::uint64_t* nnz_out) {
  const std::uint64_t n_cells = ds.n_cells();
  for (const auto c : cells)
    if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
      throw UsageError("cell " + std::to_string(c) + " outside the valid range [0, " + std::to_string(n_cells) + ")");
  Plan plan;
  plan.tile_of_cell.resize(cells.size());
  std::map<std::uint64_t, std::size_t> slot;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::uint64_t t = ds.tile_of(static_cast<std::uint64_t>(cells[i]));
    plan.tile_of_cell[i] = t;
    auto [it, inserted] = slot.emplace(t, plan.tiles.size());
    if (inserted) {
      plan.tiles.push_back(t);
      plan.positions.emplace_back();
    }
    plan.positions[it->second].push_back(i);
  }
  impl.pin(plan.tiles);
  struct Unpin {
    Dataset::Impl& impl;
    const std::vector<std::uint64_t>& tiles;
    ~Unpin() { impl.unpin(tiles); }
  } unpin{impl, plan.tiles};
  if (plan.tiles.size() > 1) impl.prefetch(plan.tiles);

  // Row lengths from each tile's indptr.
  std::vector<std::shared_ptr<const Tile>> tiles(plan.tiles.size());
  std::vector<std::int64_t> indptr(cells.size() + 1, 0);
  for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
    tiles[k] = impl.get_tile(plan.tiles[k]);
    const std::uint64_t start = plan.tiles[k] == 0 ? 0 : impl.limits[plan.tiles[k] - 1];
    const auto ip = tiles[k]->indptr();
    for (const std::size_t i : plan.positions[k]) {
      const std::uint64_t r = static_cast<std::uint64_t>(cells[i]) - start;
      indptr[i + 1] = ip[r + 1] - ip[r];
    }
  }
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  const auto nnz = static_cast<std::uint64_t>(indptr.back());
  if (nnz_out) *nnz_out = nnz;
  if (!fill) return indptr;
  if (out_indices.size() < nnz || out_values.size() < nnz)
    throw UsageError("output buffers hold " + std::to_string(std::min(out_indices.size(), out_values.size())) +
                     " entries; the batch has " + std::to_string(nnz) + " nonzeros");
  for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
    const auto& d = impl.decode(plan.tiles[k], *tiles[k]);
    const std::uint64_t start = plan.tiles[k] == 0 ? 0 : impl.limits[plan.tiles[k] - 1];
    const auto ip = tiles[k]->indptr();
    for (const std::size_t i : plan.positions[k]) {
      const std::uint64_t r = static_cast<std::uint64_t>(cells[i]) - start;
      const auto lo = static_cast<std::size_t>(ip[r]);
      const auto len = static_cast<std::size_t>(ip[r + 1] - ip[r]);
      const auto dst = static_cast<std::size_t>(indptr[i]);
      std::copy_n(d.indices.data() + lo, len, out_indices.data() + dst);
      std::transform(d.values.data() + lo, d.values.data() + lo + len, out_values.data() + dst,
                     [](std::int32_t v) { return static_cast<V>(v); });
    }
  }
  return indptr;
}

}  // namespace

std::uint64_t Dataset::batch_nnz(std::span<const std::int64_t> cells) {
  std::lock_guard lk(impl_->api_mu);
  std::uint64_t nnz = 0;
  gather<std::int32_t>(*this, *impl_, cells, {}, std::span<std::int32_t>{}, false, &nnz);
  return nnz;
}

SparseBatch Dataset::get_batch(std::span<const std::int64_t> cells, Values values) {
  std::lock_guard lk(impl_->api_mu);
  SparseBatch b;
  b.values = values;
  b.n_genes = n_genes();
  std::uint64_t nnz = 0;
  gather<std::int32_t>(*this, *impl_, cells, {}, std::span<std::int32_t>{}, false, &nnz);
  b.indices.resize(nnz);
  if (values == Values::Int32) {
    b.values_int32.resize(nnz);
    b.indptr = gather<std::int32_t>(*this, *impl_, cells, b.indices, std::span<std::int32_t>(b.values_int32), true, nullptr);
  } else {
    b.values_float32.resize(nnz);
    b.indptr = gather<float>(*this, *impl_, cells, b.indices, std::span<float>(b.values_float32), true, nullptr);
  }
  return b;
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices,
                                                  std::span<std::int32_t> out_values) {
  std::lock_guard lk(impl_->api_mu);
  return gather<std::int32_t>(*this, *impl_, cells, out_indices, out_values, true, nullptr);
}

std::vector<std::int64_t> Dataset::get_batch_into(std::span<const std::int64_t> cells,
                                                  std::span<std::int32_t> out_indices, std::span<float> out_values) {
  std::lock_guard lk(impl_->api_mu);
  return gather<float>(*this, *impl_, cells, out_indices, out_values, true, nullptr);
}

}  // namespace tessera::cells
