// Store implementations: the shared ranged-read defaults, the local directory, memory, and the
// counting wrapper.
#include "tessera/io/store.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"

namespace fs = std::filesystem;

namespace tessera::io {
namespace {

// [offset, offset + length) clipped to the source, read with one read_at.
RangeRead read_clipped(const ByteSource& src, std::uint64_t offset, std::uint64_t length) {
  RangeRead out;
  out.object_size = src.size();
  const std::uint64_t begin = std::min(offset, out.object_size);
  const std::uint64_t end = std::min(add_u64(offset, length).value_or(UINT64_MAX), out.object_size);
  out.bytes = src.read_vector(begin, end - begin);
  return out;
}

RangeRead read_suffix(const ByteSource& src, std::uint64_t length) {
  const std::uint64_t size = src.size();
  const std::uint64_t n = std::min(length, size);
  return read_clipped(src, size - n, n);
}

// Immediate children of `prefix` derived from a recursive listing (the generic fallback).
DirListing children_from_keys(const std::vector<std::string>& keys, const std::string& prefix) {
  DirListing out;
  const std::string base = prefix.empty() ? std::string() : prefix + "/";
  for (const std::string& key : keys) {
    if (key.size() <= base.size() || key.compare(0, base.size(), base) != 0) continue;
    const std::string rest = key.substr(base.size());
    const auto slash = rest.find('/');
    const std::string child = rest.substr(0, slash);
    if (child.empty() || child[0] == '.') continue;
    auto& names = slash == std::string::npos ? out.objects : out.prefixes;
    if (names.empty() || names.back() != child) names.push_back(child);
  }
  for (auto* names : {&out.objects, &out.prefixes}) {
    std::sort(names->begin(), names->end());
    names->erase(std::unique(names->begin(), names->end()), names->end());
  }
  return out;
}

bool has_hidden_component(const fs::path& rel) {
  for (const auto& part : rel) {
    const std::string s = part.string();
    if (!s.empty() && s[0] == '.') return true;
  }
  return false;
}

}  // namespace

bool is_valid_key(std::string_view key) noexcept {
  if (key.empty()) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = key.find('/', start);
    const std::string_view part =
        key.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (const char c : part)
      if (c == '\\' || c == '\0') return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

std::string join_key(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  std::string out(prefix);
  out += '/';
  out += name;
  return out;
}

// ---- Store defaults -----------------------------------------------------------------------

std::optional<std::vector<std::byte>> Store::get(const std::string& key) const {
  const auto src = open(key);
  if (!src) return std::nullopt;
  return src->read_vector(0, src->size());
}

std::unique_ptr<ByteSource> Store::open_whole(const std::string& key) const { return open(key); }

std::optional<RangeRead> Store::get_range(const std::string& key, std::uint64_t offset, std::uint64_t length) const {
  const auto src = open(key);
  if (!src) return std::nullopt;
  return read_clipped(*src, offset, length);
}

std::optional<RangeRead> Store::get_suffix(const std::string& key, std::uint64_t length) const {
  const auto src = open(key);
  if (!src) return std::nullopt;
  return read_suffix(*src, length);
}

std::optional<std::uint64_t> Store::size(const std::string& key) const {
  const auto src = open(key);
  if (!src) return std::nullopt;
  return src->size();
}

DirListing Store::list_dir(const std::string& prefix) const { return children_from_keys(list(prefix), prefix); }

void Store::erase_prefix(const std::string& prefix) {
  for (const std::string& key : list(prefix)) erase(key);
}

// ---- DirectoryStore -----------------------------------------------------------------------

namespace {

std::optional<std::pair<std::uint64_t, std::uint64_t>> directory_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return std::pair<std::uint64_t, std::uint64_t>{st.st_dev, st.st_ino};
}

}  // namespace

DirectoryStore::DirectoryStore(std::string root, OpenMode mode)
    : root_(std::move(root)), mode_(mode), root_identity_(directory_identity(root_)) {}

void DirectoryStore::check_not_replaced() const {
  if (root_identity_ && directory_identity(root_) != root_identity_)
    throw IoError(root_ + ": replaced while it was being read (open it again to read the new version)", root_);
}

std::string DirectoryStore::path_of(const std::string& key) const {
  const fs::path rel(key);
  if (rel.is_absolute()) throw UsageError("store key must be relative: " + key, root_);
  for (const auto& part : rel)
    if (part == "..") throw UsageError("store key must not contain '..': " + key, root_);
  return (fs::path(root_) / rel).string();
}

std::unique_ptr<ByteSource> DirectoryStore::open(const std::string& key) const { return open_as(key, mode_); }

std::unique_ptr<ByteSource> DirectoryStore::open_as(const std::string& key, OpenMode mode) const {
  const auto path = path_of(key);
  std::error_code ec;
  std::unique_ptr<ByteSource> source = fs::is_regular_file(path, ec) ? open_file(path, mode) : nullptr;
  check_not_replaced();  // after the open: the object came from the pinned directory, or this throws
  return source;
}

std::unique_ptr<ByteSource> DirectoryStore::open_pread(const std::string& key) const {
  return open_as(key, OpenMode::Pread);
}

std::unique_ptr<ByteSource> DirectoryStore::open_whole(const std::string& key) const {
  return open_as(key, mode_ == OpenMode::Mmap ? OpenMode::MapAndRead : mode_);
}

bool DirectoryStore::exists(const std::string& key) const {
  std::error_code ec;
  const bool found = fs::is_regular_file(path_of(key), ec);
  check_not_replaced();
  return found;
}

std::vector<std::string> DirectoryStore::list(const std::string& prefix) const {
  std::vector<std::string> keys;
  const fs::path base = prefix.empty() ? fs::path(root_) : fs::path(path_of(prefix));
  std::error_code ec;
  const bool present = fs::exists(base, ec);
  if (!present || fs::is_regular_file(base, ec)) {  // nothing below, or the prefix is one object
    check_not_replaced();
    return present ? std::vector<std::string>{prefix} : keys;
  }
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    // Lexical: every entry's path begins with the root's text (it was built from it), and
    // resolving it through the file system would cost a readlink per component per entry.
    const fs::path rel = it->path().lexically_relative(root_);
    if (has_hidden_component(rel)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) keys.push_back(rel.generic_string());
  }
  // A listing cut short because the directory was exchanged under it is that replacement,
  // reported as such; only an error in a directory that is still ours is a listing failure.
  check_not_replaced();
  if (ec) throw IoError("cannot list directory: " + ec.message(), base.string());
  std::sort(keys.begin(), keys.end());
  return keys;
}

