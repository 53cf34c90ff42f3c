// Work that may crash or hang inside libhdf5, run in a forked child process. libhdf5 1.10 trusts
// what a file says (a damaged global heap or string descriptor makes it read out of bounds or
// loop forever; docs/compat.md D16), so the commands that read HDF5 (`cells convert`'s scans,
// `ragged build`'s granules) read in a child that sends its results back through a pipe. A child
// killed by a signal, or silent for longer than the allowed time, becomes a FormatError naming
// the file instead of a crash or a hang; an error the work raises travels back with its type, so
// messages and exit codes are unchanged.
//
// The pipe carries frames: one kind byte, a u64 body length, the body. The child's work sends
// message frames ('M'); a last frame says it finished ('O') or carries its error.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
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

// The child's end of the pipe.
class ChildChannel {
 public:
  explicit ChildChannel(int fd) : fd_(fd) {}
  // One message frame whose body is `parts`, written straight from them (no copy into a buffer).
  void send(std::span<const std::span<const std::byte>> parts) const;

 private:
  int fd_;
};

// The parent's end: the body of the frame being handed over, read in exact pieces.
class ParentChannel {
 public:
  // Fills `out` from the body; Error when the body holds fewer bytes.
  void read(std::span<std::byte> out);
  std::uint64_t left() const noexcept { return left_; }

  ParentChannel(class IsolatedRun& run, std::uint64_t body) : run_(run), left_(body) {}  // by run_isolated_stream

 private:
  class IsolatedRun& run_;
  std::uint64_t left_;
};

struct IsolationLimits {
  // The longest the child may go without sending a byte (while the parent waits for one).
  std::chrono::seconds silence{120};
  std::string doing = "reading the file's structure";  // for the crash and timeout messages
};

// Runs `work(channel)` in a child process; each message frame it sends is handed to
// `on_message` (which must read its whole body) as it arrives. Returns when the work finished;
// rethrows its error; FormatError naming `path` when the child crashed or stayed silent. An
// exception from `on_message` kills the child and propagates.
void run_isolated_stream(const std::string& path, const std::function<void(ChildChannel&)>& work,
                         const std::function<void(ParentChannel&)>& on_message, const IsolationLimits& limits = {});

// Runs `work` in a child process and returns the bytes it produced (one message).
std::string run_isolated(const std::string& path, const std::function<std::string()>& work,
                         const IsolationLimits& limits = {});

}  // namespace tessera::cli
