// Key → object storage for directory formats (Zarr stores, deltacells datasets, hive leaves).
// Keys are '/'-separated relative paths. Reads return ByteSources or byte vectors, so ranged
// reads work the same on a local directory, in memory and on an HTTP prefix (io/http.hpp);
// writes are atomic per object.
//
// A "GET" is one read request: `get`, `get_range`, `get_suffix`, or one `read_at` on a source
// returned by `open`. `CountingStore` counts them, which is how tests prove how many requests an
// operation makes. A missing object is a normal answer (nullptr / std::nullopt), not an error.
//
// Thread-safety: every member of every store may be called concurrently from any thread (readers
// such as cells::Dataset read one store from several threads; writers put different keys in
// parallel). Two concurrent puts of the same key leave one of them whole.
// Lifetime: what `open` returns owns its bytes and may outlive the store. Stores are not
// copyable: one store is shared by reference or through a smart pointer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::io {

// The key rule of the store model: non-empty '/'-separated components, none of them `.` or
// `..`, no `\` or NUL, no leading or trailing '/'. Keys read from metadata are checked with this
// before use.
bool is_valid_key(std::string_view key) noexcept;

// `prefix + "/" + name`, or `name` when the prefix is empty (the store root).
std::string join_key(std::string_view prefix, std::string_view name);

// The answer to a ranged read: the bytes and the total size of the object (what an HTTP server
// reports in Content-Range), so one request both reads a shard index and bounds its entries.
struct RangeRead {
  std::vector<std::byte> bytes;
  std::uint64_t object_size = 0;
};

// Immediate children of a prefix, like a delimiter LIST: object names and sub-prefix names
// (single components, sorted, names starting with '.' skipped).
struct DirListing {
  std::vector<std::string> objects;
  std::vector<std::string> prefixes;
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;
  // nullptr when the key does not exist.
  [[nodiscard]] virtual std::unique_ptr<ByteSource> open(const std::string& key) const = 0;
  [[nodiscard]] virtual bool exists(const std::string& key) const = 0;
  // Keys directly or transitively under `prefix` (empty = all), sorted.
  [[nodiscard]] virtual std::vector<std::string> list(const std::string& prefix) const = 0;
  virtual void put(const std::string& key, std::span<const std::byte> bytes) = 0;
  virtual void erase(const std::string& key) = 0;
  [[nodiscard]] virtual const std::string& name() const = 0;

  // One GET of the whole object.
  [[nodiscard]] virtual std::optional<std::vector<std::byte>> get(const std::string& key) const;
  // One GET of [offset, offset + length), clipped at the end of the object (a range starting
  // past the end returns no bytes), as HTTP range requests behave.
  [[nodiscard]] virtual std::optional<RangeRead> get_range(const std::string& key, std::uint64_t offset,
                                                           std::uint64_t length) const;
  // One GET of the last min(length, size) bytes.
  [[nodiscard]] virtual std::optional<RangeRead> get_suffix(const std::string& key, std::uint64_t length) const;
  // The object's size without reading it (a HEAD request).
  [[nodiscard]] virtual std::optional<std::uint64_t> size(const std::string& key) const;
  // The object, for a reader that will read all of it, in as few requests as the backend allows:
  // `open` by default (a local file is mapped); a remote store makes it one GET into memory
  // instead of a HEAD and a GET. nullptr when the key does not exist.
  [[nodiscard]] virtual std::unique_ptr<ByteSource> open_whole(const std::string& key) const;
  // True for stores whose requests cross a network (HTTP, S3, GCS): every request costs a
  // round trip, so readers fetch further ahead and in parallel there.
  virtual bool remote() const { return false; }
  // Immediate children of `prefix` (empty = the root).
  [[nodiscard]] virtual DirListing list_dir(const std::string& prefix) const;
  // Removes every object below `prefix` (and the object named `prefix`, if any).
  virtual void erase_prefix(const std::string& prefix);
};

// A local directory. Keys must not escape the root ("..", absolute paths are refused).
// Listings skip names starting with '.' (temporary files of in-flight atomic writes). A store opened on an existing
// directory is pinned to it: writers replace a dataset, a leaf or an export by exchanging a finished directory with the
// old one, and a reader must see the old version or the new one, never a mix. Every read (open, get, size, exists,
// list) checks, after it has resolved its path, that the root is still the directory the store
// was opened on, and otherwise throws IoError "{root}: replaced while it was being read (open it
// again to read the new version)". Objects already opened stay readable. Writes are not checked.
class DirectoryStore final : public Store {
 public:
  explicit DirectoryStore(std::string root, OpenMode mode = OpenMode::Mmap);
  std::unique_ptr<ByteSource> open(const std::string& key) const override;
  bool exists(const std::string& key) const override;
  std::vector<std::string> list(const std::string& prefix) const override;
  void put(const std::string& key, std::span<const std::byte> bytes) override;
  void erase(const std::string& key) override;
  const std::string& name() const override { return root_; }
  std::string path_of(const std::string& key) const;

