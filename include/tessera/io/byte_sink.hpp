// Writers produce bytes through a ByteSink. The file sink commits atomically: bytes go to a
// temporary file in the destination directory, and `commit()` fsyncs it, renames it over the
// destination and fsyncs the directory. A sink destroyed without `commit()` removes its
// temporary file, so an interrupted or failed write never damages an existing destination.
// The temporary is `.<name>.tmp-<pid>-XXXXXX` and is registered for the termination-signal
// cleanup of io/temporaries.hpp; a sink asked to (the default) first removes the temporaries of
// earlier writers of the same name whose process is gone (a SIGKILL leaves them).
//
// The sink never replaces anything but a regular file or a new name (docs/reliability.md):
//  - a symbolic link (chain) is followed: the regular file it names is replaced atomically, or
//    created when the link dangles, and the link itself stays;
//  - a character device, FIFO or socket (/dev/null, a terminal, a pipe, /dev/stdout) is written
//    directly in order: no temporary file, no rename; `write_at` there throws UnsupportedError;
//  - a directory, block device or anything else is refused with UsageError before any write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/io/temporaries.hpp"

namespace tessera::io {

// Whether a sink removes the temporaries dead writers left for the same name (one directory
// listing). Writers of many small objects in a directory they created skip it.
enum class StaleTemporaries { Remove, Keep };

// Thread-safety: one thread at a time per sink. Lifetime: a sink owns its file or buffer.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Appends at the current end.
  virtual void write(std::span<const std::byte> bytes) = 0;
  // Overwrites bytes already written (for headers whose contents are known only at the end).
  virtual void write_at(std::uint64_t offset, std::span<const std::byte> bytes) = 0;
  virtual std::uint64_t position() const = 0;
  // Makes the bytes visible at the destination; no further writes are allowed.
  virtual void commit() = 0;
};

class AtomicFileSink final : public ByteSink {
 public:
  explicit AtomicFileSink(std::string destination, StaleTemporaries stale = StaleTemporaries::Remove);
  ~AtomicFileSink() override;
  AtomicFileSink(const AtomicFileSink&) = delete;
  AtomicFileSink& operator=(const AtomicFileSink&) = delete;

  void write(std::span<const std::byte> bytes) override;
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override;
  std::uint64_t position() const override { return position_; }
  void commit() override;

  const std::string& destination() const noexcept { return destination_; }
  // Empty when streaming to a device or FIFO.
  const std::string& temp_path() const noexcept { return temp_path_; }
  // The file the rename replaces: the destination, or the file its symbolic links lead to.
  const std::string& target() const noexcept { return target_; }
  bool streaming() const noexcept { return streaming_; }

 private:
  std::string destination_;
  std::string target_;
  std::string temp_path_;
  int fd_ = -1;
  bool streaming_ = false;
  std::uint64_t position_ = 0;
  bool committed_ = false;
  TemporaryRegistration registration_;
};

// Collects bytes in memory (tests, small objects, payloads built before a store write).
class MemorySink final : public ByteSink {
 public:
  void write(std::span<const std::byte> bytes) override;
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override;
  std::uint64_t position() const override { return bytes_.size(); }
  void commit() override { committed_ = true; }
  const std::vector<std::byte>& bytes() const noexcept { return bytes_; }
  bool committed() const noexcept { return committed_; }

 private:
  std::vector<std::byte> bytes_;
  bool committed_ = false;
};

// Writes `bytes` to `path` atomically in one call.
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes,
                       StaleTemporaries stale = StaleTemporaries::Keep);

}  // namespace tessera::io
