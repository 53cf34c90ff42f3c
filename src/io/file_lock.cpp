#include "tessera/io/file_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "tessera/core/error.hpp"
#include "tessera/core/test_hooks.hpp"

namespace tessera::io {
namespace {

// The pid a holder wrote into the lock file, as text ("another process" when there is none).
// A holder writes its pid just after it takes the lock, so a process refused in between finds the
// file empty: it looks again for a few milliseconds before it names no one.
std::string holder_of(int fd) {
  constexpr int kLooks = 25;
  std::string pid;
  for (int look = 0; look < kLooks && pid.empty(); ++look) {
    if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::array<char, 24> buf{};
    const ssize_t n = ::pread(fd, buf.data(), buf.size() - 1, 0);
    for (ssize_t i = 0; i < n && buf[static_cast<std::size_t>(i)] >= '0' && buf[static_cast<std::size_t>(i)] <= '9';
         ++i)
      pid += buf[static_cast<std::size_t>(i)];
  }
  return pid.empty() ? "another process" : "pid " + pid;
}

}  // namespace

FileLock::FileLock(const std::string& path, const std::string& what, Wait wait, std::string_view busy_point,
                   Mode mode) {
  const int kind = mode == Mode::Shared ? LOCK_SH : LOCK_EX;
  // Appending keeps a lock file shared with other programs (the obs cache's) byte-for-byte theirs;
  // a lock that records its holder rewrites the file instead.
  const int flags = wait == Wait::Block ? O_WRONLY | O_APPEND : O_RDWR;
  fd_ = ::open(path.c_str(), flags | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw IoError("cannot open the " + what + " " + path + ": " + std::strerror(errno), path);
  // Always try without waiting first: only then is it known whether someone else holds it.
  int operation = kind | LOCK_NB;
  while (::flock(fd_, operation) != 0) {
    if (errno == EWOULDBLOCK && wait == Wait::Block) {
      if (!busy_point.empty()) test_hooks::point(busy_point);
      operation = kind;
      continue;
    }
    if (errno == EINTR) continue;
    const int e = errno;
    const std::string holder = e == EWOULDBLOCK ? holder_of(fd_) : std::string();
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK) throw IoError(path + ": in use by " + holder + " (" + what + ")", path);
    throw IoError("cannot lock the " + what + " " + path + ": " + std::strerror(e), path);
  }
  if (wait == Wait::FailIfHeld) {
    const std::string pid = mode == Mode::Shared ? std::string() : std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      // The lock is held all the same; only the holder's name for a refused process is missing.
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

bool writer_is_gone(long pid) noexcept { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace tessera::io
