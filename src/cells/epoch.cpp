// The epoch iterator and its generator (spec deltacells.md §8.6).
#include "tessera/cells/epoch.hpp"

#include <algorithm>
#include <numeric>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

EpochGenerator::EpochGenerator(std::initializer_list<std::uint64_t> words) : state_(0x6A09E667F3BCC909ull) {
  for (const std::uint64_t w : words) state_ = mix((state_ ^ w) + kGolden);
}

std::uint64_t EpochGenerator::next() noexcept {
  state_ += kGolden;
  return mix(state_);
}

std::uint64_t EpochGenerator::uniform(std::uint64_t m) noexcept {
  unsigned __int128 p = static_cast<unsigned __int128>(next()) * m;
  auto lo = static_cast<std::uint64_t>(p);
  if (lo < m) {
    const std::uint64_t t = (0 - m) % m;
    while (lo < t) {
      p = static_cast<unsigned __int128>(next()) * m;
      lo = static_cast<std::uint64_t>(p);
    }
  }
  return static_cast<std::uint64_t>(p >> 64);
}

EpochIterator::EpochIterator(Dataset& dataset, std::uint64_t batch_size, const EpochOptions& options)
    : ds_(dataset), batch_size_(batch_size), o_(options) {
  if (ds_.store().remote()) {
    const auto& open = ds_.options();
    const auto room = static_cast<std::uint64_t>(std::max(0, open.max_prefetch_tiles - 2));
    o_.prefetch_tiles =
        std::max(o_.prefetch_tiles, std::min(static_cast<std::uint64_t>(std::max(0, open.io_threads)), room));
  }
  if (batch_size < 1) throw UsageError("batch_size must be at least 1");
  if (o_.world_size < 1 || o_.rank >= o_.world_size)
    throw UsageError("rank " + std::to_string(o_.rank) + " outside world_size " + std::to_string(o_.world_size));
  if (o_.num_workers < 1 || o_.worker >= o_.num_workers)
    throw UsageError("worker " + std::to_string(o_.worker) + " outside num_workers " + std::to_string(o_.num_workers));
  restart();
}

void EpochIterator::set_epoch(std::uint64_t epoch) {
  epoch_ = epoch;
  restart();
}

std::vector<std::uint64_t> EpochIterator::pair_tiles(std::uint64_t rank, std::uint64_t worker) const {
  const std::uint64_t n = order_.size();
  const std::uint64_t per_rank = ceil_div(n, o_.world_size);
  const std::uint64_t r0 = std::min(rank * per_rank, n), r1 = std::min(r0 + per_rank, n);
  const std::uint64_t len = r1 - r0;
  const std::uint64_t per_worker = ceil_div(len, o_.num_workers);
  const std::uint64_t w0 = std::min(worker * per_worker, len), w1 = std::min(w0 + per_worker, len);
  return {order_.begin() + static_cast<std::ptrdiff_t>(r0 + w0), order_.begin() + static_cast<std::ptrdiff_t>(r0 + w1)};
}

std::uint64_t EpochIterator::batches_for(std::uint64_t cells) const {
  return o_.drop_last ? cells / batch_size_ : ceil_div(cells, batch_size_);
}

std::uint64_t EpochIterator::batch_count() const { return limit_; }

