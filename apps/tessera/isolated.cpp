// Work in a forked child (apps/tessera/isolated.hpp): the frames on the channel, the parent's
// waits with a silence limit, and the child's errors, crashes and hangs turned into errors.
#include "isolated.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tessera::cli {
namespace {

constexpr std::size_t kFrameHeader = 1 + sizeof(std::uint64_t);
constexpr std::uint64_t kMaxFinalFrame = std::uint64_t{1} << 30;
// The memory parent and child share for message bodies: a message that fits travels without
// socket copies (the kernel's socket buffers are small, so a 20 MB block would cross them in
// hundreds of copies and context switches). Only the pages a message touches are ever faulted in.
constexpr std::size_t kSharedBytes = std::size_t{64} << 20;
constexpr char kAck = 'A';
// What a child working ahead of the parent may hold in messages the parent has not taken yet.
constexpr std::size_t kQueueBytes = std::size_t{96} << 20;
// Frame kinds: a message on the socket, a message in the shared memory (the error kinds of a
// last frame are letters of their own: F U S I L G, and O for success).
constexpr char kMessage = 'M';
constexpr char kSharedMessage = 'H';

// False when the other end is gone. MSG_NOSIGNAL: a parent writing to a dead child gets an
// error, not SIGPIPE (the child, writing to a dead parent, just ends).
bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_frame(int fd, char kind, std::span<const std::span<const std::byte>> parts) {
  std::uint64_t body = 0;
  for (const auto& part : parts) body += part.size();
  char header[kFrameHeader];
  header[0] = kind;
  std::memcpy(header + 1, &body, sizeof body);
  bool ok = write_all(fd, header, sizeof header);
  for (const auto& part : parts)
    if (ok) ok = write_all(fd, part.data(), part.size());
  return ok;
}

// Blocking read of exactly `n` bytes in the child; false at the end of the channel.
bool read_all(int fd, void* out, std::size_t n) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// The child's last frame of a request: 'O', or an error kind letter with message, path and
// structure.
std::string final_frame(const IsolatedWorker::Serve& serve, std::string_view request, ChildChannel& channel) {
  const auto error = [&](char kind, const std::string& message, const std::string& path, const std::string& structure) {
    Wire e;
    e.put(message);
    e.put(path);
    e.put(structure);
    return std::string(1, kind) + e.bytes();
  };
  try {
    serve(request, channel);
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

// The child: serves request frames until the parent closes the channel.
[[noreturn]] void serve_requests(int fd, std::span<std::byte> shared, const IsolatedWorker::Serve& serve) {
  // The child's only channel is the socket: what a crashing libhdf5 (or a sanitizer's report of
  // it) prints must not reach the user's stderr, where the parent reports the one error line.
  if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
  // The child allocates the same large buffers for every request (a granule's blocks, chunk
  // buffers). By default glibc maps each one afresh and unmaps it when freed, so every request
  // faults its buffers in again (three times the page faults of the same reads in the parent's
  // threads); kept in the heap, they are reused. The child's memory stays its largest request's.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ChildChannel channel(fd, shared, kQueueBytes);
  for (;;) {
    channel.settle();
    char header[kFrameHeader];
    if (!read_all(fd, header, sizeof header)) ::_exit(0);
    std::uint64_t size = 0;
    std::memcpy(&size, header + 1, sizeof size);
    std::string request(static_cast<std::size_t>(size), '\0');
    if (!read_all(fd, request.data(), request.size())) ::_exit(0);
    std::string last = final_frame(serve, request, channel);
    channel.flush();  // every message before the last frame
    const std::span<const std::byte> body = std::as_bytes(std::span(last)).subspan(1);
    if (!write_frame(fd, last[0], std::span(&body, 1))) ::_exit(0);
  }
}

}  // namespace

bool ChildChannel::take_acknowledgement(bool wait) {
  if (!unacknowledged_) return true;
  if (!wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
  }
  char ack = 0;
  // The parent is gone or gave up on this child: nothing is waiting for more.
  if (!read_all(fd_, &ack, 1) || ack != kAck) ::_exit(0);
  unacknowledged_ = false;
  return true;
}

void ChildChannel::post(std::span<const std::span<const std::byte>> parts) {
  std::uint64_t body = 0;
  std::byte* at = shared_.data();
  for (const auto& part : parts) {
    if (!part.empty()) std::memcpy(at, part.data(), part.size());
    at += part.size();
    body += part.size();
  }
  char header[kFrameHeader];
  header[0] = kSharedMessage;
  std::memcpy(header + 1, &body, sizeof body);
  if (!write_all(fd_, header, sizeof header)) ::_exit(0);
  unacknowledged_ = true;
}

void ChildChannel::post_head() {
  const std::span<const std::byte> head = queue_.front();
  post(std::span(&head, 1));
  queued_ -= queue_.front().size();
  queue_.pop_front();
}

void ChildChannel::flush() {
  while (!queue_.empty()) {
    (void)take_acknowledgement(true);
    post_head();
  }
}

void ChildChannel::settle() {
  flush();
  (void)take_acknowledgement(true);
}

void ChildChannel::send(std::span<const std::span<const std::byte>> parts) {
  std::uint64_t body = 0;
  for (const auto& part : parts) body += part.size();
  if (body > shared_.size()) {
    flush();
    if (!write_frame(fd_, kMessage, parts)) ::_exit(0);
    return;
  }
  // The queue first, as far as the parent has taken the messages before it.
  while (!queue_.empty() && take_acknowledgement(false)) post_head();
  if (queue_.empty() && take_acknowledgement(false)) return post(parts);
  std::vector<std::byte>& copy = queue_.emplace_back();
  copy.reserve(static_cast<std::size_t>(body));
  for (const auto& part : parts) copy.insert(copy.end(), part.begin(), part.end());
  queued_ += copy.size();
  while (queued_ > queue_bytes_) {  // full: wait for the parent
    (void)take_acknowledgement(true);
    post_head();
  }
}

// The parent's side of one child: its socket, its pid, and the silence deadline.
class WorkerLink {
 public:
  WorkerLink(const IsolatedWorker::Serve& serve, const IsolationLimits& limits) : limits_(limits) {
    void* shared = ::mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) throw IoError(std::string("cannot map shared memory: ") + std::strerror(errno));
    shared_ = {static_cast<std::byte*>(shared), kSharedBytes};
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      ::munmap(shared, kSharedBytes);
      throw IoError(std::string("cannot create a socket pair: ") + std::strerror(errno));
    }
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      ::munmap(shared, kSharedBytes);
      throw IoError(std::string("cannot start the child process: ") + std::strerror(errno));
    }
    if (pid_ == 0) {
      ::close(fds[0]);
      // A child looping inside libhdf5 never looks at the channel again: it dies with the parent
      // (with the thread that forked it, which outlives every request it serves).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);  // the parent was already gone
      serve_requests(fds[1], shared_, serve);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;
  ~WorkerLink() {
    ::close(fd_);
    // The child waits for a request (or is being given up on): nothing of it is needed. It is
    // killed rather than left to see the channel end, which it would not while another child
    // forked meanwhile still holds a copy of this end.
    kill();
    ::munmap(shared_.data(), shared_.size());
  }

  std::span<const std::byte> shared() const noexcept { return shared_; }

  // Tells the child the shared memory is free again.
  void acknowledge(const std::string& path) {
    if (!write_all(fd_, &kAck, 1)) ended_early(path);
  }

  // Whether the child is still there to serve a request (one that died while idle, killed from
  // outside, is reaped here, so the next request gets a new child rather than its death).
  bool alive() noexcept {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }

  void send_request(const std::string& path, std::string_view request) {
    const std::span<const std::byte> body = std::as_bytes(std::span(request));
    if (!write_frame(fd_, 'R', std::span(&body, 1))) ended_early(path);
  }

  // Fills `out`; false when the channel ends before its first byte and `at_boundary` allows it.
  bool read_exact(const std::string& path, std::span<std::byte> out, bool at_boundary) {
    std::size_t done = 0;
    auto deadline = std::chrono::steady_clock::now() + limits_.silence;
    while (done < out.size()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        kill();
        throw FormatError(path + ": libhdf5 did not finish " + limits_.doing + " within " +
                              std::to_string(limits_.silence.count()) + " s; the file is probably damaged",
                          path);
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) continue;  // the deadline check above ends the wait
      const ssize_t n = ::read(fd_, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (done == 0 && at_boundary) return false;
        ended_early(path);
      }
      done += static_cast<std::size_t>(n);
      deadline = std::chrono::steady_clock::now() + limits_.silence;
    }
    return true;
  }

