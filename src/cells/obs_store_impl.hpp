// ObsStore's state, shared by obs_store.cpp (construction, localize C1–C6, footers) and
// obs_take.cpp (opening and validating cache files C7–C9, take).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/cells/manifest.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_shards.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {

// One validated cache file, memory-mapped; `tiles[t]` views record batch t (tile t).
struct ObsCacheFile {
  std::unique_ptr<io::ByteSource> source;
  std::optional<columnar::ArrowFile> file;
  std::vector<const columnar::ArrowArrayView*> tiles;
};

struct ObsStore::Impl {
  std::shared_ptr<const io::Store> store;
  Manifest manifest;
  ObsOpenOptions options;
  std::string schema_text;
  ObsSchema schema;
  std::string root;                   // the cache root
  std::string fingerprint_dir;        // <root>/<fingerprint>
  std::string dir;                    // <root>/<fingerprint>/obs
  std::vector<std::uint64_t> limits;  // cumulative tile_cells

  std::mutex localize_mu;  // one localize at a time in this process (flock orders processes)

  std::mutex shards_mu;  // guards `shards` (opened once, lazily)
  std::vector<ObsShard> shards;
  bool shards_open = false;

  std::mutex files_mu;  // guards `files`
  std::unordered_map<std::string, std::shared_ptr<const ObsCacheFile>> files;

  std::uint64_t n_shards() const;
  // The cache file of a column (IoError when its name is too long).
  std::string file_path(const std::string& column) const;
  // C1: UsageError `unknown obs columns [...]; available: [...]`.
  void check_known(const std::vector<std::string>& columns) const;
  // Every shard's footer (C4: P1 size, P2–P4), opened on first use and kept.
  const std::vector<ObsShard>& open_shards();
  std::vector<std::string> localize(const std::vector<std::string>& columns, int threads);
  // C7–C9: the validated cache file of a column, from the open-file cache or the disk (localizing
  // it if absent, rebuilding it once if corrupt).
  std::shared_ptr<const ObsCacheFile> cache_file(const std::string& column);
};

// Opens and validates (C7, C8) the cache file at `path` for schema column `column`; FormatError
// (or UnsupportedError) when it fails, IoError when it cannot be read.
std::shared_ptr<const ObsCacheFile> open_obs_cache_file(const std::string& path, const ObsColumnSchema& column,
                                                        const Manifest& manifest);

}  // namespace tessera::cells
