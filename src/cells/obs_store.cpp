// The obs store (spec deltacells.md §6.9, §8.7): construction, the footers of the shards, and
// localizing columns (C1–C6) — ranged reads of only the requested columns' chunks on a pool of
// threads, consumed in tile order, written as one Arrow IPC record batch per tile to
// `<file>.tmp<pid>` and renamed into place under an exclusive BSD flock shared with the Python
// reference. Opening cache files and `take` live in obs_take.cpp.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "obs_cache.hpp"
#include "obs_store_impl.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/file_lock.hpp"

namespace tessera::cells {
namespace {

std::vector<std::string> unique_in_order(std::span<const std::string> columns) {
  std::vector<std::string> out;
  for (const auto& c : columns)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

// One cache file being built.
struct Target {
  std::size_t column = 0;  // schema index
  std::string final_path;
  std::string temp_path;
  std::unique_ptr<obs_cache::PlainFileSink> sink;
  std::unique_ptr<columnar::ArrowFileWriter> writer;
};

// Deletes the temporary files of a build that did not finish (C6).
struct TempCleanup {
  std::vector<Target>& targets;
  bool done = false;
  ~TempCleanup() {
    if (done) return;
    for (auto& t : targets) {
      t.writer.reset();
      t.sink.reset();
      if (!t.temp_path.empty()) ::unlink(t.temp_path.c_str());
    }
  }
};

// C5: item i is column chunk (tile i / m, target i % m). Workers read and decode items in
// increasing order with at most `window` items ahead of the consumer; `consume` sees them in
// order on the calling thread. The first error (a worker's or the consumer's) stops everything
// and is rethrown after the workers have been joined.
template <typename Read, typename Consume>
void run_in_tile_order(std::uint64_t n, int threads, Read read, Consume consume) {
  if (n == 0) return;
  const std::uint64_t window = std::max<std::uint64_t>(2, 2 * static_cast<std::uint64_t>(threads));
  struct Slot {
    std::optional<columnar::Column> column;
    std::exception_ptr error;
    bool ready = false;
  };
  std::vector<Slot> ring(window);
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::uint64_t next = 0, consumed = 0;
  bool stop = false;

  const auto worker = [&] {
    for (;;) {
      std::uint64_t i;
      {
        std::unique_lock lock(mu);
        work_cv.wait(lock, [&] { return stop || next >= n || next < consumed + window; });
        if (stop || next >= n) return;
        i = next++;
      }
      Slot result;
      try {
        result.column = read(i);
      } catch (...) {
        result.error = std::current_exception();
      }
      result.ready = true;
      {
        std::lock_guard lock(mu);
        ring[i % window] = std::move(result);
      }
      done_cv.notify_all();
    }
  };
  const auto n_workers = static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(threads), n));
  std::vector<std::thread> pool;
  const auto shutdown = [&] {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : pool) t.join();
    pool.clear();
  };
  try {
    for (std::size_t w = 0; w < n_workers; ++w) pool.emplace_back(worker);
    for (std::uint64_t i = 0; i < n; ++i) {
      Slot slot;
      {
        std::unique_lock lock(mu);
        done_cv.wait(lock, [&] { return ring[i % window].ready; });
        slot = std::move(ring[i % window]);
        ring[i % window] = Slot{};
        consumed = i + 1;
      }
      work_cv.notify_all();
      if (slot.error) std::rethrow_exception(slot.error);
      consume(i, std::move(*slot.column));
    }
  } catch (...) {
    shutdown();
    throw;
  }
  shutdown();
}

// Under the lock no other builder is running (every builder writes only while holding it), so a
// `<name>.arrow.tmp<pid>` still present was left by a process that died while localizing.
void remove_abandoned_cache_temporaries(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto at = name.rfind(".arrow.tmp");
    if (at == std::string::npos || at + 10 == name.size()) continue;
    if (name.find_first_not_of("0123456789", at + 10) != std::string::npos) continue;
    ::unlink(it->path().c_str());
  }
}

// Rethrows `e` with `where` (shard, row group, column) in front of its message when the message
// does not name the shard yet (e.g. a decompression error from deep inside the page decoder).
[[noreturn]] void rethrow_naming(const Error& e, const std::string& shard, const std::string& where) {
  const std::string message = e.what();
  if (message.find(shard) != std::string::npos) throw;
  const std::string text = where + ": " + message;
  if (dynamic_cast<const FormatError*>(&e)) throw FormatError(text, shard, where);
  if (dynamic_cast<const UnsupportedError*>(&e)) throw UnsupportedError(text, shard, where);
  if (dynamic_cast<const LimitError*>(&e)) throw LimitError(text, shard, where);
  if (dynamic_cast<const IoError*>(&e)) throw IoError(text, shard, where);
  throw;
}

}  // namespace

