#include "query_read_ahead.hpp"

#include "query_internal.hpp"

namespace tessera::tet::qe {

std::shared_ptr<ReadAhead> ReadAhead::for_plan(const TetFile& file, const std::vector<PlannedChunk>& chunks) {
  const auto* source = dynamic_cast<const io::PrefetchingSource*>(&file.source());
  if (source == nullptr || !source->fetches() || chunks.size() < 2) return nullptr;
  std::vector<std::vector<io::ByteRange>> windows(1);
  std::vector<std::size_t> window_of_chunk(chunks.size());
  std::uint64_t bytes = 0;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const ChunkEntry& e = file.entry(chunks[k].entry);
    if (!windows.back().empty() && bytes + e.stored_byte_len > kWindowStoredBytes) {
      windows.emplace_back();
      bytes = 0;
    }
    windows.back().push_back({e.payload_offset, e.stored_byte_len});
    bytes += e.stored_byte_len;
    window_of_chunk[k] = windows.size() - 1;
  }
  return std::make_shared<ReadAhead>(*source, std::move(windows), std::move(window_of_chunk));
}

ReadAhead::ReadAhead(const io::PrefetchingSource& source, std::vector<std::vector<io::ByteRange>> windows,
                     std::vector<std::size_t> window_of_chunk)
    : source_(source),
      windows_(std::move(windows)),
      window_of_chunk_(std::move(window_of_chunk)),
      state_(windows_.size(), State::Idle) {}

ReadAhead::~ReadAhead() {
  for (auto& t : background_) t.join();
  for (std::size_t w = 0; w < windows_.size(); ++w)
    if (state_[w] == State::Held) source_.forget(windows_[w]);
}

void ReadAhead::fetch(std::size_t w) noexcept {
  try {
    source_.prefetch(windows_[w]);
  } catch (...) {
    // The chunk's own read goes to the network again and reports what fails there.
  }
}

void ReadAhead::before(std::size_t k) {
  const std::size_t w = window_of_chunk_[k];
  std::unique_lock lock(mutex_);
  if (state_[w] == State::Idle) {
    state_[w] = State::Fetching;
    lock.unlock();
    fetch(w);
    lock.lock();
    state_[w] = State::Held;
    fetched_.notify_all();
  } else {
    fetched_.wait(lock, [&] { return state_[w] != State::Fetching; });
  }
  if (w + 1 < windows_.size() && state_[w + 1] == State::Idle) {
    state_[w + 1] = State::Fetching;
    try {
      background_.emplace_back([this, next = w + 1] {
        fetch(next);
        std::lock_guard done(mutex_);
        state_[next] = State::Held;
        fetched_.notify_all();
      });
    } catch (const std::system_error&) {
      state_[w + 1] = State::Idle;  // no thread to spare: the window is fetched when it is needed
    }
  }
  // Parallel folds finish windows out of order by a little: keep the two before this one.
  for (; forgotten_below_ + 2 < w; ++forgotten_below_) {
    if (state_[forgotten_below_] != State::Held) continue;
    source_.forget(windows_[forgotten_below_]);
    state_[forgotten_below_] = State::Forgotten;
  }
}

}  // namespace tessera::tet::qe
