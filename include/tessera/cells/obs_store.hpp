// Access to a dataset's obs (spec deltacells.md §6.9, §8.7): the node-local Arrow IPC cache shared
// with the Python reference (`<root>/<fingerprint>/obs/<quoted name>.arrow`, `flock` on
// `<root>/<fingerprint>/.lock`), localizing columns with ranged reads of only their column
// chunks, validating cache files (C7–C9), and `take` of rows by global cell index.
//
// Thread model: one ObsStore may be used from several threads; `localize` serializes with other
// processes through the lock file and with other threads of this process through a mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/manifest.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/columnar/column.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells {

struct ObsOpenOptions {
  std::string cache_dir{};  // empty: $DELTACELLS_CACHE, $XDG_CACHE_HOME/deltacells, ~/.cache/deltacells
  // Receives warnings (columns localized inside `take`; a corrupt cache file deleted and rebuilt,
  // C9); empty: warnings are dropped.
  std::function<void(const std::string&)> warn{};
  int threads = 8;  // default localize threads
};

// The cache root for `cache_dir` and the environment (§6.9), normalized as pathlib prints it;
// UsageError for a `~user` prefix naming no user (pathlib raises too).
std::string resolve_obs_cache_root(const std::string& cache_dir);

// One column of a `take` result (§6.9 Take):
//  - category: `values` holds the stored codes (int8/16/32, −1 missing); `categories` the vocabulary;
//  - numeric: the stored type when no touched tile has a null in the column, else Double with
//    NaN for missing (and no validity);
//  - bool, string: values with validity (empty validity = all valid).
struct ObsTakeColumn {
  std::string name;
  ObsKind kind = ObsKind::String;
  columnar::Column values;
  std::vector<std::string> categories;
};

// Thread-safety: one thread at a time per ObsStore (the cache files it shares with other
// processes are guarded by file locks). Lifetime: shares ownership of the dataset's store.
class ObsStore {
 public:
  // `store` is the dataset's store; FormatError/UsageError when the manifest has no obs.
  ObsStore(std::shared_ptr<const io::Store> store, const Manifest& manifest, ObsOpenOptions options = {});
  ~ObsStore();
  ObsStore(const ObsStore&) = delete;
  ObsStore& operator=(const ObsStore&) = delete;

  const ObsSchema& schema() const noexcept;
  const std::string& schema_text() const noexcept;
  std::vector<std::string> columns() const { return schema().names(); }

  // C1–C6: makes the requested columns local; returns those fetched, in request order without
  // repeats (empty if all were local: then nothing is locked or read). `threads` 0 = the open
  // options' default. UsageError for unknown columns (`unknown obs columns [...]; available:
  // [...]`), IoError for a column whose cache file name is too long, FormatError for shards
  // that break P1–P6 (naming the shard); on error no temporary file is left behind.
  std::vector<std::string> localize(std::span<const std::string> columns, int threads = 0);
  std::vector<std::string> localize_all(int threads = 0);
  // Columns whose cache file exists.
  std::vector<std::string> localized_columns() const;
  // Compressed bytes per schema column over every row group of every shard (from the footers).
  std::vector<std::uint64_t> column_nbytes() const;

  // Rows for global cells, in order, repeats allowed (UsageError outside [0, n_cells), checked
  // before anything else). Columns not yet local are localized first, with a warning; cache
  // files are validated once (C7, C8) and kept open (memory-mapped) by the store.
  std::vector<ObsTakeColumn> take(std::span<const std::int64_t> cells, std::span<const std::string> columns);

  std::string cache_root() const;
  std::string cache_dir() const;  // <root>/<fingerprint>/obs

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cells
