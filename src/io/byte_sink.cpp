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

std::string errno_text() { return std::strerror(errno); }

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

void fsync_directory_of(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // best effort: some filesystems do not allow opening directories
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

AtomicFileSink::AtomicFileSink(std::string destination) : destination_(std::move(destination)) {
  const auto dest = std::filesystem::path(destination_);
  auto dir = dest.parent_path();
  if (dir.empty()) dir = ".";
  std::string pattern = (dir / ("." + dest.filename().string() + ".tmp-XXXXXX")).string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) throw IoError("cannot create temporary file in " + dir.string() + ": " + errno_text(), destination_);
  temp_path_ = pattern;
  ::fchmod(fd_, 0644);
}

AtomicFileSink::~AtomicFileSink() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileSink::write(std::span<const std::byte> bytes) {
  if (committed_) throw UsageError("write after commit", destination_);
  write_all(fd_, bytes.data(), bytes.size(), position_, destination_);
  position_ += bytes.size();
}

void AtomicFileSink::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (committed_) throw UsageError("write after commit", destination_);
  if (checked_add(offset, bytes.size()) > position_) throw UsageError("write_at past the written end", destination_);
  write_all(fd_, bytes.data(), bytes.size(), offset, destination_);
}

void AtomicFileSink::commit() {
  if (committed_) return;
  if (::fsync(fd_) != 0) throw IoError("fsync failed: " + errno_text(), destination_);
  ::close(fd_);
  fd_ = -1;
  test_hooks::point("io.file_before_rename");
  if (::rename(temp_path_.c_str(), destination_.c_str()) != 0)
    throw IoError("cannot rename temporary file into place: " + errno_text(), destination_);
  committed_ = true;
  fsync_directory_of(destination_);
}

void MemorySink::write(std::span<const std::byte> bytes) { bytes_.insert(bytes_.end(), bytes.begin(), bytes.end()); }

void MemorySink::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (checked_add(offset, bytes.size()) > bytes_.size()) throw UsageError("write_at past the written end");
  std::memcpy(bytes_.data() + offset, bytes.data(), bytes.size());
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes) {
  AtomicFileSink sink(path);
  sink.write(bytes);
  sink.commit();
}

}  // namespace tessera::io
