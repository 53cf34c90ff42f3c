// Reading chunks of a remote `.tet` file ahead of their consumer (docs/remote.md): a query's fold,
// a `read_box` (tet cat, Python and xarray reads), `tet export`, `tet verify --deep`. Over a network a chunk fetched
// when it is needed costs a round trip, with only as many in flight as the consumer has threads. Instead the chunks to
// be read, in the order they will be read, are turned into few requests up front (whole chunks less than 1 MiB apart
// merged up to 8 MiB, io::PrefetchOptions), and a pool of fetcher threads keeps kInFlight of them under way, in order,
// never more than kRequestsAhead past the last one the consumer has asked for; each lands in the source's prefetched
// blocks, where the consumer's reads find it. Requests it has left behind are forgotten, so
// memory stays near (kRequestsAhead + kRequestsBehind) × 8 MiB. A mapped or local file has none of
// this (`for_plan` gives nullptr).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/io/prefetching_source.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

// Runs f(0), …, f(count - 1) on `threads` threads (0: as many as the current task arena has), each
// thread taking the next index not yet taken. Consumers of a read-ahead must run this way: it
// fetches requests in order and only a bounded distance ahead of the furthest consumer, so
// consumers far apart (as a recursive split of the range would place them) make it forget blocks
// a slower consumer has not read yet, which are then fetched again chunk by chunk. The first
// exception a call throws stops the others from taking more and is rethrown.
void for_each_in_order(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& f);

class ChunkReadAhead {
 public:
  static constexpr std::size_t kInFlight = 8;        // fetcher threads, each one request at a time
  static constexpr std::size_t kRequestsAhead = 12;  // past the last request the fold asked for
  static constexpr std::size_t kRequestsBehind = 4;  // kept behind it (parallel consumers run out of order)

  // Whether `file` is read over a network, so that a read-ahead pays.
  static bool fetches(const TetFile& file) noexcept;
  // The read-ahead of the chunk index entries `entries` of `file`, in the order they will be read,
  // or nullptr when its source reads nothing over a network (or there is only one chunk).
  static std::shared_ptr<ChunkReadAhead> for_entries(const TetFile& file, std::span<const std::uint32_t> entries);
  // The same for chunks given by their stored byte ranges (each inside the file), in the order they
  // will be read, from any source (verify reads a Layout, not a TetFile): nullptr unless `source`
  // is a PrefetchingSource that fetches and there are at least two chunks.
  static std::shared_ptr<ChunkReadAhead> for_ranges(const io::ByteSource& source,
                                                    std::span<const io::ByteRange> chunks);
  ChunkReadAhead(const io::PrefetchingSource& source, std::vector<io::ByteRange> requests,
                 std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk);
  ~ChunkReadAhead();
  ChunkReadAhead(const ChunkReadAhead&) = delete;
  ChunkReadAhead& operator=(const ChunkReadAhead&) = delete;

  // Keeps the blocks of one chunk from being dropped while its reader copies them out: a reader
  // descheduled between `before` and its read must not find its block gone (it would be fetched
  // again on its own). Released when destroyed; an empty Hold holds nothing.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), k_(other.k_) {}
    Hold& operator=(Hold&& other) noexcept {
      if (this != &other) {
        release();
        owner_ = std::exchange(other.owner_, nullptr);
        k_ = other.k_;
      }
      return *this;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }

   private:
    friend class ChunkReadAhead;
    Hold(ChunkReadAhead* owner, std::size_t k) : owner_(owner), k_(k) {}
    void release() noexcept {
      if (owner_ != nullptr) owner_->release(k_);
      owner_ = nullptr;
    }
    ChunkReadAhead* owner_ = nullptr;
    std::size_t k_ = 0;
  };

  // Call before reading entries[k], and keep what it returns until the chunk's bytes are read;
  // waits until the requests holding it have landed, and throws what a failed one threw (the
  // IoError naming the URL, the status and the attempts). Safe from any number of threads.
  [[nodiscard]] Hold before(std::size_t k);

 private:
  void release(std::size_t k) noexcept;
  enum class State : char { Idle, Fetching, Landed, Forgotten };
  void fetcher();

  const io::PrefetchingSource& source_;
  std::vector<io::ByteRange> requests_;                                 // in offset order
  std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk_;  // [first, last] per entry, in the order given
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;
  std::vector<std::exception_ptr> error_;  // a failed request's error, given to its chunks' readers
  std::vector<std::uint32_t> readers_;     // Holds on each request: it is not dropped while any remain
  std::size_t next_ = 0;                   // the next request a fetcher takes
  std::size_t horizon_ = 0;                // fetchers take requests below this
  std::size_t forgotten_ = 0;              // requests below this are forgotten or never landed
  bool stopping_ = false;
  std::vector<std::thread> fetchers_;
};

}  // namespace tessera::tet
