// Epoch iteration over a dataset (spec deltacells.md §8.6): tiles in a shuffled order split into
// contiguous runs by (rank, worker), cells shuffled within each tile, batches cut across tile
// boundaries, the next tiles prefetched. The generator is tessera's own (SplitMix64 with a fixed
// seeding and Lemire's bounded draw), so orders are the same on every platform and release.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "tessera/cells/dataset.hpp"

namespace tessera::cells {

// Thread-safety: a value; one thread at a time per generator.
class EpochGenerator {
 public:
  // Seeded with the words (e.g. (seed, epoch, 0)); negative seeds as two's complement.
  explicit EpochGenerator(std::initializer_list<std::uint64_t> words);
  std::uint64_t state() const noexcept { return state_; }
  std::uint64_t next() noexcept;
  // Uniform in [0, m), m >= 1.
  std::uint64_t uniform(std::uint64_t m) noexcept;
  // Fisher–Yates from the back.
  template <typename T>
  void shuffle(std::span<T> v) noexcept {
    for (std::size_t i = v.size(); i-- > 1;) std::swap(v[i], v[static_cast<std::size_t>(uniform(i + 1))]);
  }

 private:
  std::uint64_t state_;
};

struct EpochOptions {
  bool shuffle = true;
  std::int64_t seed = 0;
  bool drop_last = false;
  // Tiles fetched ahead of the one being read. On a remote store (io::Store::remote) the loader
  // fetches at least as many as the dataset has I/O threads, within the room the compressed cache
  // leaves (max_prefetch_tiles - 2), so that every thread has a request in flight: one tile at a
  // time costs a round trip each.
  std::uint64_t prefetch_tiles = 2;
  std::uint64_t rank = 0, world_size = 1;
  std::uint64_t worker = 0, num_workers = 1;
  bool even_batches = false;  // every pair stops after the minimum batch count over all pairs
  Values values = Values::Float32;
  // Decode the pair's next tile in the background (Dataset::decode_ahead) while the current one is
  // gathered: from the first batch that reads only the newest tile (so no older tile still needed
  // is evicted for it), else after the batch. Its decode overlaps the caller's work and the gathers.
  bool decode_ahead = true;
};

struct EpochBatch {
  std::vector<std::int64_t> cells;  // global cell indices, in batch order
  SparseBatch batch;
};

// Thread-safety: one thread at a time per iterator (iterators of one Dataset may run on different
// threads). Lifetime: refers to its Dataset, which must outlive it.
class EpochIterator {
 public:
  // UsageError for batch_size 0, world_size/num_workers 0 or rank/worker out of range.
  EpochIterator(Dataset& dataset, std::uint64_t batch_size, const EpochOptions& options = {});
  void set_epoch(std::uint64_t epoch);
  // The tiles of this (rank, worker) pair in visiting order, for the current epoch.
  const std::vector<std::uint64_t>& tiles() const noexcept { return tiles_; }
  // Batches this pair yields in the current epoch.
  std::uint64_t batch_count() const;
  // The next batch, or nullopt at the end of the epoch.
  std::optional<EpochBatch> next();
  // The next batch into `out`, reusing its buffers (see Dataset::get_batch with a SparseBatch&):
  // a loop passing the same EpochBatch allocates nothing once it has grown. False at the end of
  // the epoch, leaving `out` unchanged.
  bool next(EpochBatch& out);

 private:
  std::vector<std::uint64_t> pair_tiles(std::uint64_t rank, std::uint64_t worker) const;
  std::uint64_t batches_for(std::uint64_t cells) const;
  void restart();

  Dataset& ds_;
  std::uint64_t batch_size_;
  EpochOptions o_;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> order_;  // the epoch's tile order
  std::vector<std::uint64_t> tiles_;
  std::size_t next_tile_ = 0;
  std::vector<std::int64_t> buffer_;  // shuffled cells not yet yielded
  std::size_t buffer_pos_ = 0;
  std::size_t newest_start_ = 0;  // where the cells of the last tile added to buffer_ begin
  std::uint64_t yielded_ = 0;
  std::uint64_t limit_ = 0;
  std::optional<EpochGenerator> cell_rng_;
};

}  // namespace tessera::cells
