// Running independent network requests side by side (not installed). Requests wait on round
// trips, not on cores, so they get threads of their own rather than the TBB arena, which is
// sized to the CPUs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::io::detail {

// Calls `fn(i)` for i in [0, n) on up to `parallel` threads (the caller's one of them); after
// the first exception no new call starts, and it is rethrown once every thread has stopped.
template <typename Fn>
void for_each_parallel(std::size_t n, int parallel, Fn fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex mutex;
  const auto work = [&] {
    try {
      for (std::size_t i = next++; i < n && !failed; i = next++) fn(i);
    } catch (...) {
      const std::scoped_lock lock(mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
    }
  };
  {
    const auto n_threads = std::clamp<std::size_t>(n, 1, static_cast<std::size_t>(std::max(1, parallel)));
    std::vector<std::jthread> threads;
    for (std::size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
    work();
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace tessera::io::detail
