// Staging and swapping in new versions of directories (see staging.hpp).
#include "tessera/io/staging.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "tessera/core/error.hpp"
#include "tessera/core/os_error.hpp"

namespace fs = std::filesystem;

namespace tessera::io {
namespace {

// A DirectoryStore whose puts are plain writes (no temporary file, no fsync): the staged
// version is unreachable until it is swapped in, so a torn object can never be seen, and one
// filesystem sync before the swap replaces an fsync per object.
class UnsyncedDirectoryStore final : public Store {
 public:
  explicit UnsyncedDirectoryStore(DirectoryStore& dir) : dir_(dir) {}
  std::unique_ptr<ByteSource> open(const std::string& key) const override { return dir_.open(key); }
  bool exists(const std::string& key) const override { return dir_.exists(key); }
  std::vector<std::string> list(const std::string& prefix) const override { return dir_.list(prefix); }
  void erase(const std::string& key) override { dir_.erase(key); }
  const std::string& name() const override { return dir_.name(); }
  std::optional<std::vector<std::byte>> get(const std::string& key) const override { return dir_.get(key); }
  std::optional<RangeRead> get_range(const std::string& key, std::uint64_t offset,
                                     std::uint64_t length) const override {
    return dir_.get_range(key, offset, length);
  }
  std::optional<RangeRead> get_suffix(const std::string& key, std::uint64_t length) const override {
    return dir_.get_suffix(key, length);
  }
  std::optional<std::uint64_t> size(const std::string& key) const override { return dir_.size(key); }
  DirListing list_dir(const std::string& prefix) const override { return dir_.list_dir(prefix); }
  void erase_prefix(const std::string& prefix) override { dir_.erase_prefix(prefix); }
  void put(const std::string& key, std::span<const std::byte> bytes) override {
    const fs::path path = dir_.path_of(key);
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError("cannot create: " + errno_text(), path.string());
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string why = n < 0 ? errno_text() : "no progress";
        ::close(fd);
        throw IoError("cannot write: " + why, path.string());
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw IoError("cannot close: " + errno_text(), path.string());
  }

 private:
  DirectoryStore& dir_;
};

}  // namespace

void replace_directory(const std::string& staged, const std::string& target, const std::function<void()>& after_swap) {
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    if (::rename(staged.c_str(), target.c_str()) != 0)
      throw IoError("cannot rename the new version into place: " + errno_text(), target);
    if (after_swap) after_swap();
    return;
  }
  // Both exist: exchange them, so the path always holds a whole version; the old one ends up
  // under the staged name.
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    if (after_swap) after_swap();
    fs::remove_all(staged, ec);
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw IoError("cannot exchange the new version with the old one: " + errno_text(), target);
  // A filesystem without exchange: the old version goes aside first (recoverable there until the
  // new one is in), then the new one in.
  const std::string aside = target + ".old-" + std::to_string(::getpid());
  if (::rename(target.c_str(), aside.c_str()) != 0)
    throw IoError("cannot move the old version aside: " + errno_text(), target);
  if (::rename(staged.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    (void)::rename(aside.c_str(), target.c_str());  // put the old version back
    throw IoError("cannot move the new version into place: " + why, target);
  }
  if (after_swap) after_swap();
  fs::remove_all(aside, ec);
}

void sync_filesystem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::syncfs(fd);
  ::close(fd);
}

std::unique_ptr<Store> staging_store(Store& store) {
  if (auto* dir = dynamic_cast<DirectoryStore*>(&store)) return std::make_unique<UnsyncedDirectoryStore>(*dir);
  return nullptr;
}

void sync_staged(const Store& store, const std::string& staged) {
  if (const auto* dir = dynamic_cast<const DirectoryStore*>(&store)) sync_filesystem(dir->path_of(staged));
}

void replace_prefix(Store& store, const std::string& staged, const std::string& target) {
  if (auto* dir = dynamic_cast<DirectoryStore*>(&store)) {
    replace_directory(dir->path_of(staged), dir->path_of(target));
    return;
  }
  store.erase_prefix(target);
  const std::string below = staged + "/";
  for (const std::string& key : store.list(staged)) {
    if (key.rfind(below, 0) != 0) continue;
    if (auto bytes = store.get(key)) store.put(target + key.substr(staged.size()), *bytes);
  }
  store.erase_prefix(staged);
}

}  // namespace tessera::io
