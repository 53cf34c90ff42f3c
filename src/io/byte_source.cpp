// Local-file and in-memory ByteSources.
#include "tessera/core/os_error.hpp"
#include "tessera/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {

void check_range(const ByteSource& src, std::uint64_t offset, std::uint64_t len) {
  const auto end = add_u64(offset, len);
  if (!end || *end > src.size()) {
    throw IoError("read of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) +
                      " is past the end (" + std::to_string(src.size()) + " bytes)",
                  src.name());
  }
}

namespace {

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

void pread_fully(int fd, std::uint64_t offset, std::span<std::byte> dst, const std::string& name) {
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n = ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("read failed: " + errno_text(errno), name);
    }
    if (n == 0) throw IoError("unexpected end of file (file changed while reading?)", name);
    done += static_cast<std::size_t>(n);
  }
}

// Starts reading [offset, offset + len) into the page cache without waiting for it; a hint, so
// a failure is ignored.
void advise_will_need(int fd, std::uint64_t offset, std::uint64_t len) {
  if (len > 0) (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(len), POSIX_FADV_WILLNEED);
}

class PreadSource final : public ByteSource {
 public:
  explicit PreadSource(const std::string& path) : name_(path), fd_(path), size_(file_size(fd_.get(), path)) {}
  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    pread_fully(fd_.get(), offset, dst, name_);
  }
  void will_need(std::uint64_t offset, std::uint64_t len) const override { advise_will_need(fd_.get(), offset, len); }

 private:
  std::string name_;
  FileDescriptor fd_;
  std::uint64_t size_;
};

// Maps the whole file. With `keep_descriptor` (OpenMode::MapAndRead) it keeps the file open and
// read_at copies with pread, which costs less than faulting the mapped pages in on
// machines where a fault is dear and about the same elsewhere; without it (OpenMode::Mmap, for
// the many small objects of a directory store) it holds no descriptor and copies from the map.
class MmapSource final : public ByteSource {
 public:
  MmapSource(const std::string& path, bool keep_descriptor) : name_(path) {
    auto fd = std::make_unique<FileDescriptor>(path);
    size_ = file_size(fd->get(), path);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, checked_size(size_, "file size"), PROT_READ, MAP_SHARED, fd->get(), 0);
      if (p == MAP_FAILED) throw IoError("cannot memory-map: " + errno_text(errno), path);
      base_ = static_cast<const std::byte*>(p);
    }
    if (keep_descriptor) fd_ = std::move(fd);
  }
  ~MmapSource() override {
    if (base_) ::munmap(const_cast<std::byte*>(base_), static_cast<std::size_t>(size_));
  }
  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    if (fd_) pread_fully(fd_->get(), offset, dst, name_);  // never touches the map
    else if (!dst.empty()) std::memcpy(dst.data(), base_ + offset, dst.size());
  }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override {
    check_range(*this, offset, len);
    return base_ ? base_ + offset : reinterpret_cast<const std::byte*>("");
  }
  bool reads_both_ways() const override { return fd_ != nullptr; }
  // A warm range is left alone: asking the kernel to read ahead what it holds already costs a
  // page-cache lookup per page (tens of milliseconds over a few GiB). Residency is sampled at the
  // range's first, middle and last page through the map (mincore), one system call.
  void will_need(std::uint64_t offset, std::uint64_t len) const override {
    if (!fd_ || len == 0 || offset >= size_) return;
    len = std::min(len, size_ - offset);
    if (!resident(offset) || !resident(offset + len / 2) || !resident(offset + len - 1))
      advise_will_need(fd_->get(), offset, len);
  }

 private:
  // Whether the page holding byte `at` is in the page cache.
  bool resident(std::uint64_t at) const {
    static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    unsigned char in_core = 0;
    const std::uint64_t start = at / page * page;
    return ::mincore(const_cast<std::byte*>(base_) + start, 1, &in_core) == 0 && (in_core & 1) != 0;
  }

  std::string name_;
  std::unique_ptr<FileDescriptor> fd_;
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
  if (mode == OpenMode::Mmap || mode == OpenMode::MapAndRead)
    return std::make_unique<MmapSource>(path, mode == OpenMode::MapAndRead);
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
