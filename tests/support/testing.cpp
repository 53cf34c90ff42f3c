#include "support/testing.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// Owns one file descriptor; closing twice is harmless.
class Fd {
 public:
  Fd() = default;
  ~Fd() { close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  bool open() const noexcept { return fd_ >= 0; }
  void reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  void close() noexcept { reset(-1); }

 private:
  int fd_ = -1;
};

// Both ends are close-on-exec, so a child started concurrently by another thread never inherits
// them; the child's copies are made by dup2 in the spawn file actions, which clears the flag.
void make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool overridden =
        std::any_of(overrides.begin(), overrides.end(), [&](const auto& kv) { return kv.first == name; });
    if (!overridden) env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Writing stdin to a child that has already exited must report EPIPE rather than kill the test
// process; children get SIGPIPE back at its default through POSIX_SPAWN_SETSIGDEF.
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

// Waits for `pid`; returns its exit code (128 + signal when killed) and, when asked, the child's
// own peak resident set size in KiB (wait4 reports that child alone, not all children so far).
int wait_for(pid_t pid, long* peak_rss_kib = nullptr) {
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw_errno(errno, "wait4");
  }
  if (peak_rss_kib != nullptr) *peak_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

pid_t spawn(const std::vector<std::string>& argv, const RunOptions& options, int child_in, int child_out,
            int child_err) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (int rc = ::posix_spawn_file_actions_init(&actions)) throw_errno(rc, "posix_spawn_file_actions_init");
  if (int rc = ::posix_spawnattr_init(&attr)) {
    ::posix_spawn_file_actions_destroy(&actions);
    throw_errno(rc, "posix_spawnattr_init");
  }
  ::posix_spawn_file_actions_adddup2(&actions, child_in, STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, child_out, STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, child_err, STDERR_FILENO);
  if (!options.cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigset_t no_mask;
  sigemptyset(&no_mask);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setsigmask(&attr, &no_mask);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(options.env);
  const auto c_args = c_strings(args);
  const auto c_env = c_strings(env);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0].c_str(), &actions, &attr, c_args.data(), c_env.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) throw_errno(rc, "cannot start " + argv[0]);
  return pid;
}

// Feeds stdin and drains stdout/stderr together, so a child that fills one pipe while we wait on
// another can never deadlock.
void pump(Fd& in, Fd& out, Fd& err, std::string_view stdin_data, RunResult& result) {
  std::size_t written = 0;
  if (stdin_data.empty()) in.close();
  else if (::fcntl(in.get(), F_SETFL, O_NONBLOCK) != 0) throw_errno(errno, "fcntl");
  std::array<char, 65536> buf;
  while (in.open() || out.open() || err.open()) {
    std::array<pollfd, 3> fds{{{in.get(), POLLOUT, 0}, {out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}}};
    // poll ignores negative descriptors, so closed streams simply drop out.
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, "poll");
    }
    if (fds[0].revents != 0) {
      const ssize_t n = ::write(in.get(), stdin_data.data() + written, stdin_data.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_data.size()) in.close();
    }
    for (std::size_t i = 1; i < 3; ++i) {
      if (fds[i].revents == 0) continue;
      Fd& fd = i == 1 ? out : err;
      const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
      if (n > 0) (i == 1 ? result.out : result.err).append(buf.data(), static_cast<std::size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) fd.close();
    }
  }
}

}  // namespace

fs::path conformance_dir() {
  if (const char* env = std::getenv("TESSERA_CONFORMANCE_DIR"); env != nullptr && *env != '\0') return env;
  return TESSERA_CONFORMANCE_DIR;
}

fs::path source_dir() { return TESSERA_SOURCE_DIR; }

fs::path tet_fixture(const std::string& relative) { return conformance_dir() / "tetration" / relative; }

TempDir::TempDir(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = (tmp != nullptr && *tmp != '\0') ? fs::path(tmp) : fs::path("/tmp");
  std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno(errno, "mkdtemp " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

void TempDir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);  // best effort: a destructor must not throw
  path_.clear();
}

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
  ignore_sigpipe_once();
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  make_pipe(in_r, in_w);
  make_pipe(out_r, out_w);
  make_pipe(err_r, err_w);
  const pid_t pid = spawn(argv, options, in_r.get(), out_w.get(), err_w.get());
  // Only the child may hold these ends, or our reads would never see EOF.
  in_r.close();
  out_w.close();
  err_w.close();
  RunResult result;
  try {
    pump(in_w, out_r, err_r, options.stdin_data, result);
  } catch (...) {
    ::kill(pid, SIGKILL);
    wait_for(pid);
    throw;
  }
  result.rc = wait_for(pid, &result.peak_rss_kib);
  return result;
}

