// Whole storage objects of a Zarr array fetched ahead of the reader that decodes them, on a remote
// store (docs/remote.md): each GET costs a round trip, and fetching one object at a time leaves
// the link idle between them. Up to kAhead objects are under way or held; a local store reads
// nothing ahead (a read is a mapping). Used by the ragged sweeps and content hashes.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <span>
#include <utility>

#include "tessera/zarr/array.hpp"

namespace tessera::ragged::detail {

class ObjectsAhead {
 public:
  static constexpr std::size_t kAhead = 4;

  // `objects` in the order they will be taken; `whole(i)` tells whether object i will be taken
  // (read whole) at all. Both must outlive this. Starts the first fetches.
  ObjectsAhead(const zarr::Array& array, std::span<const zarr::Coords> objects, std::function<bool(std::size_t)> whole)
      : array_(array), objects_(objects), whole_(std::move(whole)), remote_(array.store().remote()) {
    fetch_after(0);
  }
  ObjectsAhead(const ObjectsAhead&) = delete;
  ObjectsAhead& operator=(const ObjectsAhead&) = delete;
  ~ObjectsAhead() = default;  // a fetch still under way is waited for (std::async's future)

  // Object i, whole: the one fetched ahead if it was, else read now; then the next ones are
  // started. Objects are taken in increasing i. A failed fetch throws here, as the read would.
  zarr::StoredObject take(std::size_t i) {
    while (!ahead_.empty() && ahead_.front().first < i) ahead_.pop_front();  // skipped by the reader
    std::optional<zarr::StoredObject> object;
    if (!ahead_.empty() && ahead_.front().first == i) {
      std::future<zarr::StoredObject> fetch = std::move(ahead_.front().second);
      ahead_.pop_front();
      fetch_after(i + 1);
      object.emplace(fetch.get());
    } else {
      fetch_after(i + 1);
      object.emplace(array_.read_object(objects_[i]));
    }
    return std::move(*object);
  }

 private:
  void fetch_after(std::size_t from) {
    if (!remote_) return;
    queued_ = std::max(queued_, from);
    for (; ahead_.size() < kAhead && queued_ < objects_.size(); ++queued_)
      if (whole_(queued_))
        ahead_.emplace_back(
            queued_, std::async(std::launch::async, [this, o = objects_[queued_]] { return array_.read_object(o); }));
  }

  const zarr::Array& array_;
  std::span<const zarr::Coords> objects_;
  std::function<bool(std::size_t)> whole_;
  bool remote_;
  std::deque<std::pair<std::size_t, std::future<zarr::StoredObject>>> ahead_;  // (object, its fetch)
  std::size_t queued_ = 0;  // objects below this were considered for fetching ahead
};

}  // namespace tessera::ragged::detail
