// The compressed-tile cache of cells::Dataset (spec deltacells.md §8.3): whole-object fetches on
// background threads, stages 1–4 of the validation on the fetch thread, LRU eviction of complete
// entries that no request is using, and failed fetches surfaced once to the caller that waits.
#include <chrono>

#include "dataset_impl.hpp"
#include "rules.hpp"

namespace tessera::cells {

using detail::fail;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::shared_ptr<const Tile> Dataset::Impl::fetch(std::uint64_t t) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string key = tile_key(t);
  // Tiles are read whole: one GET on a remote store; on a local one a mapping, or a pread copy
  // into a reused buffer where this machine makes mapped pages dearer (io/read_path.hpp).
  std::shared_ptr<const io::ByteSource> src =
      io::read_whole_by_path(store->open_whole(key), stored_bytes, tile_buffers);
  if (!src) fail(key, "", "tile object is missing from the dataset", "M7");
  auto tile = std::make_shared<const Tile>(Tile::parse(src, {.verify_crc = options.verify_crc}, key));
  const Manifest& m = manifest;
  if (tile->version() != m.version)
    fail(key, "header",
         "version " + std::to_string(tile->version()) + " != manifest version " + std::to_string(m.version), "D1");
  if (tile->n_cells() != m.tile_cells[t] || tile->n_genes() != m.n_genes)
    fail(key, "header",
         "tile " + std::to_string(t) + " does not match the manifest: " + std::to_string(tile->n_cells()) +
             " cells x " + std::to_string(tile->n_genes()) + " genes, manifest says " +
             std::to_string(m.tile_cells[t]) + " x " + std::to_string(m.n_genes),
         "D2");
  if (tile->nnz() != m.tile_nnz[t])
    throw TileCountMismatch(
        t,
        detail::rule_text(key, "header",
                          "nonzero count " + std::to_string(tile->nnz()) + " differs from the manifest's tile_nnz " +
                              std::to_string(m.tile_nnz[t]),
                          "D3"),
        key);
  if (src->size() != m.tile_bytes[t])
    fail(key, "",
         "object is " + std::to_string(src->size()) + " bytes, manifest tile_bytes says " +
             std::to_string(m.tile_bytes[t]),
         "D4");
  const double secs = seconds_since(t0);
  std::lock_guard lk(cache_mu);
  ++stats.tiles_fetched;
  stats.fetch_seconds += secs;
  return tile;
}

bool Dataset::Impl::make_room() {
  const auto cap = static_cast<std::size_t>(options.max_prefetch_tiles);
  while (cache.size() >= cap) {
    auto victim = cache.end();
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->second.state == State::InFlight || pinned.count(it->first)) continue;
      if (victim == cache.end() || it->second.last_use < victim->second.last_use) victim = it;
    }
    if (victim == cache.end()) return false;
    cache.erase(victim);
  }
  return true;
}

std::shared_ptr<const Tile> Dataset::Impl::get_tile(std::uint64_t t) {
  std::unique_lock lk(cache_mu);
  auto it = cache.find(t);
  if (it != cache.end()) {
    if (it->second.state == State::InFlight) {
      const auto t0 = std::chrono::steady_clock::now();
      cache_cv.wait(lk, [&] {
        const auto e = cache.find(t);
        return e == cache.end() || e->second.state != State::InFlight;
      });
      stats.stall_seconds += seconds_since(t0);
      it = cache.find(t);
      if (it == cache.end()) {
        lk.unlock();
        return get_tile(t);  // evicted after failing for someone else: fetch afresh
      }
    } else if (it->second.state == State::Ready) {
      ++stats.tile_cache_hits;
    }
    if (it->second.state == State::Failed) {
      const std::exception_ptr error = it->second.error;
      cache.erase(it);
      std::rethrow_exception(error);
    }
    it->second.last_use = ++clock;
    return it->second.tile;
  }
  // A new fetch on this thread; cached when there is room.
  const bool cached = make_room();
  if (cached) cache[t].last_use = ++clock;
  lk.unlock();
  std::shared_ptr<const Tile> tile;
  try {
    tile = fetch(t);
  } catch (...) {
    if (cached) {
      lk.lock();
      cache.erase(t);
      cache_cv.notify_all();
    }
    throw;
  }
  if (cached) {
    lk.lock();
    Entry& e = cache[t];
    e.state = State::Ready;
    e.tile = tile;
    cache_cv.notify_all();
  }
  return tile;
}

std::size_t Dataset::Impl::prefetch(std::span<const std::uint64_t> tiles) {
  std::size_t started = 0;
  {
    std::lock_guard lk(cache_mu);
    for (const std::uint64_t t : tiles) {
      // A tile asked for again counts as used: otherwise a tile prefetched early and not read
      // yet is the least recently used entry, and the next prefetch evicts it just before it is
      // needed (the caller then fetches it again, on its own thread).
      if (const auto it = cache.find(t); it != cache.end()) {
        it->second.last_use = ++clock;
        continue;
      }
      if (!make_room()) break;  // every entry in flight or pinned: skip the rest
      Entry& e = cache[t];
      e.last_use = ++clock;
      queue.push_back(t);
      ++started;
    }
  }
  if (started) {
    start_fetchers();
    cache_cv.notify_all();
  }
  return started;
}

void Dataset::Impl::start_fetchers() {
  std::lock_guard lk(cache_mu);
  if (!fetchers.empty() || stopping) return;
  for (int i = 0; i < options.io_threads; ++i) fetchers.emplace_back([this] { fetch_loop(); });
}

void Dataset::Impl::fetch_loop() {
  std::unique_lock lk(cache_mu);
  for (;;) {
    cache_cv.wait(lk, [&] { return stopping || !queue.empty(); });
    if (stopping) return;
    const std::uint64_t t = queue.front();
    queue.pop_front();
    lk.unlock();
    std::shared_ptr<const Tile> tile;
    std::exception_ptr error;
    try {
      tile = fetch(t);
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    const auto it = cache.find(t);
    if (it != cache.end()) {
      it->second.state = error ? State::Failed : State::Ready;
      it->second.tile = std::move(tile);
      it->second.error = error;
    }
    cache_cv.notify_all();
  }
}

void Dataset::Impl::stop() {
  stop_decode_ahead();
  {
    std::lock_guard lk(cache_mu);
    stopping = true;
    queue.clear();
  }
  cache_cv.notify_all();
  for (auto& th : fetchers) th.join();
  fetchers.clear();
  std::lock_guard lk(cache_mu);
  cache.clear();
}

void Dataset::Impl::pin(const std::vector<std::uint64_t>& tiles) {
  std::lock_guard lk(cache_mu);
  for (const auto t : tiles) pinned.insert(t);
}

void Dataset::Impl::unpin(const std::vector<std::uint64_t>& tiles) {
  std::lock_guard lk(cache_mu);
  for (const auto t : tiles) pinned.erase(pinned.find(t));
}

}  // namespace tessera::cells
