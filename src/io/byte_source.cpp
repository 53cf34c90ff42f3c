// Local-file and in-memory ByteSources.
#include "tessera/core/os_error.hpp"
#include "tessera/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {
namespace {

void check_range(const ByteSource& src, std::uint64_t offset, std::uint64_t len) {
  const auto end = add_u64(offset, len);
  if (!end || *end > src.size()) {
    throw IoError("read of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) +
                      " is past the end (" + std::to_string(src.size()) + " bytes)",
                  src.name());
  }
}

class FileDescriptor {
 public:
  explicit FileDescriptor(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw IoError("cannot open: " + errno_text(errno), path);
  }
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

std::uint64_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError("cannot stat: " + errno_text(errno), path);
  if (!S_ISREG(st.st_mode)) throw IoError("not a regular file", path);
  return static_cast<std::uint64_t>(st.st_size);
}

class PreadSource final : public ByteSource {
 public:
  explicit PreadSource(const std::string& path) : name_(path), fd_(path), size_(file_size(fd_.get(), path)) {}
  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    std::size_t done = 0;
    while (done < dst.size()) {
      const ssize_t n = ::pread(fd_.get(), dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IoError("read failed: " + errno_text(errno), name_);
      }
      if (n == 0) throw IoError("unexpected end of file (file changed while reading?)", name_);
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  std::string name_;
  FileDescriptor fd_;
  std::uint64_t size_;
};

class MmapSource final : public ByteSource {
 public:
  explicit MmapSource(const std::string& path) : name_(path) {
    FileDescriptor fd(path);
    size_ = file_size(fd.get(), path);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, checked_size(size_, "file size"), PROT_READ, MAP_SHARED, fd.get(), 0);
      if (p == MAP_FAILED) throw IoError("cannot memory-map: " + errno_text(errno), path);
      base_ = static_cast<const std::byte*>(p);
    }
  }
  ~MmapSource() override {
    if (base_) ::munmap(const_cast<std::byte*>(base_), static_cast<std::size_t>(size_));
  }
  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    if (!dst.empty()) std::memcpy(dst.data(), base_ + offset, dst.size());
  }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override {
    check_range(*this, offset, len);
    return base_ ? base_ + offset : reinterpret_cast<const std::byte*>("");
  }

 private:
  std::string name_;
  std::uint64_t size_ = 0;
  const std::byte* base_ = nullptr;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::span<const std::byte> bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}
  MemorySource(std::vector<std::byte> owned, std::string name)
      : owned_(std::move(owned)), bytes_(owned_), name_(std::move(name)) {}
  std::uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    if (!dst.empty()) std::memcpy(dst.data(), bytes_.data() + offset, dst.size());
  }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override {
    check_range(*this, offset, len);
    return bytes_.data() + offset;
  }

 private:
  std::vector<std::byte> owned_;
  std::span<const std::byte> bytes_;
  std::string name_;
};

}  // namespace

std::vector<std::byte> ByteSource::read_vector(std::uint64_t offset, std::uint64_t len) const {
  std::vector<std::byte> out(checked_size(len, "read length"));
  read_at(offset, out);
  return out;
}

std::unique_ptr<ByteSource> open_file(const std::string& path, OpenMode mode) {
  if (mode == OpenMode::Mmap) return std::make_unique<MmapSource>(path);
  return std::make_unique<PreadSource>(path);
}

std::unique_ptr<ByteSource> memory_source(std::span<const std::byte> bytes, std::string name) {
  return std::make_unique<MemorySource>(bytes, std::move(name));
}

std::unique_ptr<ByteSource> owned_memory_source(std::vector<std::byte> bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

void CountingSource::read_at(std::uint64_t offset, std::span<std::byte> dst) const {
  reads_.fetch_add(1);
  bytes_.fetch_add(dst.size());
  inner_.read_at(offset, dst);
}

}  // namespace tessera::io
