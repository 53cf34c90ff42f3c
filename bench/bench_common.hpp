// Timing helpers and the bare file access shared by the benchmark programs.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Minor page faults of this process so far (each first touch of a mapped or fresh page).
inline long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The middle element (upper middle for an even count) of the rounds' times.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A benchmark's main(): runs `body`, and turns an exception into `NAME: message` on stderr and
// exit status 1.
template <typename Body>
int guarded_main(const char* name, Body&& body) {
  try {
    return body();
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.describe().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
  return 1;
}

// A file open read-only, as a program without tessera would open it for pread(2).
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("cannot open " + path);
  }
  ~ReadOnlyFile() { ::close(fd_); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

// A read-only mapping of a whole file, as a program without tessera would make it. A fresh one
// pays for faulting its pages into the process when they are first read (the page cache may be
// warm), as any reader that maps a file does.
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    const ReadOnlyFile file(path);
    struct stat st {};
    if (::fstat(file.fd(), &st) != 0) throw std::runtime_error("cannot stat " + path);
    size_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, file.fd(), 0);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    data_ = static_cast<const std::byte*>(p);
  }
  ~Mapping() { ::munmap(const_cast<std::byte*>(data_), size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tessera::bench
