#include "tessera/io/store.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"

namespace fs = std::filesystem;

namespace tessera::io {

DirectoryStore::DirectoryStore(std::string root, OpenMode mode) : root_(std::move(root)), mode_(mode) {}

std::string DirectoryStore::path_of(const std::string& key) const {
  const fs::path rel(key);
  if (rel.is_absolute()) throw UsageError("store key must be relative: " + key, root_);
  for (const auto& part : rel)
    if (part == "..") throw UsageError("store key must not contain '..': " + key, root_);
  return (fs::path(root_) / rel).string();
}

std::unique_ptr<ByteSource> DirectoryStore::open(const std::string& key) const {
  const auto path = path_of(key);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  return open_file(path, mode_);
}

bool DirectoryStore::exists(const std::string& key) const {
  std::error_code ec;
  return fs::is_regular_file(path_of(key), ec);
}

std::vector<std::string> DirectoryStore::list(const std::string& prefix) const {
  std::vector<std::string> keys;
  const fs::path base = prefix.empty() ? fs::path(root_) : fs::path(path_of(prefix));
  std::error_code ec;
  if (!fs::exists(base, ec)) return keys;
  if (fs::is_regular_file(base, ec)) return {prefix};
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file()) keys.push_back(fs::relative(it->path(), root_).generic_string());
  }
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

}  // namespace tessera::io
