// Internals of cells::Dataset: the compressed-tile cache with its fetch threads (§8.3) and the
// decoded-tile LRU with recycled buffers (§8.4). dataset.cpp owns the public calls,
// tile_cache.cpp the fetching and caching.
#pragma once

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "decoded_tile.hpp"
#include "kept_genes.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/io/read_path.hpp"

namespace tessera::cells {

struct Dataset::Impl {
  std::shared_ptr<const io::Store> store;
  Manifest manifest;
  std::vector<std::uint64_t> limits;
  double first_tile_inverse = 0;  // 1 / cells of tile 0, for tile_of's guess

  // The tile holding `cell` (< n_cells, checked by the caller), given the tiles' `limits` and
  // `first_tile_inverse`. Tiles mostly hold the same number of cells: the guess from the first
  // tile's size (a multiplication by its inverse; a 64-bit division costs more than the rest) is
  // then right, and a random batch does not pay a mispredicted binary search per cell. Static, so
  // that a loop over cells can keep the limits in registers.
  static std::uint64_t tile_of(std::span<const std::uint64_t> limits, double first_tile_inverse,
                               std::uint64_t cell) noexcept {
    if (limits[0] > 0) {
      const auto guess = std::min<std::uint64_t>(
          static_cast<std::uint64_t>(static_cast<double>(cell) * first_tile_inverse), limits.size() - 1);
      if (cell < limits[guess] && (guess == 0 || limits[guess - 1] <= cell)) return guess;
    }
    return static_cast<std::uint64_t>(std::upper_bound(limits.begin(), limits.end(), cell) - limits.begin());
  }
  OpenOptions options;

  // ---- compressed-tile cache (tile_cache.cpp) ----
  enum class State { InFlight, Ready, Failed };
  struct Entry {
    State state = State::InFlight;
    std::shared_ptr<const Tile> tile;
    std::exception_ptr error;
    std::uint64_t last_use = 0;
  };
  std::mutex cache_mu;
  std::condition_variable cache_cv;
  std::map<std::uint64_t, Entry> cache;
  std::multiset<std::uint64_t> pinned;  // tiles of requests in progress: never evicted
  // Buffers of tiles copied out with pread (io::read_whole_by_path), back from evicted tiles for
  // the next fetch; shared with the tiles, which may outlive the dataset.
  std::shared_ptr<io::KeptBuffers> tile_buffers;
  std::uint64_t stored_bytes = 0;  // of all tiles: the scan an epoch makes
  std::uint64_t clock = 0;
  std::deque<std::uint64_t> queue;  // background fetches to start
  std::vector<std::thread> fetchers;
  bool stopping = false;

  // ---- statistics (guarded by cache_mu) ----
  DatasetStats stats;

  // ---- decoded LRU (guarded by api_mu) ----
  std::mutex api_mu;
  // One batch request at a time: its scratch (`plan`) must outlive wait_for_ahead, which
  // releases api_mu while the request waits for a tile being decoded ahead.
  std::mutex request_mu;
  struct RequestLock {
    std::lock_guard<std::mutex> request, api;
  };
  [[nodiscard]] RequestLock lock_request() { return {std::lock_guard(request_mu), std::lock_guard(api_mu)}; }
  using Decoded = detail::DecodedTile;
  std::list<Decoded> decoded;  // front = most recently used
  // Per tile: its entry in `decoded`, or decoded.end() (a list's end() is stable).
  std::vector<std::list<Decoded>::iterator> decoded_entry;
  std::vector<std::uint8_t> decoded_before;  // per tile: decoded at least once (adaptive mode)
  std::vector<Decoded> free_buffers;
  std::uint64_t requests = 0;  // batch requests begun (under api_mu): which one decoded a tile
  std::unique_ptr<tbb::task_arena> decode_arena;

  // ---- decode-ahead (decode_ahead.cpp) ----
  // Under api_mu: the tile requested or being decoded in the background, and `ahead_cv`, which
  // is signalled when it is done (consumers waiting for it hold api_mu).
  std::optional<std::uint64_t> ahead_tile;
  std::condition_variable ahead_cv;
  // Under ahead_mu: the handed-over job, so that the thread never needs api_mu to start (a
  // get_batch holds api_mu for its whole gather, which is exactly when the decode should run).
  // A decode-ahead in progress, shared with consumers that help: a consumer that needs the tile
  // while it is being decoded takes chunks from `next_chunk` and decodes them into the same
  // buffer instead of waiting idle (on two cores the epoch's caller otherwise sleeps through
  // most of every decode).
  struct AheadProgress {
    std::mutex mu;
    std::condition_variable cv;  // `ready` set, or another chunk done
    bool ready = false;          // tile fetched and buffer sized (or the fetch failed)
    std::shared_ptr<const Tile> tile;
    Decoded* buffer = nullptr;  // the job's buffer; stable until every chunk is done
    std::size_t n_chunks = 0;
    std::atomic<std::size_t> next_chunk{0};
    std::size_t done = 0;                      // chunks finished (under mu)
    std::vector<std::vector<WideCount>> wide;  // per chunk, narrow form
    std::exception_ptr error;                  // the first failure (under mu)
  };
  struct AheadJob {
    std::uint64_t tile = 0;
    Decoded buffer;
    std::shared_ptr<AheadProgress> progress;
  };
  std::shared_ptr<AheadProgress> ahead_progress;  // of `ahead_tile` (under api_mu)
  std::mutex ahead_mu;
  std::condition_variable ahead_job_cv;
  std::optional<AheadJob> ahead_job;
  bool ahead_stopping = false;
  std::thread ahead_thread;

