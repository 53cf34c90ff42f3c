// Internal to the writer (writer.cpp): compressing tiles in parallel while writing them in order.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "tessera/core/checked.hpp"

namespace tessera::tet::detail {

// Runs compress(0..n-1) through `for_each(n, f)` (the writer's parallel loop) and write(i) for
// each i in index order, as soon as tile i and every tile before it are compressed. One thread at
// a time writes, outside the lock, while the others go on compressing: the sink's writes overlap
// the compression of later tiles instead of all coming after it (a file's payloads stay in index
// order, byte for byte what compressing everything first and then writing gives).
template <typename ForEach, typename Compress, typename Write>
void compress_then_write_in_order(ForEach&& for_each, std::uint64_t n, Compress&& compress, Write&& write) {
  std::mutex mutex;
  std::vector<char> compressed(checked_size(n), 0);
  std::uint64_t next = 0;  // the next tile to write
  bool writing = false;    // a thread is writing; tiles that complete meanwhile are left to it
  for_each(n, [&](std::uint64_t i) {
    compress(i);
    std::uint64_t k = 0;
    {
      std::lock_guard lock(mutex);
      compressed[i] = 1;
      if (writing || !compressed[next]) return;
      writing = true;
      k = next;
    }
    for (;;) {
      write(k);
      std::lock_guard lock(mutex);
      k = ++next;
      if (k == n || !compressed[k]) {
        writing = false;
        return;
      }
    }
  });
}

}  // namespace tessera::tet::detail