  // Ranged reads use pread whatever the open mode: a copy is made anyway, and mapping a file
  // for one small read costs more than reading it.
  std::optional<std::vector<std::byte>> get(const std::string& key) const override;
  std::optional<RangeRead> get_range(const std::string& key, std::uint64_t offset, std::uint64_t length) const override;
  std::optional<RangeRead> get_suffix(const std::string& key, std::uint64_t length) const override;
  std::optional<std::uint64_t> size(const std::string& key) const override;
  // An object read whole is scanned: mapped with its descriptor kept (OpenMode::MapAndRead) so
  // the scan can view the map or copy with pread, whichever is cheaper (io/read_path.hpp).
  std::unique_ptr<ByteSource> open_whole(const std::string& key) const override;
  DirListing list_dir(const std::string& prefix) const override;
  void erase_prefix(const std::string& prefix) override;

 private:
  std::unique_ptr<ByteSource> open_as(const std::string& key, OpenMode mode) const;
  std::unique_ptr<ByteSource> open_pread(const std::string& key) const;
  // Throws when the root is no longer the directory the store was opened on (see above).
  void check_not_replaced() const;
  std::string root_;
  OpenMode mode_;
  // st_dev and st_ino of the root at construction; unset when it did not exist then.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> root_identity_;
};

// Objects held in memory (tests, fuzzing, staging). Keys must satisfy `is_valid_key`
// (UsageError otherwise). Thread-safe.
class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::string name = "<memory>") : name_(std::move(name)) {}
  std::unique_ptr<ByteSource> open(const std::string& key) const override;
  bool exists(const std::string& key) const override;
  std::vector<std::string> list(const std::string& prefix) const override;
  void put(const std::string& key, std::span<const std::byte> bytes) override;
  void erase(const std::string& key) override;
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  mutable std::mutex mutex_;
  // Objects are shared with the sources `open` returned, so replacing an object never
  // invalidates a reader in flight.
  std::map<std::string, std::shared_ptr<const std::vector<std::byte>>> objects_;
};

// Wraps a store and counts every request that goes through it: each `get`, `get_range` and
// `get_suffix` is one GET (a GET of a missing object included: over HTTP it is one request);
// each `read_at` on a source returned by `open` is one GET too (`view` is disabled on them so
// no access escapes the count). `size`/`exists` count as HEADs, `list`/`list_dir` as LISTs.
// Every GET is also recorded in a log. Writes pass through uncounted. Thread-safe.
class CountingStore final : public Store {
 public:
  enum class GetKind { Whole, Range, Suffix, SourceRead };
  struct Get {
    GetKind kind;
    std::string key;
    std::uint64_t offset;  // Range/SourceRead; 0 otherwise
    std::uint64_t length;  // bytes requested (Whole: bytes returned)
    bool found;
  };

  explicit CountingStore(Store& inner) : inner_(inner) {}

  std::unique_ptr<ByteSource> open(const std::string& key) const override;
  bool exists(const std::string& key) const override;
  std::vector<std::string> list(const std::string& prefix) const override;
  void put(const std::string& key, std::span<const std::byte> bytes) override { inner_.put(key, bytes); }
  void erase(const std::string& key) override { inner_.erase(key); }
  const std::string& name() const override { return inner_.name(); }
  std::optional<std::vector<std::byte>> get(const std::string& key) const override;
  // One counted Whole GET into memory.
  std::unique_ptr<ByteSource> open_whole(const std::string& key) const override;
  std::optional<RangeRead> get_range(const std::string& key, std::uint64_t offset, std::uint64_t length) const override;
  std::optional<RangeRead> get_suffix(const std::string& key, std::uint64_t length) const override;
  std::optional<std::uint64_t> size(const std::string& key) const override;
  DirListing list_dir(const std::string& prefix) const override;
  void erase_prefix(const std::string& prefix) override { inner_.erase_prefix(prefix); }
  bool remote() const override { return inner_.remote(); }

  std::uint64_t gets() const;
  std::uint64_t bytes() const;  // bytes returned by all GETs
  std::uint64_t heads() const;
  std::uint64_t lists() const;
  std::vector<Get> log() const;
  // GETs whose key equals `key`.
  std::uint64_t gets_of(const std::string& key) const;
  void reset();

  // Records one GET (used by the sources `open` returns).
  void record(Get get) const;

 private:
  Store& inner_;
  mutable std::mutex mutex_;
  mutable std::vector<Get> log_;
  mutable std::uint64_t bytes_ = 0;
  mutable std::uint64_t heads_ = 0;
  mutable std::uint64_t lists_ = 0;
};

}  // namespace tessera::io
