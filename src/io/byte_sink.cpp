#include "tessera/core/os_error.hpp"
#include "tessera/io/byte_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/test_hooks.hpp"

namespace tessera::io {
namespace {

void write_all(int fd, const std::byte* data, std::size_t len, std::uint64_t offset, const std::string& name) {
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pwrite(fd, data + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("write failed: " + errno_text(), name);
    }
    done += static_cast<std::size_t>(n);
  }
}

// Sequential writes for outputs that cannot seek (pipes, terminals).
void stream_all(int fd, const std::byte* data, std::size_t len, const std::string& name) {
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = ::write(fd, data + done, len - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("write failed: " + errno_text(), name);
    }
    done += static_cast<std::size_t>(n);
  }
}

void fsync_directory_of(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // best effort: some filesystems do not allow opening directories
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

// The name a dangling symbolic link (chain) would create: each link's text read relative to the
// link's directory, at most 40 hops as the kernel allows.
std::filesystem::path dangling_link_target(const std::string& path) {
  std::filesystem::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(p, ec);
    if (ec) throw IoError("cannot read symbolic link " + p.string() + ": " + ec.message(), path);
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  throw IoError("too many levels of symbolic links", path);
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

AtomicFileSink::AtomicFileSink(std::string destination, StaleTemporaries stale) : destination_(std::move(destination)) {
  // Where the bytes go depends on what the name is now (docs/reliability.md, output files).
  std::string target = destination_;
  struct stat st;
  if (::stat(destination_.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      // A terminal, /dev/null, a pipe: nothing to replace, so the bytes are streamed to it.
      fd_ = ::open(destination_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
      if (fd_ < 0) throw IoError("cannot open for writing: " + errno_text(), destination_);
      streaming_ = true;
      return;
    }
    if (!S_ISREG(st.st_mode))
      throw UsageError(destination_ + ": output is " + file_kind(st.st_mode) +
                           "; tessera writes only to regular files, new names, devices and FIFOs",
                       destination_);
    // A regular file, perhaps behind symbolic links: the file is replaced, the links stay.
    struct stat lst;
    if (::lstat(destination_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      std::error_code ec;
      target = std::filesystem::canonical(destination_, ec).string();
      if (ec) throw IoError("cannot resolve symbolic link: " + ec.message(), destination_);
    }
  } else if (errno == ENOENT) {
    target = dangling_link_target(destination_).string();  // a new name, or where a dangling link points
  }
  target_ = target;
  const auto dest = std::filesystem::path(target_);
  auto dir = dest.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = "." + dest.filename().string() + ".tmp-";
  if (stale == StaleTemporaries::Remove) remove_stale_temporaries(dir, prefix);
  std::string pattern = (dir / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) throw IoError("cannot create temporary file in " + dir.string() + ": " + errno_text(), destination_);
  temp_path_ = pattern;
  registration_.assign(temp_path_);
  ::fchmod(fd_, 0644);
}

AtomicFileSink::~AtomicFileSink() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileSink::write(std::span<const std::byte> bytes) {
  if (committed_) throw UsageError("write after commit", destination_);
  if (streaming_) stream_all(fd_, bytes.data(), bytes.size(), destination_);
  else write_all(fd_, bytes.data(), bytes.size(), position_, destination_);
  position_ += bytes.size();
}

void AtomicFileSink::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (committed_) throw UsageError("write after commit", destination_);
  if (checked_add(offset, bytes.size()) > position_) throw UsageError("write_at past the written end", destination_);
  if (streaming_)
    throw UnsupportedError(
        destination_ + ": this output is written in place and cannot be streamed to a device or FIFO", destination_);
  write_all(fd_, bytes.data(), bytes.size(), offset, destination_);
}

void AtomicFileSink::commit() {
  if (committed_) return;
  if (streaming_) {
    const int rc = ::close(fd_);
    fd_ = -1;
    committed_ = true;
    if (rc != 0 && errno != EINTR) throw IoError("close failed: " + errno_text(), destination_);
    return;
  }
  if (::fsync(fd_) != 0) throw IoError("fsync failed: " + errno_text(), destination_);
  ::close(fd_);
  fd_ = -1;
  test_hooks::point("io.file_before_rename");
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0)
    throw IoError("cannot rename temporary file into place: " + errno_text(), destination_);
  committed_ = true;
  registration_.release();
  fsync_directory_of(target_);
}

void MemorySink::write(std::span<const std::byte> bytes) { bytes_.insert(bytes_.end(), bytes.begin(), bytes.end()); }

void MemorySink::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (checked_add(offset, bytes.size()) > bytes_.size()) throw UsageError("write_at past the written end");
  std::memcpy(bytes_.data() + offset, bytes.data(), bytes.size());
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, StaleTemporaries stale) {
  AtomicFileSink sink(path, stale);
  sink.write(bytes);
  sink.commit();
}

}  // namespace tessera::io
