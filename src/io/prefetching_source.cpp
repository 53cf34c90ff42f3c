#include "tessera/io/prefetching_source.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <thread>

namespace tessera::io {

std::vector<ByteRange> coalesce_ranges(std::span<const ByteRange> ranges, const PrefetchOptions& options) {
  std::vector<ByteRange> sorted;
  sorted.reserve(ranges.size());
  for (const ByteRange& r : ranges)
    if (r.length != 0) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });

  // Merge overlapping ranges and ranges closer than max_gap, as [begin, end) spans.
  std::vector<ByteRange> merged;
  for (const ByteRange& r : sorted) {
    const std::uint64_t end = r.offset + r.length;
    if (!merged.empty()) {
      ByteRange& last = merged.back();
      const std::uint64_t last_end = last.offset + last.length;
      if (r.offset <= last_end || (options.max_gap != 0 && r.offset - last_end < options.max_gap)) {
        last.length = std::max(last_end, end) - last.offset;
        continue;
      }
    }
    merged.push_back(r);
  }
  if (options.max_request == 0) return merged;

  // Split long requests into equal parts no longer than max_request, so they go in parallel.
  std::vector<ByteRange> out;
  for (const ByteRange& r : merged) {
    const std::uint64_t parts = (r.length + options.max_request - 1) / options.max_request;
    const std::uint64_t part = (r.length + parts - 1) / parts;
    for (std::uint64_t at = r.offset; at < r.offset + r.length; at += part)
      out.push_back({at, std::min(part, r.offset + r.length - at)});
  }
  return out;
}

PrefetchingSource::PrefetchingSource(std::shared_ptr<const ByteSource> inner, PrefetchOptions options)
    : inner_(std::move(inner)), options_(options) {
  const std::uint64_t n = inner_->size();
  fetches_ = n != 0 && inner_->view(0, n) == nullptr;
}

void PrefetchingSource::read_at(std::uint64_t offset, std::span<std::byte> dst) const {
  {
    std::shared_lock lock(mutex_);
    // The block starting at or before `offset` that is nearest to it; blocks of separate
    // prefetches may overlap, and a read a block does not cover goes to the wrapped source.
    auto it = blocks_.upper_bound(offset);
    if (it != blocks_.begin()) {
      --it;
      const std::uint64_t begin = it->first;
      const Block& block = it->second;
      if (offset - begin <= block.size && dst.size() <= block.size - (offset - begin)) {
        if (!dst.empty()) std::memcpy(dst.data(), block.bytes.get() + (offset - begin), dst.size());
        return;
      }
    }
  }
  inner_->read_at(offset, dst);
}

std::size_t PrefetchingSource::prefetch(std::span<const ByteRange> ranges) const {
  if (!fetches_) return 0;
  const std::uint64_t size = inner_->size();
  std::vector<ByteRange> wanted;
  {
    std::shared_lock lock(mutex_);
    for (ByteRange r : ranges) {
      if (r.offset >= size) continue;
      r.length = std::min(r.length, size - r.offset);
      auto it = blocks_.upper_bound(r.offset);
      if (it != blocks_.begin()) {
        --it;
        if (r.offset + r.length <= it->first + it->second.size) continue;  // already held
      }
      wanted.push_back(r);
    }
  }
  std::vector<ByteRange> requests = coalesce_ranges(wanted, options_);
  {
    // The budget: whole requests in offset order while they fit.
    std::shared_lock lock(mutex_);
    std::uint64_t total = held_;
    std::size_t keep = 0;
    while (keep < requests.size() && total + requests[keep].length <= options_.max_bytes)
      total += requests[keep++].length;
    requests.resize(keep);
  }
  if (requests.empty()) return 0;

  std::vector<Block> buffers(requests.size());
  std::vector<char> done(requests.size(), 0);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= requests.size() || failed.load()) return;
      try {
        buffers[i] = take_spare(static_cast<std::size_t>(requests[i].length));
        inner_->read_at(requests[i].offset, {buffers[i].bytes.get(), buffers[i].size});
        done[i] = 1;
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  const std::size_t threads =
      std::min<std::size_t>(requests.size(), static_cast<std::size_t>(std::max(1, options_.max_in_flight)));
  std::vector<std::thread> pool;
  try {
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {
    // No more threads: the ones started and this one share the work.
  }
  work();
  for (auto& t : pool) t.join();

  {
    std::unique_lock lock(mutex_);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!done[i]) {
        keep_spare(std::move(buffers[i]));  // an empty one (never taken) is ignored
        continue;
      }
      auto [it, inserted] = blocks_.try_emplace(requests[i].offset);
      if (inserted) {
        held_ += buffers[i].size;
        it->second = std::move(buffers[i]);
      } else if (it->second.size < buffers[i].size) {
        held_ += buffers[i].size - it->second.size;
        std::swap(it->second, buffers[i]);
        keep_spare(std::move(buffers[i]));
      } else {
        keep_spare(std::move(buffers[i]));
      }
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return requests.size();
}

PrefetchingSource::Block PrefetchingSource::take_spare(std::size_t size) const {
  {
    std::unique_lock lock(mutex_);
    // The smallest spare that is large enough, so a large one stays for a large request.
    auto best = spares_.end();
    for (auto it = spares_.begin(); it != spares_.end(); ++it)
      if (it->capacity >= size && (best == spares_.end() || it->capacity < best->capacity)) best = it;
    if (best != spares_.end()) {
      Block block = std::move(*best);
      spares_.erase(best);
      spare_bytes_ -= block.capacity;
      block.size = size;
      return block;
    }
  }
  // Not zero-filled: the request writes every byte before the block is held.
  return Block{std::make_unique_for_overwrite<std::byte[]>(size), size, size};
}

void PrefetchingSource::keep_spare(Block block) const {
  // A scan's steady state needs a few spares (one block is forgotten per block fetched); more
  // would only keep memory from the rest of the process.
  constexpr std::uint64_t kMaxSpareBytes = std::uint64_t{64} << 20;
  if (block.capacity == 0 || spare_bytes_ + block.capacity > kMaxSpareBytes ||
      held_ + spare_bytes_ + block.capacity > options_.max_bytes)
    return;
  spare_bytes_ += block.capacity;
  spares_.push_back(std::move(block));
}

void PrefetchingSource::drop() const {
  std::unique_lock lock(mutex_);
  blocks_.clear();
  held_ = 0;
  spares_.clear();
  spare_bytes_ = 0;
}

void PrefetchingSource::release_spares() const {
  std::unique_lock lock(mutex_);
  spares_.clear();
  spare_bytes_ = 0;
}

void PrefetchingSource::forget(std::span<const ByteRange> ranges) const {
  std::unique_lock lock(mutex_);
  for (const ByteRange& r : ranges) {
    if (r.length == 0) continue;
    // Blocks starting before the range's end; walk back while they reach into it.
    auto it = blocks_.lower_bound(r.offset + r.length);
    while (it != blocks_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second.size <= r.offset) {
        // Blocks may overlap (separate prefetches), so an earlier one can still reach the range.
        it = prev;
        continue;
      }
      held_ -= prev->second.size;
      Block freed = std::move(prev->second);
      it = blocks_.erase(prev);
      keep_spare(std::move(freed));
    }
  }
}

std::uint64_t PrefetchingSource::held_bytes() const {
  std::shared_lock lock(mutex_);
  return held_;
}

}  // namespace tessera::io