void DirectoryStore::put(const std::string& key, std::span<const std::byte> bytes) {
  const fs::path path = path_of(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw IoError("cannot create directory: " + ec.message(), path.parent_path().string());
  write_file_atomic(path.string(), bytes);
}

void DirectoryStore::erase(const std::string& key) {
  std::error_code ec;
  fs::remove(path_of(key), ec);
  if (ec) throw IoError("cannot remove: " + ec.message(), path_of(key));
}

std::optional<std::vector<std::byte>> DirectoryStore::get(const std::string& key) const {
  const auto src = open_pread(key);
  if (!src) return std::nullopt;
  return src->read_vector(0, src->size());
}

std::optional<RangeRead> DirectoryStore::get_range(const std::string& key, std::uint64_t offset,
                                                   std::uint64_t length) const {
  const auto src = open_pread(key);
  if (!src) return std::nullopt;
  return read_clipped(*src, offset, length);
}

std::optional<RangeRead> DirectoryStore::get_suffix(const std::string& key, std::uint64_t length) const {
  const auto src = open_pread(key);
  if (!src) return std::nullopt;
  return read_suffix(*src, length);
}

std::optional<std::uint64_t> DirectoryStore::size(const std::string& key) const {
  std::error_code ec;
  const fs::path path = path_of(key);
  if (!fs::is_regular_file(path, ec)) {
    check_not_replaced();
    return std::nullopt;
  }
  const auto n = fs::file_size(path, ec);
  if (ec) throw IoError("cannot stat: " + ec.message(), path.string());
  check_not_replaced();
  return n;
}

DirListing DirectoryStore::list_dir(const std::string& prefix) const {
  DirListing out;
  const fs::path base = prefix.empty() ? fs::path(root_) : fs::path(path_of(prefix));
  std::error_code ec;
  if (!fs::is_directory(base, ec)) {
    check_not_replaced();
    return out;
  }
  for (auto it = fs::directory_iterator(base, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string child = it->path().filename().string();
    if (child.empty() || child[0] == '.') continue;
    if (it->is_directory(ec)) out.prefixes.push_back(child);
    else if (it->is_regular_file(ec)) out.objects.push_back(child);
  }
  if (ec) throw IoError("cannot list directory: " + ec.message(), base.string());
  check_not_replaced();
  std::sort(out.objects.begin(), out.objects.end());
  std::sort(out.prefixes.begin(), out.prefixes.end());
  return out;
}

void DirectoryStore::erase_prefix(const std::string& prefix) {
  const fs::path base = prefix.empty() ? fs::path(root_) : fs::path(path_of(prefix));
  std::error_code ec;
  if (prefix.empty()) {
    // Never remove the root itself: only what it holds.
    for (auto it = fs::directory_iterator(base, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      fs::remove_all(it->path(), ec);
  } else {
    fs::remove_all(base, ec);
  }
  if (ec) throw IoError("cannot remove: " + ec.message(), base.string());
}

// ---- MemoryStore --------------------------------------------------------------------------

namespace {

// A source sharing ownership of one immutable object.
class SharedBytesSource final : public ByteSource {
 public:
  SharedBytesSource(std::shared_ptr<const std::vector<std::byte>> bytes, std::string name)
      : bytes_(std::move(bytes)), inner_(memory_source(*bytes_, std::move(name))) {}
  std::uint64_t size() const override { return inner_->size(); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override { inner_->read_at(offset, dst); }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override { return inner_->view(offset, len); }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::shared_ptr<const std::vector<std::byte>> bytes_;
  std::unique_ptr<ByteSource> inner_;
};

void require_valid_key(const std::string& key, const std::string& store) {
  if (!is_valid_key(key)) throw UsageError("invalid store key '" + key + "'", store);
}

}  // namespace

std::unique_ptr<ByteSource> MemoryStore::open(const std::string& key) const {
  require_valid_key(key, name_);
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  return std::make_unique<SharedBytesSource>(it->second, join_key(name_, key));
}

bool MemoryStore::exists(const std::string& key) const {
  require_valid_key(key, name_);
  std::lock_guard lock(mutex_);
  return objects_.count(key) != 0;
}

std::vector<std::string> MemoryStore::list(const std::string& prefix) const {
  if (!prefix.empty()) require_valid_key(prefix, name_);
  std::lock_guard lock(mutex_);
  std::vector<std::string> keys;
  for (const auto& [key, _] : objects_) {
    const bool below =
        prefix.empty() || key == prefix ||
        (key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 && key[prefix.size()] == '/');
    if (below) keys.push_back(key);
  }
  return keys;  // std::map iterates in sorted order
}

void MemoryStore::put(const std::string& key, std::span<const std::byte> bytes) {
  require_valid_key(key, name_);
  auto object = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
  std::lock_guard lock(mutex_);
  objects_[key] = std::move(object);
}

void MemoryStore::erase(const std::string& key) {
  require_valid_key(key, name_);
  std::lock_guard lock(mutex_);
  objects_.erase(key);
}

// ---- CountingStore ------------------------------------------------------------------------

namespace {

// Owns the inner store's source and reports each read to the counting store.
class CountedSource final : public ByteSource {
 public:
  CountedSource(std::unique_ptr<ByteSource> inner, const CountingStore& store, std::string key)
      : inner_(std::move(inner)), store_(store), key_(std::move(key)) {}
  std::uint64_t size() const override { return inner_->size(); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    store_.record({CountingStore::GetKind::SourceRead, key_, offset, dst.size(), true});
    inner_->read_at(offset, dst);
  }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  const CountingStore& store_;
  std::string key_;
};

}  // namespace

void CountingStore::record(Get get) const {
  std::lock_guard lock(mutex_);
  bytes_ += get.length;
  log_.push_back(std::move(get));
}

std::unique_ptr<ByteSource> CountingStore::open(const std::string& key) const {
  auto inner = inner_.open(key);
  {
    std::lock_guard lock(mutex_);
    ++heads_;
  }
  if (!inner) return nullptr;
  return std::make_unique<CountedSource>(std::move(inner), *this, key);
}

bool CountingStore::exists(const std::string& key) const {
  {
    std::lock_guard lock(mutex_);
    ++heads_;
  }
  return inner_.exists(key);
}

std::optional<std::uint64_t> CountingStore::size(const std::string& key) const {
  {
    std::lock_guard lock(mutex_);
    ++heads_;
  }
  return inner_.size(key);
}

std::vector<std::string> CountingStore::list(const std::string& prefix) const {
  {
    std::lock_guard lock(mutex_);
    ++lists_;
  }
  return inner_.list(prefix);
}

DirListing CountingStore::list_dir(const std::string& prefix) const {
  {
    std::lock_guard lock(mutex_);
    ++lists_;
  }
  return inner_.list_dir(prefix);
}

std::optional<std::vector<std::byte>> CountingStore::get(const std::string& key) const {
  auto out = inner_.get(key);
  record({GetKind::Whole, key, 0, out ? out->size() : 0, out.has_value()});
  return out;
}

std::unique_ptr<ByteSource> CountingStore::open_whole(const std::string& key) const {
  auto bytes = get(key);
  if (!bytes) return nullptr;
  return owned_memory_source(std::move(*bytes), join_key(inner_.name(), key));
}

std::optional<RangeRead> CountingStore::get_range(const std::string& key, std::uint64_t offset,
                                                  std::uint64_t length) const {
  auto out = inner_.get_range(key, offset, length);
  record({GetKind::Range, key, offset, out ? out->bytes.size() : 0, out.has_value()});
  return out;
}

std::optional<RangeRead> CountingStore::get_suffix(const std::string& key, std::uint64_t length) const {
  auto out = inner_.get_suffix(key, length);
  record({GetKind::Suffix, key, 0, out ? out->bytes.size() : 0, out.has_value()});
  return out;
}

std::uint64_t CountingStore::gets() const {
  std::lock_guard lock(mutex_);
  return log_.size();
}

std::uint64_t CountingStore::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::uint64_t CountingStore::heads() const {
  std::lock_guard lock(mutex_);
  return heads_;
}

std::uint64_t CountingStore::lists() const {
  std::lock_guard lock(mutex_);
  return lists_;
}

std::vector<CountingStore::Get> CountingStore::log() const {
  std::lock_guard lock(mutex_);
  return log_;
}

std::uint64_t CountingStore::gets_of(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return static_cast<std::uint64_t>(
      std::count_if(log_.begin(), log_.end(), [&](const Get& g) { return g.key == key; }));
}

void CountingStore::reset() {
  std::lock_guard lock(mutex_);
  log_.clear();
  bytes_ = heads_ = lists_ = 0;
}

}  // namespace tessera::io