  // The channel ended in the middle of a request: a crash, or an exit without an answer.
  [[noreturn]] void ended_early(const std::string& path) {
    const int status = reap();
    if (WIFSIGNALED(status))
      throw FormatError(path + ": libhdf5 crashed (" + std::string(::strsignal(WTERMSIG(status))) + ") " +
                            limits_.doing + "; the file is damaged",
                        path);
    throw FormatError(path + ": the child process ended without an answer", path);
  }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)reap();
  }

 private:
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

  int fd_ = -1;
  pid_t pid_ = -1;
  IsolationLimits limits_;
  std::span<std::byte> shared_;
};

void ParentChannel::read(std::span<std::byte> out) {
  if (out.size() > left_) throw Error("child process message truncated");
  if (shared_.empty()) {
    (void)link_.read_exact(path_, out, false);
  } else {
    if (!out.empty()) std::memcpy(out.data(), shared_.data(), out.size());
    shared_ = shared_.subspan(out.size());
  }
  left_ -= out.size();
  // The whole body copied out: the child may write its next message while this one is used.
  if (left_ == 0 && shared_.data() != nullptr) {
    link_.acknowledge(path_);
    shared_ = {};
  }
}

IsolatedWorker::IsolatedWorker(Serve serve, IsolationLimits limits)
    : serve_(std::move(serve)), limits_(std::move(limits)) {}

