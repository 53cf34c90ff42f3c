// The test hooks: parses the TESSERA_TEST_* settings once, counts passes per point, and kills,
// pauses or traces the process where a setting names a point (see test_hooks.hpp).
#include "tessera/core/test_hooks.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tessera/core/error.hpp"

namespace tessera::test_hooks {
namespace detail {
std::atomic<int> g_state{-1};
}  // namespace detail

namespace {

struct Target {
  std::string point;
  std::uint64_t n = 0;
};

struct Settings {
  std::optional<Target> kill_at, pause_at;
  std::string pause_dir, trace_file;
  std::map<std::string, std::uint64_t, std::less<>> passes;
};

std::mutex g_mutex;
Settings g_settings;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// "<point>:<n>" with n ≥ 1.
std::optional<Target> parse_target(const char* variable) {
  const std::string text = env(variable);
  if (text.empty()) return std::nullopt;
  const auto colon = text.rfind(':');
  const std::string count = colon == std::string::npos ? std::string() : text.substr(colon + 1);
  const bool digits =
      !count.empty() && count.size() <= 18 && count.find_first_not_of("0123456789") == std::string::npos;
  if (colon == 0 || !digits || std::stoull(count) == 0)
    throw UsageError(std::string(variable) + " must be <point>:<n> with n >= 1, not '" + text + "'");
  return Target{text.substr(0, colon), std::stoull(count)};
}

// Reads the settings under g_mutex; returns whether any hook is armed.
bool load_locked() {
  Settings s;
  s.kill_at = parse_target("TESSERA_TEST_KILL_AT");
  s.pause_at = parse_target("TESSERA_TEST_PAUSE_AT");
  s.pause_dir = env("TESSERA_TEST_PAUSE_DIR");
  s.trace_file = env("TESSERA_TEST_TRACE");
  if (s.pause_at && s.pause_dir.empty()) throw UsageError("TESSERA_TEST_PAUSE_AT needs TESSERA_TEST_PAUSE_DIR");
  const bool armed = s.kill_at || s.pause_at || !s.trace_file.empty();
  g_settings = std::move(s);
  detail::g_state.store(armed ? 1 : 0, std::memory_order_relaxed);
  return armed;
}

void append_line(const std::string& file, std::string_view point) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw IoError("cannot open the test trace: " + std::string(std::strerror(errno)), file);
  std::string line(point);
  line += '\n';
  const ssize_t n = ::write(fd, line.data(), line.size());  // one O_APPEND write: lines never interleave
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) throw IoError("cannot write the test trace", file);
}

void hold_until_released(const std::string& dir, std::string_view point) {
  namespace fs = std::filesystem;
  const fs::path reached = fs::path(dir) / (std::string(point) + ".reached");
  const fs::path release = fs::path(dir) / (std::string(point) + ".release");
  append_line(reached.string(), point);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (!fs::exists(release)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw IoError("test pause point " + std::string(point) + " was not released", release.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

namespace detail {

bool read_environment() {
  std::lock_guard lock(g_mutex);
  const int state = g_state.load(std::memory_order_relaxed);
  return state >= 0 ? state == 1 : load_locked();
}

void reached(std::string_view point) {
  bool kill = false, stop = false;
  std::string pause_dir;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_settings.passes.find(point);
    if (it == g_settings.passes.end()) it = g_settings.passes.emplace(std::string(point), 0).first;
    const std::uint64_t n = ++it->second;
    if (!g_settings.trace_file.empty()) append_line(g_settings.trace_file, point);
    kill = g_settings.kill_at && g_settings.kill_at->point == point && g_settings.kill_at->n == n;
    stop = g_settings.pause_at && g_settings.pause_at->point == point && g_settings.pause_at->n == n;
    pause_dir = g_settings.pause_dir;
  }
  if (kill) {
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();  // never runs past the point
  }
  if (stop) hold_until_released(pause_dir, point);  // outside the lock: other threads pass their points meanwhile
}

}  // namespace detail

void reload() {
  std::lock_guard lock(g_mutex);
  load_locked();
}

}  // namespace tessera::test_hooks
