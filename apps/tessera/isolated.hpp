// Work that may crash or hang inside libhdf5, run in a forked child process. libhdf5 1.10 trusts
// what a file says (a damaged global heap or string descriptor makes it read out of bounds or
// loop forever; docs/compat.md D16), so the commands that read HDF5 (`cells convert`'s scans,
// `ragged build`'s granules) read in a child that sends its results back through a pipe. A child
// killed by a signal, or silent for longer than the allowed time, becomes a FormatError naming
// the file instead of a crash or a hang; an error the work raises travels back with its type, so
// messages and exit codes are unchanged.
//
// The channel (a socket pair) carries frames: one kind byte, a u64 body length, the body. The
// parent sends a request frame; the child's work answers with message frames ('M') and a last
// frame that says it finished ('O') or carries its error.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cli {

// Length-prefixed fields (u64 counts, byte strings, raw vectors) of a message body.
class Wire {
 public:
  void put(std::uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    bytes_ += s;
  }
  void put(const std::vector<std::string>& list) {
    put(static_cast<std::uint64_t>(list.size()));
    for (const auto& s : list) put(s);
  }
  template <typename T>
  void put_raw(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size() * sizeof(T)));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// Reads what Wire wrote; a body shorter than its fields say is an Error ("result truncated").
class Unwire {
 public:
  explicit Unwire(std::string_view bytes) : rest_(bytes) {}
  std::uint64_t u64() {
    std::uint64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > rest_.size()) throw Error("child process result truncated");
    std::string s(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return s;
  }
  std::vector<std::string> strings() {
    const std::uint64_t n = u64();
    if (n > rest_.size()) throw Error("child process result truncated");
    std::vector<std::string> out;
    out.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(str());
    return out;
  }
  template <typename T>
  std::vector<T> raw() {
    const std::uint64_t n = u64();
    if (n > rest_.size() || n % sizeof(T) != 0) throw Error("child process result truncated");
    std::vector<T> out(n / sizeof(T));
    take(out.data(), n);
    return out;
  }

 private:
  void take(void* out, std::size_t n) {
    if (n > rest_.size()) throw Error("child process result truncated");
    if (n > 0) std::memcpy(out, rest_.data(), n);
    rest_.remove_prefix(n);
  }
  std::string_view rest_;
};

class WorkerLink;  // the parent's side of one child (isolated.cpp)

// The child's end of the channel.
class ChildChannel {
 public:
  ChildChannel(int fd, std::span<std::byte> shared, std::size_t queue_bytes)
      : fd_(fd), shared_(shared), queue_bytes_(queue_bytes) {}
  // One message whose body is `parts`. A body that fits the memory shared with the parent is
  // copied there and announced by a short frame; the parent copies it out and acknowledges it
  // before the next one is written there. While it has not, messages wait in a queue of at most
  // `queue_bytes` in the child, so a child working ahead of the parent keeps reading. A larger
  // body is written to the socket from `parts`.
  void send(std::span<const std::span<const std::byte>> parts);
  // Hands every queued message over (waiting for the parent's acknowledgements).
  void flush();
  // flush, then waits for the acknowledgement of the last shared message (before the child
  // reads its next request from the socket the acknowledgements share).
  void settle();

 private:
  bool take_acknowledgement(bool wait);
  void post(std::span<const std::span<const std::byte>> parts);
  void post_head();  // the oldest queued message (its acknowledgement taken)

  int fd_;
  std::span<std::byte> shared_;
  std::size_t queue_bytes_;
  bool unacknowledged_ = false;
  std::deque<std::vector<std::byte>> queue_;
  std::size_t queued_ = 0;
};

// The parent's end: the body of the message frame being handed over, read in exact pieces.
class ParentChannel {
 public:
  // Fills `out` from the body; Error when the body holds fewer bytes.
  void read(std::span<std::byte> out);
  std::uint64_t left() const noexcept { return left_; }

  // Made by IsolatedWorker::call for each message; `path` names the file in errors. `shared`:
  // the body, when the child put it in the shared memory (empty: it comes on the socket).
  ParentChannel(WorkerLink& link, const std::string& path, std::uint64_t body, std::span<const std::byte> shared)
      : link_(link), path_(path), left_(body), shared_(shared) {}

 private:
  WorkerLink& link_;
  const std::string& path_;
  std::uint64_t left_;
  std::span<const std::byte> shared_;
};

struct IsolationLimits {
  // The longest the child may go without sending a byte (while the parent waits for one).
  std::chrono::seconds silence{120};
  std::string doing = "reading the file's structure";  // for the crash and timeout messages
};

// A child process that serves requests one after another. It is forked once (by `start`, or at
// the first call), so memory the parent allocates later is not shared with it copy-on-write: a
// child forked per request from a parent holding hundreds of MiB would make both copy every
// shared page they then write. A call whose child crashed or stayed silent ends the child; the
// next call forks anew.
class IsolatedWorker {
 public:
  using Serve = std::function<void(std::string_view request, ChildChannel&)>;
  IsolatedWorker(Serve serve, IsolationLimits limits);
  IsolatedWorker(const IsolatedWorker&) = delete;
  IsolatedWorker& operator=(const IsolatedWorker&) = delete;
  ~IsolatedWorker();  // ends the child

  // Forks the child now (when it is not running), while the parent is small: the pages the two
  // share copy-on-write are then few (see above).
  void start();

  // Runs `serve(request)` in the child; each message frame it sends is handed to `on_message`
  // (which must read its whole body) as it arrives. Rethrows the error `serve` raised;
  // FormatError naming `path` when the child crashed or stayed silent. An exception from
  // `on_message` ends the child and propagates.
  void call(const std::string& path, std::string_view request, const std::function<void(ParentChannel&)>& on_message);
  // `call` in two steps: `begin` hands the request over (the child starts at once), `finish`
  // receives its messages. Between them the parent may begin requests on other workers.
  void begin(const std::string& path, std::string_view request);
  void finish(const std::string& path, const std::function<void(ParentChannel&)>& on_message);

 private:
  Serve serve_;
  IsolationLimits limits_;
  std::unique_ptr<WorkerLink> link_;
};

// Runs `work` in a child process of its own and returns the bytes it produced.
std::string run_isolated(const std::string& path, const std::function<std::string()>& work,
                         const IsolationLimits& limits = {});

}  // namespace tessera::cli
