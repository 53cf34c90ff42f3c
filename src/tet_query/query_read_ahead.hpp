// Reading a plan's chunks from a remote `.tet` file ahead of the fold (docs/remote.md). Over a
// network a chunk fetched when the fold first needs it costs a round trip, with only as many in
// flight as the fold has threads. Instead the plan's chunks are turned into few requests up front
// (whole chunks less than 1 MiB apart merged up to 8 MiB, io::PrefetchOptions), and a
// pool of fetcher threads keeps kInFlight of them under way, in order, never more than
// kRequestsAhead past the last one the fold has asked for; each lands in the source's prefetched
// blocks, where the fold's reads find it. Requests the fold has left behind are forgotten, so
// memory stays near (kRequestsAhead + kRequestsBehind) × 8 MiB. A mapped or local file has none of
// this (`for_plan` gives nullptr).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/io/prefetching_source.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet::qe {

struct PlannedChunk;

class ReadAhead {
 public:
  static constexpr std::size_t kInFlight = 8;        // fetcher threads, each one request at a time
  static constexpr std::size_t kRequestsAhead = 12;  // past the last request the fold asked for
  static constexpr std::size_t kRequestsBehind = 4;  // kept behind it (parallel folds run out of order)

  // The read-ahead of `chunks` (plan order) of `file`, or nullptr when its source reads nothing
  // over a network.
  static std::shared_ptr<ReadAhead> for_plan(const TetFile& file, const std::vector<PlannedChunk>& chunks);
  ReadAhead(const io::PrefetchingSource& source, std::vector<io::ByteRange> requests,
            std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Call before reading chunk k (plan order); waits until the requests holding it have landed.
  // Safe from any number of threads. A failed request is left to the chunk's own read, which
  // then reports the error.
  void before(std::size_t k);

 private:
  enum class State : char { Idle, Fetching, Landed, Forgotten };
  void fetcher();

  const io::PrefetchingSource& source_;
  std::vector<io::ByteRange> requests_;                                 // in offset order
  std::vector<std::pair<std::size_t, std::size_t>> requests_of_chunk_;  // [first, last] per chunk (plan order)
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;
  std::size_t next_ = 0;       // the next request a fetcher takes
  std::size_t horizon_ = 0;    // fetchers take requests below this
  std::size_t forgotten_ = 0;  // requests below this are forgotten or never landed
  bool stopping_ = false;
  std::vector<std::thread> fetchers_;
};

}  // namespace tessera::tet::qe
