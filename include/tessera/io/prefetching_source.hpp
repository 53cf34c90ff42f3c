// Reading many ranges of one object in few round trips: the batched read a remote reader needs
// when it knows ahead which parts of an object it will parse (the column chunks of a Parquet
// file, the footer at its end).
//
// `coalesce_ranges` plans the requests: ranges are sorted, ranges less than `max_gap` bytes apart
// become one request (over a network a round trip costs more than the bytes in between), and a
// request longer than `max_request` is split so that its parts can travel in parallel.
//
// `PrefetchingSource` wraps a source. `prefetch(ranges)` fetches the planned requests at most
// `max_in_flight` at a time, each on its own thread (every ByteSource allows concurrent reads),
// and keeps the bytes; a later `read_at` that falls inside a fetched block is a copy from memory,
// any other read goes to the wrapped source as before. A memory-resident source (one whose
// `view` answers: a mapped file, a buffer) needs none of this, so `prefetch` does nothing on it
// and `view` passes through.
//
// Blocks are received straight into memory that is not zero-filled first, and the memory of
// forgotten blocks is kept for the next prefetches (up to 64 MiB) until `release_spares`, so a stream of
// prefetch/forget (a scan's read-ahead) faults no fresh pages in after its first blocks.
//
// Thread-safety: every method may be called from several threads at once. Lifetime: the wrapper
// shares ownership of the wrapped source; prefetched bytes are held until `drop` or destruction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::io {

struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

struct PrefetchOptions {
  // Ranges separated by fewer bytes than this are fetched as one request. At 150 MB/s a 50 ms
  // round trip is worth 7.5 MB, so reading 1 MiB of unneeded bytes is cheaper than a request.
  std::uint64_t max_gap = 1ull << 20;
  // A request longer than this is split into parts fetched in parallel.
  std::uint64_t max_request = 8ull << 20;
  // Requests in flight at once (threads of one prefetch).
  int max_in_flight = 16;
  // A prefetch keeps at most this many bytes in total; ranges past the budget are left to
  // ordinary reads.
  std::uint64_t max_bytes = 256ull << 20;
};

// The requests that cover `ranges` (empty ranges ignored): sorted, disjoint, merged across gaps
// smaller than `max_gap`, none longer than `max_request` (0 for either: no merging / no split).
std::vector<ByteRange> coalesce_ranges(std::span<const ByteRange> ranges, const PrefetchOptions& options);

class PrefetchingSource final : public ByteSource {
 public:
  explicit PrefetchingSource(std::shared_ptr<const ByteSource> inner, PrefetchOptions options = {});

  std::uint64_t size() const override { return inner_->size(); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override;
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override { return inner_->view(offset, len); }
  const std::string& name() const override { return inner_->name(); }

  // True when prefetching pays: the wrapped source is not memory-resident.
  bool fetches() const noexcept { return fetches_; }
  // Fetches `ranges` (clipped to the object; see coalesce_ranges) unless they are already held.
  // Returns the number of requests made. IoError from the wrapped source propagates (the first
  // one, after every request in flight has ended); the blocks fetched before it are kept.
  std::size_t prefetch(std::span<const ByteRange> ranges) const;
  // Forgets every prefetched block and frees the memory kept for later ones.
  void drop() const;
  // Frees the memory kept from forgotten blocks (a scan that is over calls this).
  void release_spares() const;
  // Forgets the blocks that overlap any of `ranges` (the bytes a consumer is done with); later
  // reads of them go to the wrapped source again.
  void forget(std::span<const ByteRange> ranges) const;
  std::uint64_t held_bytes() const;

 private:
  std::shared_ptr<const ByteSource> inner_;
  PrefetchOptions options_;
  bool fetches_;
  // Bytes of a block: `size` of them in use, `capacity` allocated and not initialised.
  struct Block {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t size = 0;
    std::size_t capacity = 0;
  };
  // A spare block of at least `size` bytes, or a new one.
  Block take_spare(std::size_t size) const;
  // Keeps the memory of forgotten blocks for later prefetches while they fit the budget.
  void keep_spare(Block block) const;  // under a unique lock

  mutable std::shared_mutex mutex_;
  // Fetched blocks by their offset (blocks of separate prefetches may overlap).
  mutable std::map<std::uint64_t, Block> blocks_;
  mutable std::uint64_t held_ = 0;
  mutable std::vector<Block> spares_;  // memory of forgotten blocks, for the next prefetches
  mutable std::uint64_t spare_bytes_ = 0;
};

}  // namespace tessera::io