pid_t start_process(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) throw std::invalid_argument("start_process: empty argv");
  Fd in, out;
  in.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  out.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!in.open() || !out.open()) throw_errno(errno, "open /dev/null");
  return spawn(argv, options, in.get(), out.get(), out.get());
}

int wait_process(pid_t pid) { return wait_for(pid); }

bool wait_until(const std::function<bool()>& condition, const std::string& what) {
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > bound) {
      ADD_FAILURE() << "gave up after 60 s waiting for " << what;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::map<std::string, std::uint64_t> read_trace(const fs::path& path) {
  std::map<std::string, std::uint64_t> passes;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ++passes[line];
  return passes;
}

std::string cli_path() { return TESSERA_CLI_PATH; }

RunResult run_cli(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, options);
}

long rss_above_idle_cli_kib(const RunResult& run) {
  static const long idle = [] {
    const RunResult r = run_cli({"--version"});
    if (r.rc != 0) throw std::runtime_error("tessera --version failed: " + r.err);
    return r.peak_rss_kib;
  }();
  return run.peak_rss_kib > idle ? run.peak_rss_kib - idle : 0;
}

bool have_python_numpy() {
  static const bool available = [] {
    std::error_code ec;
    if (!fs::exists("/usr/bin/python3", ec)) return false;
    return run_process({"/usr/bin/python3", "-c", "import numpy"}).rc == 0;
  }();
  return available;
}

RunResult run_python(const std::string& code, const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{"/usr/bin/python3", "-c", code};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, options);
}

std::vector<std::byte> read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error("cannot size " + path.string());
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) throw std::runtime_error("cannot read " + path.string());
  return bytes;
}

std::string read_file_text(const fs::path& path) {
  const auto bytes = read_file_bytes(path);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_file_bytes(const fs::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create " + path.string());
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_file_text(const fs::path& path, std::string_view text) {
  write_file_bytes(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

RunResult run_in_child(const std::function<void()>& fn) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw_errno(errno, "pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno(errno, "fork");
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string message;
    int rc = 0;
    try {
      fn();
    } catch (const tessera::FormatError& e) {
      message = std::string("FormatError: ") + e.what(), rc = 1;
    } catch (const tessera::LimitError& e) {
      message = std::string("LimitError: ") + e.what(), rc = 1;
    } catch (const tessera::Error& e) {
      message = std::string("Error: ") + e.what(), rc = 1;
    } catch (const std::exception& e) {
      message = std::string("std: ") + e.what(), rc = 1;
    }
    for (std::size_t done = 0; done < message.size();) {
      const ssize_t n = ::write(pipe_fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(rc);
  }
  ::close(pipe_fds[1]);
  RunResult result;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  result.rc = wait_for(pid, &result.peak_rss_kib);
  return result;
}

std::vector<std::byte> zstd_zeros_frame(std::span<const std::byte> prefix, std::uint64_t zeros, bool declare_size) {
  constexpr std::uint32_t kBlock = 128 * 1024;
  if (prefix.size() >= kBlock) throw std::invalid_argument("zstd_zeros_frame: prefix of 128 KiB or more");
  std::vector<std::byte> frame(4);
  store_le<std::uint32_t>(frame.data(), 0xFD2FB528u);  // magic
  if (declare_size) {
    frame.push_back(std::byte{0xC0});  // 8-byte content size, window descriptor present
    frame.push_back(std::byte{0x50});  // 1 MiB window
    append_le<std::uint64_t>(frame, prefix.size() + zeros);
  } else {
    frame.push_back(std::byte{0x00});  // no content size, window descriptor present
    frame.push_back(std::byte{0x50});
  }
  const auto block_header = [&](bool last, std::uint32_t type, std::uint32_t size) {
    const std::uint32_t header = (last ? 1u : 0u) | (type << 1) | (size << 3);
    for (int b = 0; b < 3; ++b) frame.push_back(static_cast<std::byte>(header >> (8 * b)));
  };
  if (!prefix.empty() || zeros == 0) {
    block_header(zeros == 0, 0, static_cast<std::uint32_t>(prefix.size()));  // raw block
    frame.insert(frame.end(), prefix.begin(), prefix.end());
  }
  for (std::uint64_t done = 0; done < zeros;) {
    const std::uint32_t n = static_cast<std::uint32_t>(std::min<std::uint64_t>(kBlock, zeros - done));
    done += n;
    block_header(done == zeros, 1, n);  // RLE block of n zero bytes
    frame.push_back(std::byte{0});
  }
  return frame;
}

}  // namespace tessera::testing