IsolatedWorker::~IsolatedWorker() = default;

void IsolatedWorker::start() {
  if (!link_ || !link_->alive()) link_ = std::make_unique<WorkerLink>(serve_, limits_);
}

void IsolatedWorker::call(const std::string& path, std::string_view request,
                          const std::function<void(ParentChannel&)>& on_message) {
  begin(path, request);
  finish(path, on_message);
}

void IsolatedWorker::begin(const std::string& path, std::string_view request) {
  start();
  link_->send_request(path, request);
}

void IsolatedWorker::finish(const std::string& path, const std::function<void(ParentChannel&)>& on_message) {
  if (!link_) throw Error("IsolatedWorker::finish without a request begun");
  WorkerLink& link = *link_;
  // Whatever ends this call early (an error of `on_message`, a crash) leaves no child behind
  // mid-request: it could not serve another one.
  struct EndOnError {
    WorkerLink& link;
    int pending = std::uncaught_exceptions();
    ~EndOnError() {
      if (std::uncaught_exceptions() > pending) link.kill();
    }
  } guard{link};
  for (;;) {
    std::byte header[kFrameHeader];
    if (!link.read_exact(path, header, true)) link.ended_early(path);
    const char kind = static_cast<char>(header[0]);
    std::uint64_t body = 0;
    std::memcpy(&body, header + 1, sizeof body);
    if (kind == kMessage || kind == kSharedMessage) {
      const bool shared = kind == kSharedMessage;
      if (shared && body > link.shared().size()) throw Error("child process message malformed");
      if (shared && body == 0) link.acknowledge(path);  // nothing to copy out
      ParentChannel channel(link, path, body,
                            shared && body > 0 ? link.shared().first(body) : std::span<const std::byte>());
      on_message(channel);
      if (channel.left() != 0) throw Error("child process message not read whole");
      continue;
    }
    if (body > kMaxFinalFrame) throw Error("child process answer malformed");
    std::string rest(static_cast<std::size_t>(body), '\0');
    (void)link.read_exact(path, std::as_writable_bytes(std::span(rest)), false);
    if (kind == 'O') return;
    rethrow(kind, rest);
  }
}

std::string run_isolated(const std::string& path, const std::function<std::string()>& work,
                         const IsolationLimits& limits) {
  IsolatedWorker worker(
      [&](std::string_view, ChildChannel& channel) {
        const std::string bytes = work();
        const std::span<const std::byte> part = std::as_bytes(std::span(bytes));
        channel.send(std::span(&part, 1));
      },
      limits);
  std::string reply;
  bool answered = false;
  worker.call(path, {}, [&](ParentChannel& channel) {
    reply.resize(static_cast<std::size_t>(channel.left()));
    channel.read(std::as_writable_bytes(std::span(reply)));
    answered = true;
  });
  if (!answered) throw FormatError(path + ": the child process ended without an answer", path);
  return reply;
}

}  // namespace tessera::cli
