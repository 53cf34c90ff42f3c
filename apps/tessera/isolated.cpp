// Work in a forked child (apps/tessera/isolated.hpp): the frames on the pipe, the parent's
// waits with a silence limit, and the child's errors, crashes and hangs turned into errors.
#include "isolated.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tessera::cli {
namespace {

constexpr std::size_t kFrameHeader = 1 + sizeof(std::uint64_t);

// False when the reader is gone (the child then just ends).
bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_frame_header(int fd, char kind, std::uint64_t body) {
  char header[kFrameHeader];
  header[0] = kind;
  std::memcpy(header + 1, &body, sizeof body);
  return write_all(fd, header, sizeof header);
}

// The child's last frame: 'O', or an error kind letter with message, path and structure.
std::string final_frame(const std::function<void(ChildChannel&)>& work, ChildChannel& channel) {
  const auto error = [&](char kind, const std::string& message, const std::string& path, const std::string& structure) {
    Wire e;
    e.put(message);
    e.put(path);
    e.put(structure);
    return std::string(1, kind) + e.bytes();
  };
  try {
    work(channel);
    return "O";
  } catch (const FormatError& e) {
    return error('F', e.what(), e.path(), e.structure());
  } catch (const UnsupportedError& e) {
    return error('U', e.what(), e.path(), e.structure());
  } catch (const UsageError& e) {
    return error('S', e.what(), e.path(), e.structure());
  } catch (const IoError& e) {
    return error('I', e.what(), e.path(), e.structure());
  } catch (const LimitError& e) {
    return error('L', e.what(), e.path(), e.structure());
  } catch (const Error& e) {
    return error('G', e.what(), e.path(), e.structure());
  } catch (const std::exception& e) {
    return error('G', e.what(), {}, {});
  }
}

[[noreturn]] void rethrow(char kind, std::string_view body) {
  Unwire u(body);
  const std::string message = u.str(), path = u.str(), structure = u.str();
  switch (kind) {
    case 'F': throw FormatError(message, path, structure);
    case 'U': throw UnsupportedError(message, path, structure);
    case 'S': throw UsageError(message, path, structure);
    case 'I': throw IoError(message, path, structure);
    case 'L': throw LimitError(message, path, structure);
    default: throw Error(message, path, structure);
  }
}

}  // namespace

void ChildChannel::send(std::span<const std::span<const std::byte>> parts) const {
  std::uint64_t body = 0;
  for (const auto& part : parts) body += part.size();
  bool ok = write_frame_header(fd_, 'M', body);
  for (const auto& part : parts)
    if (ok) ok = write_all(fd_, part.data(), part.size());
  if (!ok) ::_exit(0);  // the parent is gone or gave up on this child: nothing is waiting for more
}

// The parent's side of one child: its pipe, its pid, and the silence deadline.
class IsolatedRun {
 public:
  IsolatedRun(int fd, pid_t pid, const std::string& path, const IsolationLimits& limits)
      : fd_(fd), pid_(pid), path_(path), limits_(limits) {}
  IsolatedRun(const IsolatedRun&) = delete;
  IsolatedRun& operator=(const IsolatedRun&) = delete;
  ~IsolatedRun() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)reap();
    }
    ::close(fd_);
  }

  // Fills `out`; false when the pipe ends before its first byte and `at_boundary` allows that.
  bool read_exact(std::span<std::byte> out, bool at_boundary) {
    std::size_t done = 0;
    auto deadline = std::chrono::steady_clock::now() + limits_.silence;
    while (done < out.size()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ::kill(pid_, SIGKILL);
        (void)reap();
        throw FormatError(path_ + ": libhdf5 did not finish " + limits_.doing + " within " +
                              std::to_string(limits_.silence.count()) + " s; the file is probably damaged",
                          path_);
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) continue;  // the deadline check above ends the wait
      const ssize_t n = ::read(fd_, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (done == 0 && at_boundary) return false;
        ended_early();
      }
      done += static_cast<std::size_t>(n);
      deadline = std::chrono::steady_clock::now() + limits_.silence;
    }
    return true;
  }

  // The pipe ended without a last frame: a crash, or an exit without an answer.
  [[noreturn]] void ended_early() {
    const int status = reap();
    if (WIFSIGNALED(status))
      throw FormatError(path_ + ": libhdf5 crashed (" + std::string(::strsignal(WTERMSIG(status))) + ") " +
                            limits_.doing + "; the file is damaged",
                        path_);
    throw FormatError(path_ + ": the child process ended without an answer", path_);
  }

  // Waits for the child after its last frame.
  void finish() { (void)reap(); }

 private:
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

  int fd_;
  pid_t pid_;
  const std::string& path_;
  const IsolationLimits& limits_;
};

void ParentChannel::read(std::span<std::byte> out) {
  if (out.size() > left_) throw Error("child process message truncated");
  (void)run_.read_exact(out, false);
  left_ -= out.size();
}

void run_isolated_stream(const std::string& path, const std::function<void(ChildChannel&)>& work,
                         const std::function<void(ParentChannel&)>& on_message, const IsolationLimits& limits) {
  int fds[2];
  if (::pipe(fds) != 0) throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(std::string("cannot start the child process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // The child's only channel is the pipe: what a crashing libhdf5 (or a sanitizer's report of
    // it) prints must not reach the user's stderr, where the parent reports the one error line.
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
    ChildChannel channel(fds[1]);
    const std::string last = final_frame(work, channel);
    if (write_frame_header(fds[1], last[0], last.size() - 1)) write_all(fds[1], last.data() + 1, last.size() - 1);
    ::_exit(0);
  }
  ::close(fds[1]);
  IsolatedRun run(fds[0], pid, path, limits);
  for (;;) {
    std::byte header[kFrameHeader];
    if (!run.read_exact(header, true)) run.ended_early();
    const char kind = static_cast<char>(header[0]);
    std::uint64_t body = 0;
    std::memcpy(&body, header + 1, sizeof body);
    if (kind == 'M') {
      ParentChannel channel(run, body);
      on_message(channel);
      if (channel.left() != 0) throw Error("child process message not read whole");
      continue;
    }
    if (body > (std::uint64_t{1} << 30)) throw Error("child process answer malformed");
    std::string rest(static_cast<std::size_t>(body), '\0');
    (void)run.read_exact(std::as_writable_bytes(std::span(rest)), false);
    run.finish();
    if (kind == 'O') return;
    rethrow(kind, rest);
  }
}

std::string run_isolated(const std::string& path, const std::function<std::string()>& work,
                         const IsolationLimits& limits) {
  std::string reply;
  bool answered = false;
  run_isolated_stream(
      path,
      [&](ChildChannel& channel) {
        const std::string bytes = work();
        const std::span<const std::byte> part = std::as_bytes(std::span(bytes));
        channel.send(std::span(&part, 1));
      },
      [&](ParentChannel& channel) {
        reply.resize(static_cast<std::size_t>(channel.left()));
        channel.read(std::as_writable_bytes(std::span(reply)));
        answered = true;
      },
      limits);
  if (!answered) throw FormatError(path + ": the child process ended without an answer", path);
  return reply;
}

}  // namespace tessera::cli
