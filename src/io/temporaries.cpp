#include "tessera/io/temporaries.hpp"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

#include "tessera/io/file_lock.hpp"

namespace tessera::io {
namespace {

// The pid in `name` = prefix + digits [+ '-' + anything], or 0 when the name is not of that form.
long pid_in_name(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return 0;
  long pid = 0;
  std::size_t i = prefix.size();
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    if (i - prefix.size() == 10) return 0;  // longer than any pid: not a pid
    pid = pid * 10 + (name[i] - '0');
  }
  if (i == prefix.size() || pid > 2147483647) return 0;
  if (i < name.size() && name[i] != '-') return 0;
  return pid;
}

// The table a termination handler reads. A slot is Free, being Written by register, or Ready;
// the handler unlinks only Ready slots, so it never reads a name while it is being copied in.
enum SlotState : int { kFree = 0, kWriting = 1, kReady = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX]{};
};
constexpr std::size_t kSlots = 64;
// Constant-initialised (zeros in .bss): a dynamic initialiser would touch all 64 slots' pages at
// every process start.
constinit std::array<Slot, kSlots> g_slots{};

extern "C" void remove_temporaries_and_die(int sig) {
  remove_registered_temporaries();
  // SA_RESETHAND restored the default action; the raised signal is delivered when this returns.
  ::raise(sig);
}

}  // namespace

std::size_t remove_stale_temporaries(const std::filesystem::path& directory, std::string_view prefix) noexcept {
  std::size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory.empty() ? std::filesystem::path(".") : directory, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const long pid = pid_in_name(name, prefix);
    if (pid == 0 || pid == static_cast<long>(::getpid()) || !writer_is_gone(pid)) continue;
    std::error_code rm;
    if (std::filesystem::remove_all(it->path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

TemporaryRegistration::TemporaryRegistration(const std::string& path) noexcept { assign(path); }

TemporaryRegistration::~TemporaryRegistration() { release(); }

void TemporaryRegistration::assign(const std::string& path) noexcept {
  release();
  if (path.size() >= PATH_MAX) return;
  for (std::size_t i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kReady, std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
}

void TemporaryRegistration::release() noexcept {
  if (slot_ < 0) return;
  g_slots[static_cast<std::size_t>(slot_)].state.store(kFree, std::memory_order_release);
  slot_ = -1;
}

void remove_registered_temporaries() noexcept {
  for (auto& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == kReady) ::unlink(slot.path);
}

void remove_temporaries_on_termination_signals() {
  struct sigaction action {};
  action.sa_handler = remove_temporaries_and_die;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &action, nullptr);
}

}  // namespace tessera::io
