#include "obs_cache.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "tessera/core/os_error.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::cells {
namespace obs_cache {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

}  // namespace

std::string expand_user(std::string_view path) {
  if (path.empty() || path[0] != '~') return std::string(path);
  const std::size_t slash = path.find('/');
  const std::string_view user = path.substr(1, slash == std::string_view::npos ? std::string_view::npos : slash - 1);
  const std::string_view rest = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  std::string home;
  if (user.empty()) {
    if (const char* h = std::getenv("HOME"); h != nullptr) {
      home = h;
    } else {
      const passwd* pw = ::getpwuid(::getuid());
      if (pw == nullptr || pw->pw_dir == nullptr) return std::string(path);
      home = pw->pw_dir;
    }
  } else {
    const passwd* pw = ::getpwnam(std::string(user).c_str());
    // pathlib's expanduser refuses what it cannot expand (RuntimeError); so does tessera.
    if (pw == nullptr || pw->pw_dir == nullptr)
      throw UsageError("cannot expand '" + std::string(path) + "': no user named '" + std::string(user) + "'");
    home = pw->pw_dir;
  }
  // posixpath.expanduser strips every trailing slash from the home directory ("/" included).
  while (!home.empty() && home.back() == '/') home.pop_back();
  std::string out = home + std::string(rest);
  return out.empty() ? "/" : out;
}

std::string normalize_path(std::string_view path) {
  std::string root;
  if (!path.empty() && path[0] == '/') {
    // POSIX: exactly two leading slashes are kept, one or three and more collapse to one.
    root = path.size() >= 2 && path[1] == '/' && (path.size() == 2 || path[2] != '/') ? "//" : "/";
  }
  std::string out = root;
  std::size_t i = 0;
  bool first = true;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") {
      if (!first) out += '/';
      out += part;
      first = false;
    }
    i = j + 1;
  }
  return out.empty() ? "." : out;
}

std::string cache_file_name(const std::string& column) {
  std::string name = quote_column_file_name(column) + ".arrow";
  if (name.size() > NAME_MAX)
    throw IoError("obs column '" + column + "': its cache file name (" + std::to_string(name.size()) +
                      " bytes quoted) is longer than the file system allows (" + std::to_string(NAME_MAX) + ")",
                  name.substr(0, 64) + "...");
  return name;
}

bool file_exists(const std::string& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void make_directories(const std::string& path) {
  std::string prefix;
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    prefix.assign(path, 0, j);
    i = j + 1;
    if (prefix.empty() || prefix == "/" || prefix == "//") continue;
    if (::mkdir(prefix.c_str(), 0777) == 0) continue;
    const int e = errno;
    struct stat st {};
    if (e == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    throw IoError("cannot create the obs cache directory " + prefix + ": " + errno_text(e), prefix);
  }
}

PlainFileSink::PlainFileSink(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int e = errno;
    throw IoError(what_ + ": cannot create " + path_ + ": " + errno_text(e), path_);
  }
  buffer_.reserve(kBufferBytes);
}

PlainFileSink::~PlainFileSink() {
  if (fd_ >= 0) ::close(fd_);
}

void PlainFileSink::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::pwrite(fd_, buffer_.data() + done, buffer_.size() - done, static_cast<off_t>(flushed_ + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      throw IoError(what_ + ": write to " + path_ + " failed: " + errno_text(e), path_);
    }
    done += static_cast<std::size_t>(n);
  }
  flushed_ += buffer_.size();
  buffer_.clear();
}

void PlainFileSink::write(std::span<const std::byte> bytes) {
  if (committed_ || fd_ < 0) throw UsageError("write after commit", path_);
  if (buffer_.size() + bytes.size() > kBufferBytes) flush();
  if (bytes.size() >= kBufferBytes) {
    buffer_.assign(bytes.begin(), bytes.end());
    flush();
  } else {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
  position_ += bytes.size();
}

void PlainFileSink::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (committed_ || fd_ < 0) throw UsageError("write after commit", path_);
  if (checked_add(offset, bytes.size()) > position_) throw UsageError("write_at past the written end", path_);
  flush();
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      throw IoError(what_ + ": write to " + path_ + " failed: " + errno_text(e), path_);
    }
    done += static_cast<std::size_t>(n);
  }
}

void PlainFileSink::commit() {
  if (committed_) return;
  flush();
  if (::fsync(fd_) != 0) {
    const int e = errno;
    throw IoError(what_ + ": fsync of " + path_ + " failed: " + errno_text(e), path_);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int e = errno;
    throw IoError(what_ + ": close of " + path_ + " failed: " + errno_text(e), path_);
  }
  committed_ = true;
}

namespace {

std::string check_path(const std::string& cache_file) { return cache_file + ".check"; }

}  // namespace

void write_check(const std::string& written, const std::string& final_path) noexcept {
  try {
    const auto source = io::open_file(written, io::OpenMode::Pread);
    std::uint32_t crc = 0;
    std::vector<std::byte> buffer(std::size_t{1} << 20);
    for (std::uint64_t at = 0; at < source->size();) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), source->size() - at));
      source->read_at(at, std::span(buffer).first(n));
      crc = codec::crc32c(std::span(buffer).first(n), crc);
      at += n;
    }
    char line[64];
    std::snprintf(line, sizeof line, "crc32c=%08x size=%llu\n", crc, static_cast<unsigned long long>(source->size()));
    io::write_file_atomic(check_path(final_path), std::as_bytes(std::span(line, std::strlen(line))));
  } catch (...) {
    // No sidecar: the file is used unchecked, as one the reference wrote.
  }
}

void verify_check(const std::string& path, std::span<const std::byte> bytes) {
  std::string text;
  try {
    const auto source = io::open_file(check_path(path), io::OpenMode::Pread);
    if (source->size() > 64) return;
    text.resize(static_cast<std::size_t>(source->size()));
    source->read_at(0, std::as_writable_bytes(std::span(text)));
  } catch (const Error&) {
    return;  // no sidecar
  }
  unsigned crc = 0;
  unsigned long long size = 0;
  if (std::sscanf(text.c_str(), "crc32c=%8x size=%llu", &crc, &size) != 2) return;
  if (size != bytes.size()) return;  // not the file the sidecar describes
  const std::uint32_t computed = codec::crc32c(bytes);
  if (computed != crc) {
    char message[160];
    std::snprintf(message, sizeof message,
                  "obs cache file is damaged: CRC-32C %08x, written as %08x (its .check sidecar)", computed, crc);
    throw FormatError(message, path, "checksum");
  }
}

}  // namespace obs_cache

std::string resolve_obs_cache_root(const std::string& cache_dir) {
  using obs_cache::expand_user;
  using obs_cache::normalize_path;
  if (!cache_dir.empty()) return normalize_path(expand_user(cache_dir));
  if (const char* v = std::getenv("DELTACELLS_CACHE"); v != nullptr && *v != '\0')
    return normalize_path(expand_user(v));
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v != nullptr && *v != '\0')
    return normalize_path(std::string(v) + "/deltacells");
  // Path.home() / ".cache" / "deltacells" (Path.home(): $HOME, else the passwd entry).
  const std::string home = expand_user("~");
  return normalize_path(home + (home.ends_with('/') ? "" : "/") + ".cache/deltacells");
}

}  // namespace tessera::cells
