#include "tessera/tet/read_ahead.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <exception>

namespace tessera::tet {

void for_each_in_order(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& f) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto take = [&](int) {
    for (std::size_t k; !failed.load(std::memory_order_relaxed) && (k = next.fetch_add(1)) < count;) {
      try {
        f(k);
      } catch (...) {
        failed = true;
        throw;  // parallel_for rethrows the first one in the calling thread
      }
    }
  };
  auto run = [&](int slots) {
    slots = static_cast<int>(std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, slots))));
    if (slots == 1) return take(0);
    tbb::parallel_for(0, slots, 1, take);
  };
  if (threads == 0) {
    run(tbb::this_task_arena::max_concurrency());
  } else if (threads == 1) {
    run(1);
  } else {
    tbb::task_arena arena(static_cast<int>(threads));
    arena.execute([&] { run(static_cast<int>(threads)); });
  }
}

bool ChunkReadAhead::fetches(const TetFile& file) noexcept {
  const auto* source = dynamic_cast<const io::PrefetchingSource*>(&file.source());
  return source != nullptr && source->fetches();
}

std::shared_ptr<ChunkReadAhead> ChunkReadAhead::for_entries(const TetFile& file,
                                                            std::span<const std::uint32_t> entries) {
  if (entries.size() < 2 || !fetches(file)) return nullptr;
  std::vector<io::ByteRange> chunks(entries.size());
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const ChunkEntry& e = file.entry(entries[k]);
    chunks[k] = {e.payload_offset, e.stored_byte_len};
  }
  return for_ranges(file.source(), chunks);
}

std::shared_ptr<ChunkReadAhead> ChunkReadAhead::for_ranges(const io::ByteSource& source,
                                                           std::span<const io::ByteRange> chunks) {
  const auto* prefetching = dynamic_cast<const io::PrefetchingSource*>(&source);
  if (chunks.size() < 2 || prefetching == nullptr || !prefetching->fetches()) return nullptr;
  // Requests of whole chunks, in offset order: a chunk split between two requests would be in
  // neither block whole, and read again on its own.
  std::vector<std::size_t> by_offset(chunks.size());
  for (std::size_t k = 0; k < chunks.size(); ++k) by_offset[k] = k;
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [&](std::size_t a, std::size_t b) { return chunks[a].offset < chunks[b].offset; });
  const io::PrefetchOptions merge;  // the gap and request size every batched read uses
  std::vector<io::ByteRange> requests;
  std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk(chunks.size());
  for (const std::size_t k : by_offset) {
    const io::ByteRange r = chunks[k];
    if (!requests.empty()) {
      io::ByteRange& q = requests.back();
      const std::uint64_t end = q.offset + q.length;
      const std::uint64_t merged_end = std::max(end, r.offset + r.length);
      if (r.offset < end + merge.max_gap && merged_end - q.offset <= merge.max_request) {
        q.length = merged_end - q.offset;
        requests_of_chunk[k] = {requests.size() - 1, requests.size() - 1};
        continue;
      }
    }
    requests.push_back(r);
    requests_of_chunk[k] = {requests.size() - 1, requests.size() - 1};
  }
  return std::make_shared<ChunkReadAhead>(*prefetching, std::move(requests), std::move(requests_of_chunk));
}

ChunkReadAhead::ChunkReadAhead(const io::PrefetchingSource& source, std::vector<io::ByteRange> requests,
                               std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk)
    : source_(source),
      requests_(std::move(requests)),
      requests_of_chunk_(std::move(requests_of_chunk)),
      state_(requests_.size(), State::Idle),
      error_(requests_.size()),
      readers_(requests_.size(), 0) {}

ChunkReadAhead::~ChunkReadAhead() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : fetchers_) t.join();
  for (std::size_t r = forgotten_; r < requests_.size(); ++r)
    if (state_[r] == State::Landed) source_.forget({&requests_[r], 1});
  source_.release_spares();
}

// One long-lived thread per request in flight, so each keeps its HTTP connection between requests.
void ChunkReadAhead::fetcher() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || (next_ < horizon_ && next_ < requests_.size()); });
    if (stopping_) return;
    const std::size_t r = next_++;
    if (r < forgotten_) continue;  // the consumer is already past it
    state_[r] = State::Fetching;
    lock.unlock();
    std::exception_ptr failed;
    try {
      source_.prefetch({&requests_[r], 1});
    } catch (...) {
      // The request layer has retried what it retries; the chunk's reader gets this error, as
      // it would have had it asked itself (no second request for a 403 or a changed object).
      failed = std::current_exception();
    }
    lock.lock();
    error_[r] = failed;
    if (r < forgotten_) {  // the consumer went past it while it was under way
      source_.forget({&requests_[r], 1});
      state_[r] = State::Forgotten;
    } else {
      state_[r] = State::Landed;
    }
    changed_.notify_all();
  }
}

ChunkReadAhead::Hold ChunkReadAhead::before(std::size_t k) {
  const std::size_t first = requests_of_chunk_[k].first;
  const std::size_t last = requests_of_chunk_[k].second;
  std::unique_lock lock(mutex_);
  if (first < forgotten_) return {};  // left behind: the chunk is read on its own
  horizon_ = std::max(horizon_, std::min(requests_.size(), last + 1 + kRequestsAhead));
  if (fetchers_.empty()) {
    try {
      for (std::size_t i = 0; i < kInFlight; ++i) fetchers_.emplace_back([this] { fetcher(); });
    } catch (const std::system_error&) {
      // Fewer threads than asked: those started share the requests; with none, reads go direct.
      if (fetchers_.empty()) {
        forgotten_ = requests_.size();
        return {};
      }
    }
  }
  // Held from here, while it waits too: another reader running ahead meanwhile must not drop it.
  for (std::size_t r = first; r <= last; ++r) ++readers_[r];
  Hold hold(this, k);
  changed_.notify_all();
  changed_.wait(lock, [&] {
    for (std::size_t r = first; r <= last; ++r)
      if (state_[r] != State::Landed && state_[r] != State::Forgotten) return false;
    return true;
  });
  for (std::size_t r = first; r <= last; ++r)
    if (error_[r]) {
      lock.unlock();  // the Hold's release takes the lock
      std::rethrow_exception(error_[r]);
    }
  // Requests well behind this one are dropped, up to the first one a reader still holds.
  for (; forgotten_ + kRequestsBehind < first && readers_[forgotten_] == 0; ++forgotten_) {
    if (state_[forgotten_] == State::Landed) source_.forget({&requests_[forgotten_], 1});
    if (state_[forgotten_] != State::Fetching) state_[forgotten_] = State::Forgotten;
  }
  return hold;
}

void ChunkReadAhead::release(std::size_t k) noexcept {
  const std::lock_guard lock(mutex_);
  for (std::size_t r = requests_of_chunk_[k].first; r <= requests_of_chunk_[k].second; ++r) --readers_[r];
}

}  // namespace tessera::tet
