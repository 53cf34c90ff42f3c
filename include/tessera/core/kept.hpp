// Large working buffers kept between the calls of one process that need them, so a call starts
// on memory the process has touched before instead of faulting fresh pages in.
//
// Why: a whole-leaf ragged sweep or a tile fetch works in tens of MiB of buffers. Allocated per
// call, that memory comes fresh from the kernel every time (the allocator hands large blocks back
// when they are freed), and faulting and clearing it cost as much as a third of a sweep's CPU.
// Kept here, the second call of a process faults nothing.
//
// Thread-safety: `take` and `give` may be called from any thread. Values are moved in and out
// whole; a taken value belongs to its caller alone until it is given back.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace tessera {

template <typename T>
class Kept {
 public:
  // Keeps at most `max_kept` values; more given back are destroyed.
  explicit Kept(std::size_t max_kept) : max_kept_(max_kept) {}
  Kept(const Kept&) = delete;
  Kept& operator=(const Kept&) = delete;

  // The value given back last, or a default-constructed one when none is kept.
  T take() {
    const std::lock_guard lock(mutex_);
    if (kept_.empty()) return T{};
    T value = std::move(kept_.back());
    kept_.pop_back();
    return value;
  }

  void give(T&& value) {
    const std::lock_guard lock(mutex_);
    if (kept_.size() < max_kept_) kept_.push_back(std::move(value));
  }

 private:
  std::mutex mutex_;
  std::size_t max_kept_;
  std::vector<T> kept_;
};

// Takes a value on construction and gives it back on destruction (also when an exception
// unwinds), so every exit of a call returns its buffers.
template <typename T>
class KeptLease {
 public:
  explicit KeptLease(Kept<T>& from) : from_(from), value_(from.take()) {}
  KeptLease(const KeptLease&) = delete;
  KeptLease& operator=(const KeptLease&) = delete;
  ~KeptLease() { from_.give(std::move(value_)); }
  T& operator*() noexcept { return value_; }
  T* operator->() noexcept { return &value_; }

 private:
  Kept<T>& from_;
  T value_;
};

// The first `n` elements of `buffer`, grown first when it holds fewer. A buffer reused across
// calls this way is zero-filled only where it grows past its largest size so far. Resized to each
// call's exact size instead, it would be cleared again wherever it grows back: for a sweep's
// decode buffers, a tenth of the sweep's CPU spent clearing bytes that are overwritten at once.
template <typename T>
std::span<T> grown_prefix(std::vector<T>& buffer, std::size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return {buffer.data(), n};
}

}  // namespace tessera