std::uint64_t ObsStore::Impl::n_shards() const {
  const std::uint64_t k = manifest.obs_tiles_per_file;
  return k == 0 ? 0 : (manifest.n_tiles() + k - 1) / k;
}

std::string ObsStore::Impl::file_path(const std::string& column) const {
  return dir + "/" + obs_cache::cache_file_name(column);
}

void ObsStore::Impl::check_known(const std::vector<std::string>& columns) const {
  std::vector<std::string> unknown;
  for (const auto& c : columns)
    if (!schema.find(c)) unknown.push_back(c);
  if (!unknown.empty())
    throw UsageError("unknown obs columns " + python_list_repr(unknown) +
                     "; available: " + python_list_repr(schema.names()));
}

const std::vector<ObsShard>& ObsStore::Impl::open_shards() {
  std::lock_guard lock(shards_mu);
  if (!shards_open) {
    try {
      for (std::uint64_t s = 0; s < n_shards(); ++s) shards.push_back(open_obs_shard(*store, manifest, schema, s));
    } catch (...) {
      shards.clear();
      throw;
    }
    shards_open = true;
  }
  return shards;
}

std::vector<std::string> ObsStore::Impl::localize(const std::vector<std::string>& requested, int threads) {
  const std::vector<std::string> columns = unique_in_order(requested);
  check_known(columns);  // C1
  const auto missing_now = [&] {
    std::vector<std::string> missing;
    for (const auto& c : columns)
      if (!obs_cache::file_exists(file_path(c))) missing.push_back(c);
    return missing;
  };
  if (missing_now().empty()) return {};  // C2

  // C3: one localize per process at a time, one per node through the flock.
  std::lock_guard in_process(localize_mu);
  obs_cache::make_directories(dir);
  io::FileLock lock(fingerprint_dir + "/.lock", "obs cache lock", io::FileLock::Wait::Block, "obs_cache.lock_busy");
  remove_abandoned_cache_temporaries(dir);
  std::vector<std::string> missing = missing_now();
  if (missing.empty()) return {};

  const std::vector<ObsShard>& opened = open_shards();  // C4
  if (threads <= 0) threads = options.threads > 0 ? options.threads : 8;

  std::vector<Target> targets(missing.size());
  TempCleanup cleanup{targets};
  const std::string suffix = ".tmp" + std::to_string(::getpid());
  for (std::size_t j = 0; j < missing.size(); ++j) {
    Target& t = targets[j];
    t.column = *schema.find(missing[j]);
    t.final_path = file_path(missing[j]);
    const std::string temp_name = obs_cache::cache_file_name(missing[j]) + suffix;
    if (temp_name.size() > NAME_MAX)
      throw IoError(
          "obs column '" + missing[j] + "': its temporary cache file name is longer than the file system allows",
          t.final_path);
    t.temp_path = t.final_path + suffix;
    t.sink = std::make_unique<obs_cache::PlainFileSink>(t.temp_path, "obs column '" + missing[j] + "'");
    const auto& col = schema.columns[t.column];
    t.writer = std::make_unique<columnar::ArrowFileWriter>(
        *t.sink, std::vector<columnar::ArrowField>{{col.name, col.type, true}});
  }

  // C5: chunk (tile t, target j) is one ranged read of shard t / K, row group t % K.
  const std::uint64_t m = targets.size();
  const std::uint64_t k = manifest.obs_tiles_per_file;
  // On a remote store the first read of a shard fetches all of its chunks this localize needs,
  // coalesced and in parallel (a no-op locally); they are dropped once the shard is consumed.
  std::vector<std::once_flag> shard_prefetched(opened.size());
  const auto prefetch_shard = [&](const ObsShard& shard) {
    if (!shard.remote) return;
    std::call_once(shard_prefetched[shard.index], [&] {
      std::vector<io::ByteRange> ranges;
      for (const auto& group : shard.file->row_groups())
        for (const Target& t : targets) {
          const auto& info = group.columns.at(shard.column_of.at(t.column));
          ranges.push_back({info.offset, info.size});
        }
      shard.source->prefetch(ranges);
    });
  };
  const auto read = [&](std::uint64_t i) {
    const std::uint64_t tile = i / m;
    const Target& t = targets[i % m];
    const ObsShard& shard = opened.at(tile / k);
    const std::uint64_t group = tile % k;
    const auto& col = schema.columns[t.column];
    const std::string where = shard.key + ": row group " + std::to_string(group) + " column '" + col.name + "'";
    columnar::Column chunk;
    try {
      prefetch_shard(shard);
      chunk = check_obs_chunk(shard.file->read_column(group, shard.column_of.at(t.column)), col, where);
    } catch (const Error& e) {
      rethrow_naming(e, shard.key, where);
    }
    if (chunk.length != manifest.tile_cells[tile])
      throw FormatError(where + ": " + std::to_string(chunk.length) + " rows, tile " + std::to_string(tile) + " has " +
                            std::to_string(manifest.tile_cells[tile]) + " cells (P4)",
                        shard.key, where);
    return chunk;
  };
  const auto consume = [&](std::uint64_t i, columnar::Column chunk) {
    targets[i % m].writer->write_batch(std::span<const columnar::Column>(&chunk, 1));
    const std::uint64_t tile = i / m;
    const bool shard_done = i % m == m - 1 && (tile % k == k - 1 || tile + 1 == manifest.n_tiles());
    if (shard_done) opened.at(tile / k).source->drop();
  };
  run_in_tile_order(manifest.n_tiles() * m, threads, read, consume);

  // C6: finish every file, then rename each into place.
  for (auto& t : targets) {
    t.writer->finish();
    t.writer.reset();
    t.sink.reset();
  }
  for (auto& t : targets) {
    obs_cache::write_check(t.temp_path, t.final_path);  // before the rename, which keeps size and mtime
    if (::rename(t.temp_path.c_str(), t.final_path.c_str()) != 0) {
      const int e = errno;
      throw IoError("cannot rename " + t.temp_path + " into place: " + std::strerror(e), t.final_path);
    }
    t.temp_path.clear();
  }
  cleanup.done = true;
  return missing;
}

