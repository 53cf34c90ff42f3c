// Temporaries of unfinished writes: every writer builds its output under a hidden name carrying
// its process id, so what an interrupted write leaves behind can be recognised and removed
// (docs/reliability.md, "Temporary files of interrupted writes"):
//  - a write that fails or is stopped by SIGINT, SIGTERM or SIGHUP removes its own temporaries
//    (destructors, and in the CLI the termination handler below);
//  - a SIGKILL leaves them, and the next writer of the same output removes those whose process
//    is gone.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace tessera::io {

// Removes, in `directory`, every entry named `prefix` + a decimal pid, optionally followed by
// `-` and anything, whose process is gone (io::writer_is_gone): files and whole directory trees.
// Entries of live processes, and names that do not carry a pid this way, stay. Best effort:
// returns how many entries were removed and never throws.
std::size_t remove_stale_temporaries(const std::filesystem::path& directory, std::string_view prefix) noexcept;

// Keeps the name of one live temporary where a termination signal handler can find it, for as
// long as the registration lives. A fixed table holds a few dozen at once; a temporary that does
// not fit (or whose name is longer than PATH_MAX) is simply not removed by the handler, and the
// next writer's stale sweep takes it. Thread-safe; not copyable or movable.
class TemporaryRegistration {
 public:
  TemporaryRegistration() = default;
  explicit TemporaryRegistration(const std::string& path) noexcept;
  ~TemporaryRegistration();
  TemporaryRegistration(const TemporaryRegistration&) = delete;
  TemporaryRegistration& operator=(const TemporaryRegistration&) = delete;
  // Registers `path` (after releasing any earlier registration of this object).
  void assign(const std::string& path) noexcept;
  // Forgets the temporary (it was renamed into place or removed).
  void release() noexcept;

 private:
  int slot_ = -1;
};

// Unlinks every registered temporary. Async-signal-safe: it only reads the fixed table and
// calls unlink(2).
void remove_registered_temporaries() noexcept;

// Makes SIGINT, SIGTERM and SIGHUP remove the registered temporaries before the process dies of
// the same signal (exit status 128 + signal, as without the handler). For programs: the library
// never installs signal handlers itself (the `tessera` CLI calls this in main; the Python module
// leaves signals to Python, and a write interrupted there is cleaned by its destructor or by the
// next writer's sweep). A handler the program installs later replaces this one for that signal.
void remove_temporaries_on_termination_signals();

}  // namespace tessera::io
