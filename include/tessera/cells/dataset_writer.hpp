// Writing a deltacells dataset (spec deltacells.md §4.7, §4.8, §7.3, §7.8): rows are read from a
// CsrBlockSource one tile at a time on the calling thread, canonicalized and encoded by a pool
// of workers with at most `max_in_flight` tiles in memory, written atomically (temporary file +
// rename) and committed to the manifest in tile order. The result depends only on the cells,
// the gene order and the encoding options — never on the number of workers or threads.
//
// Output directory policy: an existing non-directory is an error; a non-empty directory needs
// `overwrite`, in which case the new dataset is built in the sibling `<out>.tmp<pid>` and
// swapped in with one atomic exchange once complete. On failure (or when `interrupted` says so)
// everything this call created is removed. `manifest.json` is always written last, so a process
// killed outright leaves either no manifest or a complete dataset, and never touches the old one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"
#include "tessera/cells/manifest.hpp"
#include "tessera/cells/obs_shards.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {

struct TileWritten {
  std::uint64_t index = 0;  // tile number, from 0
  std::uint64_t n_tiles = 0;
  std::uint64_t n_cells = 0;
  std::uint64_t nnz = 0;
  std::uint64_t bytes = 0;  // size of the tile object
};

struct DatasetWriteOptions {
  std::uint32_t version = kVersion2;
  std::uint64_t tile_size = 10000;
  std::uint32_t n_chunks = 8;
  int level = 19;
  unsigned workers = 0;           // tiles encoded concurrently (0 = hardware threads)
  unsigned threads = 1;           // compression threads per tile (0 = all available)
  std::size_t max_in_flight = 0;  // tiles read but not yet committed (0 = 4 × workers)
  // Stored column j is source column gene_order[j]; empty = source order (no gene_order.npy).
  std::vector<std::int32_t> gene_order{};
  // One name per stored column; empty = no var_names.txt.
  std::vector<std::string> var_names{};
  codec::json::Json metadata = codec::json::Json::object();
  // The obs sidecar (schema and every cell's row); null = no obs. Its columns must hold exactly
  // the dataset's cells. Written after the tiles, before the manifest.
  std::shared_ptr<const ObsWriteInput> obs{};
  // var.parquet (one row per stored gene, in stored order); null = none.
  std::shared_ptr<const VarTable> var_table{};
  bool overwrite = false;
  // Called after each tile is committed, in tile order, on the calling thread's pipeline stage.
  std::function<void(const TileWritten&)> on_tile{};
  // Polled before each tile is read; when it returns true the write stops with an Interrupted
  // error and everything it created is removed (§7.8: SIGINT, SIGTERM).
  std::function<bool()> interrupted{};

  // A distributed convert (docs/distributed.md) splits the write in two:
  //  - a task sets `tile_range` [first, last): only those tiles are encoded, into
  //    `<output>/tiles/` (created when missing, shared with the other tasks), and nothing else is
  //    written: no output policy, no closing objects. The manifest returned lists those tiles;
  //  - the last step sets `tiles_from` (a directory the tasks wrote into): no tile is encoded;
  //    each is taken from `<tiles_from>/tiles/` (linked, or copied across file systems) after
  //    parsing it (§2 rules, CRC included) and checking its version, gene count and cell count
  //    against this dataset's, and the rest of the dataset is written as always. `tiles_from`
  //    itself is left as it was.
  struct TileRange {
    std::uint64_t first = 0, last = 0;
  };
  std::optional<TileRange> tile_range{};
  std::string tiles_from{};
};

// Thrown when `interrupted` asks a long operation to stop.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Writes the whole dataset and returns its manifest. Throws UsageError for bad options or an
// occupied output, and whatever the source or the encoder throws.
Manifest write_dataset(CsrBlockSource& source, const std::string& output, const DatasetWriteOptions& options);

// §7.3: the total count of every source gene over all rows of `source`, exactly in 64 bits
// (values validated as in §4.1 while summing).
std::vector<std::uint64_t> gene_totals(CsrBlockSource& source, std::uint64_t block_rows = 10000,
                                       const std::function<bool()>& interrupted = {});
// Genes by decreasing total, ties in source order (a stable sort): the gene order to store.
std::vector<std::int32_t> order_by_decreasing_total(const std::vector<std::uint64_t>& totals);

}  // namespace tessera::cells
