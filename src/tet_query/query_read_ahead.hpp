// Reading a plan's chunks from a remote `.tet` file ahead of the fold (docs/remote.md). Over a
// network a chunk fetched when the fold first needs it costs a round trip, with only as many in
// flight as the fold has threads. Instead the plan's chunks, in plan order, are cut into windows
// of about 32 MiB of stored bytes; the first time the fold needs a chunk of window w, window w is
// fetched (unless it already is) through the source's prefetch, which merges neighbouring chunks
// into few requests and runs them in parallel, and window w + 1 starts fetching in the
// background. Windows the fold has left behind are forgotten, so memory stays near three windows.
// A mapped or local file has none of this (`for_plan` gives nullptr).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tessera/io/prefetching_source.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet::qe {

struct PlannedChunk;

class ReadAhead {
 public:
  static constexpr std::uint64_t kWindowStoredBytes = std::uint64_t{32} << 20;

  // The read-ahead of `chunks` (plan order) of `file`, or nullptr when its source reads nothing
  // over a network.
  static std::shared_ptr<ReadAhead> for_plan(const TetFile& file, const std::vector<PlannedChunk>& chunks);
  ReadAhead(const io::PrefetchingSource& source, std::vector<std::vector<io::ByteRange>> windows,
            std::vector<std::size_t> window_of_chunk);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Call before reading chunk k (plan order); safe from any number of threads. A failed fetch is
  // left to the chunk's own read, which then reports the error.
  void before(std::size_t k);

 private:
  enum class State : char { Idle, Fetching, Held, Forgotten };
  void fetch(std::size_t w) noexcept;

  const io::PrefetchingSource& source_;
  std::vector<std::vector<io::ByteRange>> windows_;
  std::vector<std::size_t> window_of_chunk_;
  std::mutex mutex_;
  std::condition_variable fetched_;
  std::vector<State> state_;
  std::size_t forgotten_below_ = 0;
  std::vector<std::thread> background_;
};

}  // namespace tessera::tet::qe
