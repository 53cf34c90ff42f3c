// The file-system side of the local obs cache (spec deltacells.md §6.9): the cache root as the
// Python reference resolves and prints it (`~` expansion, pathlib normalization), the cache file
// name of a column, and a plain file sink for the `<file>.tmp<pid>` files the localizer writes and
// renames itself (under io::FileLock on `<root>/<fingerprint>/.lock`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/byte_sink.hpp"

namespace tessera::cells::obs_cache {

// os.path.expanduser: a leading `~` (then `/` or the end) becomes $HOME (or the passwd entry when
// HOME is unset), `~user` that user's home (UsageError for an unknown user, as pathlib's
// expanduser raises); anything else is returned unchanged.
std::string expand_user(std::string_view path);

// How pathlib.PurePosixPath prints `path`: repeated slashes collapsed (except exactly two leading
// ones), `.` components and trailing slashes dropped, `..` kept; the empty path is `.`.
std::string normalize_path(std::string_view path);

// `<quote_column_file_name(column)>.arrow`; IoError naming the column when it is longer than a
// file name may be (NAME_MAX).
std::string cache_file_name(const std::string& column);

// Whether `path` names an existing file (any error, ENAMETOOLONG included, counts as absent).
bool file_exists(const std::string& path) noexcept;

// `mkdir -p` with mode 0777 before umask; IoError naming the directory.
void make_directories(const std::string& path);

// The check sidecar of a cache file: `<file>.check`, one line `crc32c=<8 hex digits> size=<bytes>`
// describing the file as written, so damage after the write (a flipped bit on disk, in the page
// cache, or an in-place edit) is detected; C9 then rebuilds the file. A file's bytes are fixed by
// the dataset's fingerprint and the column, so a file the Python reference rebuilt (it writes no
// sidecar) has the same content; one of another size is not the file described and is not
// checked. write_check describes `written` (the finished temporary) in the sidecar of
// `final_path`; best effort: a sidecar that cannot be written leaves the file unchecked, never
// fails the localize.
void write_check(const std::string& written, const std::string& final_path) noexcept;
// Checks `bytes`, the whole content of the cache file at `path`, against its sidecar when the
// sidecar describes this file; FormatError naming the file and "checksum" on a mismatch.
void verify_check(const std::string& path, std::span<const std::byte> bytes);

// Writes straight to `path` (created or truncated), buffered; `commit()` flushes, fsyncs and
// closes it. Nothing is renamed and nothing is deleted: the caller owns the file's fate.
class PlainFileSink final : public io::ByteSink {
 public:
  // `what` names the file in errors (e.g. the column).
  PlainFileSink(std::string path, std::string what);
  ~PlainFileSink() override;
  PlainFileSink(const PlainFileSink&) = delete;
  PlainFileSink& operator=(const PlainFileSink&) = delete;

  void write(std::span<const std::byte> bytes) override;
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) override;
  std::uint64_t position() const override { return position_; }
  void commit() override;

 private:
  void flush();
  std::string path_;
  std::string what_;
  int fd_ = -1;
  std::uint64_t position_ = 0;  // bytes written, buffered ones included
  std::uint64_t flushed_ = 0;   // bytes handed to the file
  std::vector<std::byte> buffer_;
  bool committed_ = false;
};

}  // namespace tessera::cells::obs_cache
