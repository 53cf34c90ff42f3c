// Obs shards (spec deltacells.md §6.5, §6.8 P1–P4, §6.10): writing `obs/obs_NNNN.parquet` with one
// row group per tile, opening a shard's footer with the checks every reader applies, and the full
// verification `tessera cells verify` runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/manifest.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/columnar/column.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/io/prefetching_source.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {

// What the dataset writer stores as obs: the schema and, per schema column, one Column holding
// every cell of the dataset in cell order (stored types, as encode_obs_table gives them).
struct ObsWriteInput {
  ObsSchema schema;
  std::vector<columnar::Column> columns;
  std::uint64_t tiles_per_file = 1000;  // K
  int zstd_level = 9;
};

// What writing the obs objects produced, for the manifest.
struct ObsWritten {
  std::string schema_text;
  std::vector<std::uint64_t> shard_bytes;
  std::vector<std::string> shard_sha256;
  std::string fingerprint;
};

// Writes obs/schema.json and the shards into `store` (each through a temporary name and a
// rename). `tile_cells` splits the rows into tiles. UsageError when the columns do not match the
// schema or the cell count.
ObsWritten write_obs(io::Store& store, const ObsWriteInput& input, std::span<const std::uint64_t> tile_cells);

// Records `written` in the manifest's obs keys (has_obs, obs_tiles_per_file, shard sizes and
// hashes, fingerprint).
void record_obs(Manifest& manifest, const ObsWritten& written, std::uint64_t tiles_per_file);

// One shard opened for reading: its source and parsed footer, checked against the manifest and
// schema (P1 size, P2, P3, P4). Every failure is a FormatError naming the shard.
struct ObsShard {
  std::uint64_t index = 0;
  std::uint64_t first_tile = 0;  // tile of row group 0
  std::string key;               // obs/obs_NNNN.parquet
  // The shard object. On a remote store (io::Store::remote) opening it fetches its head and tail
  // (the Parquet magic and footer) in one parallel batch, and a reader that knows which column
  // chunks it needs prefetches them in a few coalesced requests (io/prefetching_source.hpp);
  // locally every read is its own, as before.
  std::unique_ptr<io::PrefetchingSource> source;
  bool remote = false;
  std::unique_ptr<columnar::ParquetFile> file;
  // Schema column i is Parquet column column_of[i].
  std::vector<std::size_t> column_of;
};
ObsShard open_obs_shard(const io::Store& store, const Manifest& manifest, const ObsSchema& schema, std::uint64_t shard);

// Checks a decoded column chunk of schema column `column` against P6 (category codes within the
// vocabulary, no nulls) and returns it in the stored type (an INT64 `uint32` column narrowed,
// dictionary-typed columns already decoded). `where` names the shard, row group and column.
columnar::Column check_obs_chunk(columnar::Column chunk, const ObsColumnSchema& column, const std::string& where);

// Reads and parses obs/schema.json (S1–S6; with `canonical`, S7 too).
struct ObsSchemaFile {
  std::string text;
  ObsSchema schema;
};
ObsSchemaFile read_obs_schema(const io::Store& store, bool canonical = false);

// §6.10: every shard in full (P1 size and SHA-256, P2, P3, P4, P5, P6), then P7 and S1–S7.
// `on_shard(i, n)` reports progress. Throws FormatError for the first failure.
void verify_obs(const io::Store& store, const Manifest& manifest,
                const std::function<void(std::uint64_t, std::uint64_t)>& on_shard = {});

}  // namespace tessera::cells
