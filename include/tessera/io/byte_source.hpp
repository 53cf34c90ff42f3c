// Ranged, read-only access to the bytes of one object: a local file (pread or memory map), a
// memory buffer, or an HTTP object (io/http.hpp; io/uri.hpp chooses among them). Every reader in
// tessera takes a ByteSource, never a path, so the same parser serves all of them.
//
// Contract:
//  - `read_at(offset, dst)` fills all of `dst` from `offset` or throws IoError (a read past the
//    end is an error, never a short read). Thread-safe: concurrent calls are allowed.
//  - `view(offset, len)` returns a pointer to `len` bytes that stays valid for the lifetime of
//    the source when the source is memory-resident (mmap, memory); otherwise nullptr, and the
//    caller falls back to `read_at`. Callers check bounds against `size()` first.
//  - `read_at` on a file opened MapAndRead copies with pread, so a caller that wants copies
//    (io/read_path.hpp) never faults the mapping's pages in.
//  - `reads_both_ways()` says whether both of those are real choices (a mapped file with its
//    descriptor kept).
//  - `will_need(offset, len)` is a hint that the bytes will be read soon: a local file starts
//    reading them into the page cache (cold sequential scans), other sources ignore it.
//  - Thread-safety: every member may be called concurrently from any thread.
//  - Lifetime: a source owns what it reads (a mapping, a buffer, a connection pool) except
//    `memory_source`, whose bytes the caller keeps alive. Sources are not copyable: one object
//    is shared by reference or through a smart pointer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera::io {

class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;
  [[nodiscard]] virtual std::uint64_t size() const = 0;
  virtual void read_at(std::uint64_t offset, std::span<std::byte> dst) const = 0;
  [[nodiscard]] virtual const std::byte* view(std::uint64_t /*offset*/, std::uint64_t /*len*/) const { return nullptr; }
  virtual void will_need(std::uint64_t /*offset*/, std::uint64_t /*len*/) const {}
  // True for a mapped local file whose read_at copies with pread (OpenMode::MapAndRead): a scan
  // of it may view the map or copy pages out, whichever the machine makes cheaper
  // (io/read_path.hpp). Memory and remote sources have nothing to choose.
  [[nodiscard]] virtual bool reads_both_ways() const { return false; }
  // Name used in error messages (normally the path as the user wrote it).
  [[nodiscard]] virtual const std::string& name() const = 0;

  // Convenience: reads [offset, offset + len) into a new buffer.
  [[nodiscard]] std::vector<std::byte> read_vector(std::uint64_t offset, std::uint64_t len) const;
};

// Throws IoError naming `src` when [offset, offset + len) is not inside it (the check every
// source's read_at and view make first).
void check_range(const ByteSource& src, std::uint64_t offset, std::uint64_t len);

enum class OpenMode { Mmap, Pread, MapAndRead };

// Opens a local file. Mmap maps the whole file read-only (an empty file maps nothing) and holds
// no descriptor; Pread issues one pread per read_at; MapAndRead maps the file for views and keeps
// its descriptor so read_at copies with pread (the large files streaming scans read both ways).
[[nodiscard]] std::unique_ptr<ByteSource> open_file(const std::string& path, OpenMode mode = OpenMode::Mmap);

// A source over bytes owned by the caller (must outlive the source) or copied in.
[[nodiscard]] std::unique_ptr<ByteSource> memory_source(std::span<const std::byte> bytes,
                                                        std::string name = "<memory>");
[[nodiscard]] std::unique_ptr<ByteSource> owned_memory_source(std::vector<std::byte> bytes,
                                                              std::string name = "<memory>");

// Wraps another source and counts the ranged reads and bytes that go through it; `view` is
// disabled so every access is counted. Used by tests to prove how many reads an operation makes.
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(const ByteSource& inner) : inner_(inner) {}
  std::uint64_t size() const override { return inner_.size(); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override;
  const std::string& name() const override { return inner_.name(); }

  std::uint64_t reads() const noexcept { return reads_.load(); }
  std::uint64_t bytes() const noexcept { return bytes_.load(); }
  void reset() noexcept {
    reads_ = 0;
    bytes_ = 0;
  }

 private:
  const ByteSource& inner_;
  mutable std::atomic<std::uint64_t> reads_{0};
  mutable std::atomic<std::uint64_t> bytes_{0};
};

}  // namespace tessera::io
