// Reading a deltacells dataset (spec deltacells.md §8): `Dataset::open` reads and validates the
// manifest only; tiles are fetched on demand or in the background (prefetch), parsed and checked
// against the manifest (stages 1–4 of §3), decoded through an LRU of decoded tiles whose buffers
// are recycled, and gathered into CSR batches in any order with repeats.
//
// Thread model: `get_batch`, `batch_nnz`, `get_tile` and `prefetch` may be called from any
// thread; batch calls on one Dataset are serialized by a lock that fetch threads never take.
// For parallel consumers, open one Dataset per consumer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cells/manifest.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {

struct OpenOptions {
  // Decoded tiles kept. 0 (the default) adapts to the access pattern: the two most recent tiles
  // decoded for the first time, plus tiles decoded again (random batches, later epochs) up to
  // `decoded_cache_bytes` of decoded nonzeros, least recently used out first. So a single pass
  // costs two tiles of memory, and a dataset read repeatedly stays decoded while it fits.
  // N > 0: a plain LRU of N decoded tiles (decoded_cache_bytes is then not used).
  int max_cached_tiles = 0;
  std::uint64_t decoded_cache_bytes = std::uint64_t{1} << 30;  // see max_cached_tiles
  // Compressed tiles kept or in flight, and concurrent background tile fetches. 0 (the default)
  // lets `open` choose for the store (`fetch_depth`): 8 and 4 on a local disk; on a remote store,
  // where every fetch waits a round trip, as many fetches as keep kRemoteBytesInFlight of tiles
  // under way (4 to 32), and two tiles more kept. `options()` gives the values chosen.
  int max_prefetch_tiles = 0;
  int io_threads = 0;
  int decode_threads = 1;  // chunks of one tile decoded in parallel
  bool verify_crc = true;  // T15 on every fetch (the reference's default is off)
  // Keep decoded tiles as uint16 genes and counts when the dataset has at most 65,536 genes
  // (Tile::decode_narrow): half the memory per cached tile and half the memory traffic of
  // decoding and gathering. Batches are the same either way.
  bool narrow_tiles = true;
};

// Bytes of tiles a remote store keeps in flight when the I/O depth is chosen for it: a link of
// 200 MB/s with 50 ms round trips carries about this much while a tile's request waits.
inline constexpr std::uint64_t kRemoteBytesInFlight = std::uint64_t{24} << 20;

// `options` with max_prefetch_tiles and io_threads chosen where they are 0 (see OpenOptions), for
// a store that is `remote` or not and whose tiles hold `mean_tile_bytes` each.
OpenOptions fetch_depth(OpenOptions options, bool remote, std::uint64_t mean_tile_bytes);

enum class Values { Int32, Float32 };

// A CSR batch of cells: row i is the i-th requested cell.
struct SparseBatch {
  std::vector<std::int64_t> indptr{0};     // n + 1 entries
  std::vector<std::int32_t> indices;       // stored column numbers
  std::vector<std::int32_t> values_int32;  // filled when values == Int32
  std::vector<float> values_float32;       // filled when values == Float32
  Values values = Values::Float32;
  std::uint64_t n_genes = 0;
  std::uint64_t n_rows() const noexcept { return indptr.size() - 1; }
  std::uint64_t nnz() const noexcept { return static_cast<std::uint64_t>(indptr.back()); }
};

struct DatasetStats {
  std::uint64_t tiles_fetched = 0;
  double fetch_seconds = 0;
  double stall_seconds = 0;  // time callers waited for fetches in flight
  std::uint64_t tiles_decoded = 0;
  double decode_seconds = 0;
  std::uint64_t tile_cache_hits = 0;
  std::uint64_t decoded_cache_hits = 0;
  std::uint64_t gene_indexes_built = 0;      // decoded tiles given a by-gene index (get_batch with genes)
  std::uint64_t gene_projections_built = 0;  // decoded tiles projected onto a list of genes asked for again
};

// Thrown when a fetched tile's nonzero count differs from the manifest's tile_nnz (D3): a
// FormatError whose `tile()` says which, so `verify` can report it in the reference's words.
class TileCountMismatch : public FormatError {
 public:
  TileCountMismatch(std::uint64_t tile, const std::string& message, const std::string& object)
      : FormatError(message, object, "header"), tile_(tile) {}
  std::uint64_t tile() const noexcept { return tile_; }

 private:
  std::uint64_t tile_;
};

// `tiles/tile_NNNNNN.dct` (at least 6 digits).
std::string tile_key(std::uint64_t tile);

// A local path or a `file://` URI as a filesystem path; UnsupportedError for any other scheme
// (io::local_path).
std::string local_path_of(const std::string& path_or_uri);