  // Scratch of the batch request in progress, reused across calls (guarded by api_mu).
  struct BatchPlan {
    std::vector<std::uint64_t> tiles;                 // distinct tiles, first-appearance order
    std::vector<std::shared_ptr<const Tile>> parsed;  // per entry of `tiles`; null if it was decoded
    std::vector<std::uint64_t> to_fetch;              // the tiles not decoded when the request began
    std::vector<std::size_t> offsets;                 // per tile: its positions in `order`
    std::vector<std::size_t> order;                   // request positions grouped by tile
    std::vector<std::size_t> slot_of, cursor;         // grouping scratch
    std::vector<std::size_t> slot_by_tile;            // tile -> entry of `tiles`, or none
    // A batch of some genes only (get_batch with genes): the genes, each tile's requested rows,
    // and the kept nonzeros staged in tile order.
    detail::KeptGenes kept;
    std::vector<std::uint32_t> previous_genes;               // kept.columns of the gene request before
    bool genes_again = false;                                // this request's genes are previous_genes
    std::vector<const detail::GeneProjection*> projections;  // per entry of `tiles` (fill_projected)
    std::vector<detail::TileRow> tile_rows;
    detail::KeptStage stage;
  };
  BatchPlan plan;

  // Lazily loaded per-gene objects (guarded by api_mu).
  std::optional<std::vector<std::string>> var_names;
  std::optional<std::vector<std::int32_t>> gene_order;

  // Fetches, parses and checks tile `t` (stages 1–4); runs on any thread.
  std::shared_ptr<const Tile> fetch(std::uint64_t t);
  std::shared_ptr<const Tile> get_tile(std::uint64_t t);
  std::size_t prefetch(std::span<const std::uint64_t> tiles);
  // Evicts least recently used complete, unpinned entries until one more fits. Caller holds
  // cache_mu. False when nothing can be evicted.
  bool make_room();
  void fetch_loop();
  void start_fetchers();
  void stop();

  void pin(const std::vector<std::uint64_t>& tiles);
  void unpin(const std::vector<std::uint64_t>& tiles);
  // The decoded tile (through the LRU; waits for a decode-ahead of `t` in flight). Caller holds
  // api_mu.
  // `tile` is the parsed tile when the caller has it; fetched if it is needed and null.
  const Decoded& decode(std::uint64_t t, const Tile* tile);
  // A buffer from the free list (or a new, empty one); caller holds api_mu.
  Decoded take_buffer();
  // Returns an evicted or unused buffer to the free list (which keeps at most two).
  void recycle(Decoded&& d);
  // The decoded entry of `t`, or nullptr; caller holds api_mu.
  Decoded* find_decoded(std::uint64_t t);
  // Makes the most recently used entry of `d`'s tile (which must not be decoded already).
  Decoded& insert_decoded(Decoded&& d);
  // Evicts decoded tiles, least recently used first and never `keep`, until tile `t` may be
  // added, and tells whether it will be kept as hot (OpenOptions::max_cached_tiles explains the
  // policy). nullopt when no room can be made without evicting `keep`. Caller holds api_mu.
  std::optional<bool> make_decoded_room(std::uint64_t t, std::optional<std::uint64_t> keep);
  // Bytes tile `t` takes decoded, from the manifest's nonzero count.
  std::uint64_t decoded_bytes(std::uint64_t t) const;
  // Bytes the hot tiles take, their gene indexes included.
  std::uint64_t hot_decoded_bytes() const;
  // The gene index of decoded tile `d`, built now if `d` is hot and the index fits in what the
  // hot tiles leave of decoded_cache_bytes; nullptr otherwise (the caller scans the rows). A
  // transient tile that an earlier request decoded is reused as surely as one decoded twice, and
  // becomes hot here when it fits.
  const detail::GeneIndex* gene_index_of(Decoded& d);
  // The projection of indexed tile `d` onto plan.kept: the one it holds, or one built now when
  // the previous gene request asked for the same genes (a list asked for twice is likely asked
  // for again) and it fits in what the hot tiles leave of decoded_cache_bytes; else nullptr.
  const detail::GeneProjection* projection_of(Decoded& d, const detail::GeneIndex& index);
  // Grows `d` to hold tile `t` and decodes it there, counting it in the statistics; the caller
  // holds api_mu or owns `d` exclusively.
  void decode_into(Decoded& d, std::uint64_t t, const Tile& tile);
  // Sizes `d` for tile `t` and picks its form (the first half of decode_into).
  void prepare_buffer(Decoded& d, std::uint64_t t, const Tile& tile) const;
  void count_decode(std::chrono::steady_clock::time_point t0);

  bool decode_ahead(std::uint64_t t, std::optional<std::uint64_t> keep);
  bool decode_ahead_locked(std::uint64_t t, std::optional<std::uint64_t> keep);  // caller holds api_mu
  void ahead_loop();
  // Decodes chunks of `p` until none is left to take; returns when this thread has no more.
  static void decode_chunks(AheadProgress& p);
  void stop_decode_ahead();
  // With api_mu held by the caller: waits (releasing it) while `t` is being decoded ahead.
  void wait_for_ahead(std::uint64_t t);
};

}  // namespace tessera::cells
