// Advisory locks between processes on one machine: a BSD `flock` on a lock file. The
// obs cache serialises its localizers on `<fingerprint>/.lock` (the Python reference takes the
// same lock), the query history its read-modify-write on `<history>.lock`, and a ragged build the
// whole store on `<store>/.tessera-build.lock`, so concurrent writers neither interleave nor lose
// each other's work; the tasks of a distributed ragged build share that lock (each writes its own
// leaves) and so keep a whole-store build out while they run. The lock goes with the process: a
// killed holder never leaves it held.
#pragma once

#include <string>
#include <string_view>

namespace tessera::io {

// Thread-safety: one owner; the lock is held for the object's lifetime and released by its
// destructor (or by the kernel when the process dies).
class FileLock {
 public:
  enum class Wait {
    Block,       // wait until the lock is granted
    FailIfHeld,  // IoError "{path}: in use by pid {N} ({what})" when another process holds it
  };
  enum class Mode {
    Exclusive,  // one holder
    Shared,     // any number of shared holders, but no exclusive one meanwhile
  };
  // Opens `path` (created 0666 before umask) and takes a lock on it; `what` names the lock in
  // IoErrors ("cannot lock the {what} {path}: {errno}"). With FailIfHeld an exclusive holder
  // writes its pid into the file, so the process refused can say who holds it; shared holders
  // empty it (there is no one pid to name: the refusal then says "another process").
  // With Block, a lock someone else holds first passes test point `busy_point` when one is given
  // (core/test_hooks), so a test can see that this process had to wait.
  FileLock(const std::string& path, const std::string& what, Wait wait = Wait::Block, std::string_view busy_point = {},
           Mode mode = Mode::Exclusive);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Whether the writer whose pid is in a temporary's name is gone (no such process), so the
// temporary it left is garbage. A live process, or one that cannot be signalled, is not gone.
bool writer_is_gone(long pid) noexcept;

}  // namespace tessera::io
