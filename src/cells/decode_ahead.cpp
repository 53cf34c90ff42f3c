// Decode-ahead (Dataset::decode_ahead): one background thread decodes the tile a consumer will
// need next into the decoded-tile LRU while the consumer gathers the current batch, so an epoch
// on two cores costs about one decode per tile instead of a decode plus a gather.
//
// Protocol. decode_ahead() runs on the consumer's thread between batches (and get_batch starts
// one for the next tile of a batch spanning several while it gathers the current): under api_mu it makes
// room in the LRU (never evicting its most recently used entry, which the consumer is reading),
// takes a buffer and marks the tile in `ahead_tile`; then it hands the job over under ahead_mu.
// The thread fetches and decodes without any lock (a get_batch holds api_mu for its whole
// gather, which is exactly when the decode should run), then inserts the tile under api_mu and
// clears `ahead_tile`. A consumer whose batch needs the tile in flight never decodes it a second
// time: it releases api_mu, helps decode the chunks nobody has taken yet (AheadProgress), and
// then waits on `ahead_cv` for the thread to publish the tile.
//
// Cooperative decoding. The thread decodes chunk after chunk, taking each from an atomic counter
// shared with helpers; a helper takes chunks from the same counter into the same buffer. The
// thread publishes the tile once every taken chunk is done. If any chunk fails, the tile is not
// published and the consumer's get_batch decodes it itself, reporting the error as usual.
#include <algorithm>
#include <chrono>
#include <iterator>

#include "dataset_impl.hpp"

namespace tessera::cells {

bool Dataset::decode_ahead(std::uint64_t tile, std::optional<std::uint64_t> keep) {
  if (tile >= n_tiles())
    throw UsageError("tile " + std::to_string(tile) + " outside the valid range [0, " + std::to_string(n_tiles()) +
                     ")");
  return impl_->decode_ahead(tile, keep);
}

bool Dataset::Impl::decode_ahead(std::uint64_t t, std::optional<std::uint64_t> keep) {
  std::lock_guard lk(api_mu);
  return decode_ahead_locked(t, keep);
}

bool Dataset::Impl::decode_ahead_locked(std::uint64_t t, std::optional<std::uint64_t> keep) {
  if (ahead_tile || options.max_cached_tiles == 1 || find_decoded(t)) return false;
  // Room for one more, evicting from the least recently used end but never the tile the
  // consumer is on (`keep`, else the front).
  if (!keep && !decoded.empty()) keep = decoded.front().tile;
  const auto hot = make_decoded_room(t, keep);
  if (!hot) return false;
  AheadJob job;
  job.tile = t;
  job.buffer = take_buffer();
  job.buffer.hot = *hot;
  job.progress = std::make_shared<AheadProgress>();
  {
    // Lock order: api_mu (held), then ahead_mu; the thread never holds both.
    std::lock_guard lk(ahead_mu);
    if (ahead_stopping) {
      recycle(std::move(job.buffer));
      return false;
    }
    ahead_tile = t;
    ahead_progress = job.progress;
    ahead_job = std::move(job);
    if (!ahead_thread.joinable()) ahead_thread = std::thread([this] { ahead_loop(); });
  }
  ahead_job_cv.notify_one();
  return true;
}

void Dataset::Impl::ahead_loop() {
  for (;;) {
    AheadJob job;
    {
      std::unique_lock lk(ahead_mu);
      ahead_job_cv.wait(lk, [&] { return ahead_stopping || ahead_job.has_value(); });
      if (!ahead_job) return;  // stopping with nothing handed over
      job = std::move(*ahead_job);
      ahead_job.reset();
    }
    AheadProgress& p = *job.progress;
    std::shared_ptr<const Tile> tile;
    try {
      tile = get_tile(job.tile);
      prepare_buffer(job.buffer, job.tile, *tile);
    } catch (...) {
      tile.reset();  // get_batch fetches the tile itself and reports the error
    }
    const auto t0 = std::chrono::steady_clock::now();  // decode time, as decode_into counts it
    // Helpers may join only for single-threaded chunk decoding; with several decode threads the
    // tile is decoded in one parallel call, as get_batch would.
    const bool cooperative = tile && options.decode_threads == 1;
    {
      std::lock_guard lk(p.mu);
      p.ready = true;
      if (cooperative) {
        p.tile = tile;
        p.buffer = &job.buffer;
        p.n_chunks = tile->chunks().size();
        p.wide.resize(p.n_chunks);
      }
    }
    p.cv.notify_all();
    bool ok = tile != nullptr;
    if (cooperative) {
      decode_chunks(p);
      std::unique_lock lk(p.mu);
      p.cv.wait(lk, [&] { return p.done == p.n_chunks; });  // helpers finish their chunks
      ok = !p.error;
      if (ok && job.buffer.narrow)
        for (const auto& list : p.wide)
          job.buffer.wide_counts.insert(job.buffer.wide_counts.end(), list.begin(), list.end());
      if (ok) count_decode(t0);
    } else if (ok) {
      try {
        decode_into(job.buffer, job.tile, *tile);
      } catch (...) {
        ok = false;
      }
    }
    {
      std::lock_guard lk(api_mu);
      if (ok) insert_decoded(std::move(job.buffer));
      else recycle(std::move(job.buffer));
      ahead_tile.reset();
      ahead_progress.reset();
    }
    ahead_cv.notify_all();
  }
}

void Dataset::Impl::decode_chunks(AheadProgress& p) {
  for (;;) {
    const std::size_t k = p.next_chunk.fetch_add(1);
    if (k >= p.n_chunks) return;  // the buffer may be gone once every chunk is done
    Decoded& d = *p.buffer;
    const auto nnz = static_cast<std::size_t>(p.tile->nnz());
    std::exception_ptr error;
    try {
      if (d.narrow) p.tile->decode_chunk_narrow(k, {d.genes.data(), nnz}, {d.counts.data(), nnz}, p.wide[k]);
      else p.tile->decode_chunk(k, {d.indices.data(), nnz}, {d.values.data(), nnz});
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lk(p.mu);
    if (error && !p.error) p.error = error;
    if (++p.done == p.n_chunks) p.cv.notify_all();
  }
}

void Dataset::Impl::wait_for_ahead(std::uint64_t t) {
  if (ahead_tile != t) return;
  // The caller's lock_guard owns api_mu; adopt it for the wait and hand it back afterwards.
  std::unique_lock<std::mutex> lk(api_mu, std::adopt_lock);
  const std::shared_ptr<AheadProgress> progress = ahead_progress;
  lk.unlock();
  {
    // Help with the chunks nobody has taken, once the thread has fetched the tile.
    std::unique_lock plk(progress->mu);
    progress->cv.wait(plk, [&] { return progress->ready; });
    const bool can_help = progress->tile != nullptr;
    plk.unlock();
    if (can_help) decode_chunks(*progress);
  }
  lk.lock();
  ahead_cv.wait(lk, [&] { return ahead_tile != t; });
  lk.release();
}

void Dataset::Impl::stop_decode_ahead() {
  {
    std::lock_guard lk(ahead_mu);
    ahead_stopping = true;
  }
  ahead_job_cv.notify_all();
  if (ahead_thread.joinable()) ahead_thread.join();
}

}  // namespace tessera::cells