class Dataset {
 public:
  // Opens the dataset in `store` (its root). Reads and validates manifest.json (§1.4);
  // options below 1 are UsageErrors. A store without manifest.json is not a dataset (FormatError).
  static std::unique_ptr<Dataset> open(std::shared_ptr<const io::Store> store, const OpenOptions& options = {});
  // Opens a local directory given as a path or `file://` URI, or the objects below an
  // `http(s)://` prefix (io::open_store; nothing is listed: every key comes from the manifest).
  static std::unique_ptr<Dataset> open(const std::string& path_or_uri, const OpenOptions& options = {});
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const Manifest& manifest() const noexcept;
  const io::Store& store() const noexcept;
  const OpenOptions& options() const noexcept;
  std::uint64_t n_cells() const noexcept { return manifest().n_cells; }
  std::uint64_t n_genes() const noexcept { return manifest().n_genes; }
  std::uint64_t n_tiles() const noexcept { return manifest().n_tiles(); }
  std::uint64_t tile_size() const noexcept { return manifest().tile_size; }
  std::uint32_t version() const noexcept { return manifest().version; }
  // Cumulative cells per tile (limits[t] = one past the last cell of tile t).
  const std::vector<std::uint64_t>& limits() const noexcept;
  // [start(t), limits[t]); UsageError for t outside the tiles.
  std::pair<std::uint64_t, std::uint64_t> tile_bounds(std::uint64_t tile) const;
  // The tile holding global cell `cell`; UsageError outside [0, n_cells).
  std::uint64_t tile_of(std::uint64_t cell) const;

  // Lazily loaded, empty when the dataset has none (N1–N5 checked on first use).
  const std::vector<std::string>& var_names();
  const std::vector<std::int32_t>& gene_order();

  // The parsed tile (from the cache, a fetch in flight, or a new fetch).
  std::shared_ptr<const Tile> get_tile(std::uint64_t tile);
  // Starts background fetches; returns how many were started. Never blocks. UsageError for a
  // tile outside [0, n_tiles).
  std::size_t prefetch(std::span<const std::uint64_t> tiles);
  std::size_t prefetch_cells(std::span<const std::int64_t> cells);
  // Starts decoding `tile` into the decoded-tile cache on a background thread, so that a later
  // get_batch finds it decoded while the caller was busy with the current batch (the epoch
  // iterator calls this for its next tile). One tile at a time; never blocks on the decode.
  // Room is made by evicting least recently used tiles, never `keep` (default: the most recently
  // used tile, which the caller is presumably reading). Returns false, doing nothing, when the
  // tile is already decoded or being decoded, another decode-ahead is running, or no room can be
  // made that way. While it runs, one decoded tile more than max_cached_tiles may exist. A failed
  // decode-ahead leaves no trace: get_batch decodes the tile itself and reports the error.
  // UsageError for a tile outside [0, n_tiles).
  bool decode_ahead(std::uint64_t tile, std::optional<std::uint64_t> keep = std::nullopt);

  // Nonzeros get_batch would return, from the tiles' indptr (no decoding).
  std::uint64_t batch_nnz(std::span<const std::int64_t> cells);
  // The requested cells, in order, repeats allowed. UsageError for any index outside
  // [0, n_cells), raised before anything is fetched.
  SparseBatch get_batch(std::span<const std::int64_t> cells, Values values = Values::Float32);
  // The same into `out`, reusing its vectors' capacity: once they have grown to the largest batch,
  // a loop of calls allocates and page-faults nothing, and only growth beyond the previous batch's
  // size is zero-filled. The vector of the other value type is emptied (its capacity kept). On an
  // exception `out` holds unspecified (valid) contents.
  void get_batch(std::span<const std::int64_t> cells, Values values, SparseBatch& out);
  // Only the stored gene columns `genes` (repeats allowed), as columns 0, 1, … of `out`
  // (out.n_genes = genes.size()), each row ascending: select_columns(get_batch(cells), genes)
  // without gathering whole rows, so a small gene subset costs a scan of the decoded rows and
  // writes only what is kept. UsageError for a gene outside [0, n_genes), before any fetch.
  void get_batch(std::span<const std::int64_t> cells, std::span<const std::int64_t> genes, Values values,
                 SparseBatch& out);
  // Into caller buffers holding at least batch_nnz(cells) elements (UsageError otherwise);
  // returns the indptr.
  std::vector<std::int64_t> get_batch_into(std::span<const std::int64_t> cells, std::span<std::int32_t> out_indices,
                                           std::span<std::int32_t> out_values);
  std::vector<std::int64_t> get_batch_into(std::span<const std::int64_t> cells, std::span<std::int32_t> out_indices,
                                           std::span<float> out_values);

  DatasetStats stats() const;
  // Stops the fetch threads and drops the caches (also done by the destructor).
  void close();

  struct Impl;

 private:
  explicit Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cells