ObsStore::ObsStore(std::shared_ptr<const io::Store> store, const Manifest& manifest, ObsOpenOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!store) throw UsageError("ObsStore: no store");
  if (!manifest.has_obs) throw UsageError("this dataset has no obs", store->name());
  Impl& s = *impl_;
  s.store = std::move(store);
  s.manifest = manifest;
  s.options = std::move(options);
  ObsSchemaFile schema_file = read_obs_schema(*s.store);
  s.schema_text = std::move(schema_file.text);
  s.schema = std::move(schema_file.schema);
  s.root = resolve_obs_cache_root(s.options.cache_dir);
  s.fingerprint_dir = (s.root.back() == '/' ? s.root : s.root + "/") + manifest.obs_fingerprint;
  s.dir = s.fingerprint_dir + "/obs";
  s.limits = manifest.limits();
}

ObsStore::~ObsStore() = default;

const ObsSchema& ObsStore::schema() const noexcept { return impl_->schema; }
const std::string& ObsStore::schema_text() const noexcept { return impl_->schema_text; }
std::string ObsStore::cache_root() const { return impl_->root; }
std::string ObsStore::cache_dir() const { return impl_->dir; }

std::vector<std::string> ObsStore::localize(std::span<const std::string> columns, int threads) {
  return impl_->localize(std::vector<std::string>(columns.begin(), columns.end()), threads);
}

std::vector<std::string> ObsStore::localize_all(int threads) { return impl_->localize(columns(), threads); }

std::vector<std::string> ObsStore::localized_columns() const {
  std::vector<std::string> out;
  for (const auto& c : impl_->schema.columns) {
    std::string path;
    try {
      path = impl_->file_path(c.name);
    } catch (const IoError&) {
      continue;  // a name too long for the file system is never local
    }
    if (obs_cache::file_exists(path)) out.push_back(c.name);
  }
  return out;
}

std::vector<std::uint64_t> ObsStore::column_nbytes() const {
  const auto& shards = impl_->open_shards();
  std::vector<std::uint64_t> out(impl_->schema.columns.size(), 0);
  for (const auto& shard : shards)
    for (const auto& group : shard.file->row_groups())
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += group.columns.at(shard.column_of.at(i)).size;
  return out;
}

}  // namespace tessera::cells