void EpochIterator::restart() {
  order_.resize(ds_.n_tiles());
  std::iota(order_.begin(), order_.end(), 0);
  if (o_.shuffle) EpochGenerator({static_cast<std::uint64_t>(o_.seed), epoch_, 0}).shuffle(std::span(order_));
  tiles_ = pair_tiles(o_.rank, o_.worker);
  const auto cells_of = [&](const std::vector<std::uint64_t>& tiles) {
    std::uint64_t c = 0;
    for (const auto t : tiles) c += ds_.manifest().tile_cells[t];
    return c;
  };
  limit_ = batches_for(cells_of(tiles_));
  if (o_.even_batches) {
    for (std::uint64_t r = 0; r < o_.world_size; ++r)
      for (std::uint64_t w = 0; w < o_.num_workers; ++w)
        limit_ = std::min(limit_, batches_for(cells_of(pair_tiles(r, w))));
  }
  next_tile_ = 0;
  buffer_.clear();
  buffer_pos_ = 0;
  newest_start_ = 0;
  yielded_ = 0;
  cell_rng_.emplace(
      std::initializer_list<std::uint64_t>{static_cast<std::uint64_t>(o_.seed), epoch_, 1, o_.rank, o_.worker});
  // No prefetch here: the first next() prefetches tiles 0 .. prefetch_tiles before reading tile 0,
  // and a constructor followed by set_epoch would otherwise fetch tiles of epoch 0 for nothing.
}

bool EpochIterator::next(EpochBatch& out) {
  if (yielded_ >= limit_) return false;
  // Refill the running buffer tile by tile until a batch is available or the tiles run out.
  while (buffer_.size() - buffer_pos_ < batch_size_ && next_tile_ < tiles_.size()) {
    if (buffer_pos_ > 0) {
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(buffer_pos_));
      buffer_pos_ = 0;
    }
    newest_start_ = buffer_.size();
    const std::uint64_t k = next_tile_++;
    // Tiles k+1 .. k+prefetch_tiles, with tile k itself first: naming it marks it as used in the
    // compressed cache, so making room for the tiles ahead evicts a finished tile, not this one.
    const std::size_t ahead_end =
        std::min<std::size_t>(tiles_.size(), static_cast<std::size_t>(k + 1 + o_.prefetch_tiles));
    ds_.prefetch(std::span(tiles_).subspan(k, ahead_end - k));
    // The buffer below grows by the manifest's tile_cells, a number from the file: the tile's own
    // header must confirm it first (D2 in the fetch), or a manifest claiming 2^60 cells would
    // have us buffer them. The batch needs this tile's bytes right after, so nothing is fetched twice.
    ds_.get_tile(tiles_[k]);
    const auto [lo, hi] = ds_.tile_bounds(tiles_[k]);
    const std::size_t old = buffer_.size();
    for (std::uint64_t c = lo; c < hi; ++c) buffer_.push_back(static_cast<std::int64_t>(c));
    if (o_.shuffle) cell_rng_->shuffle(std::span(buffer_).subspan(old));
  }
  const std::size_t available = buffer_.size() - buffer_pos_;
  if (available == 0 || (available < batch_size_ && o_.drop_last)) return false;
  const std::size_t take = std::min<std::size_t>(available, static_cast<std::size_t>(batch_size_));
  out.cells.assign(buffer_.begin() + static_cast<std::ptrdiff_t>(buffer_pos_),
                   buffer_.begin() + static_cast<std::ptrdiff_t>(buffer_pos_ + take));
  // The next tile's decode starts as early as it safely can: before this batch's gather when the
  // batch reads only the newest tile (making room for it then evicts only older, finished tiles),
  // so on two cores decoding tile k+1 overlaps every gather of tile k; otherwise after the batch.
  const bool more = o_.decode_ahead && next_tile_ < tiles_.size() && yielded_ + 1 < limit_;
  const std::uint64_t newest = next_tile_ > 0 ? tiles_[next_tile_ - 1] : 0;  // the tile this batch ends in
  if (more && buffer_pos_ >= newest_start_) ds_.decode_ahead(tiles_[next_tile_], newest);
  buffer_pos_ += take;
  ds_.get_batch(out.cells, o_.values, out.batch);
  if (more) ds_.decode_ahead(tiles_[next_tile_], newest);
  ++yielded_;
  return true;
}

std::optional<EpochBatch> EpochIterator::next() {
  EpochBatch b;
  if (!next(b)) return std::nullopt;
  return b;
}

}  // namespace tessera::cells
