// The read-path choice for streaming scans (io/read_path.hpp).
#include "tessera/io/read_path.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {
namespace {

constexpr std::uint64_t kPieceBytes = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxPieces = 16;
constexpr std::uint64_t kMinPieces = 2;

// Reads every byte once (the work a scan does per byte at the least), so neither way can skip it.
std::uint64_t touch(const std::byte* p, std::size_t n) {
  std::uint64_t s = 0;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  return s;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Times both ways over `pieces` 1 MiB pieces at `offset` of a source that can view. Pass one
// alternates pread and map so every page is in the page cache; pass two swaps them, so the
// mapped pieces are pages this process has never faulted and the copied ones are warm too.
ReadPathProbe measure(const ByteSource& source, std::uint64_t offset, std::uint64_t pieces) {
  std::vector<std::byte> buffer(kPieceBytes);
  std::memset(buffer.data(), 0, buffer.size());  // fault the buffer in before timing
  ReadPathProbe probe;
  probe.measured = true;
  volatile std::uint64_t sink = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const std::uint64_t at = offset + i * kPieceBytes;
      const bool copy = (i % 2 == 0) == (pass == 0);
      const std::uint64_t t0 = now_ns();
      if (copy) {
        source.read_at(at, buffer);
        sink = sink + touch(buffer.data(), buffer.size());
      } else {
        sink = sink + touch(source.view(at, kPieceBytes), kPieceBytes);
      }
      const std::uint64_t dt = now_ns() - t0;
      if (pass == 1) (copy ? probe.pread_ns : probe.mmap_ns) += dt;
    }
  }
  probe.bytes = pieces / 2 * kPieceBytes;
  // The copies must win outright: a map also serves zero-copy and block-by-block folds.
  probe.chosen = probe.pread_ns < probe.mmap_ns ? ReadPath::Pread : ReadPath::Mmap;
  return probe;
}

}  // namespace

std::string_view read_path_name(ReadPath path) noexcept {
  switch (path) {
    case ReadPath::Auto: return "auto";
    case ReadPath::Mmap: return "mmap";
    case ReadPath::Pread: return "pread";
  }
  return "auto";
}

ReadPath configured_read_path() {
  const char* v = std::getenv("TESSERA_READ_PATH");
  if (v == nullptr || *v == '\0') return ReadPath::Auto;
  const std::string s(v);
  if (s == "auto") return ReadPath::Auto;
  if (s == "mmap") return ReadPath::Mmap;
  if (s == "pread") return ReadPath::Pread;
  throw UsageError("TESSERA_READ_PATH is '" + s + "'; use auto, mmap or pread");
}

ReadPathProbe choose_read_path(const ByteSource& source, std::uint64_t offset, std::uint64_t len,
                               std::uint64_t scan_bytes) {
  ReadPathProbe forced;
  const ReadPath configured = configured_read_path();
  if (configured != ReadPath::Auto) {
    forced.chosen = configured;
    return forced;
  }
  if (source.view(0, 0) == nullptr) {  // nothing mapped: copies are the only way
    forced.chosen = ReadPath::Pread;
    return forced;
  }
  // Bytes in memory (or mapped without a descriptor) are read where they lie, and must not steer
  // the process's choice for the page cache.
  if (!source.reads_both_ways()) return forced;  // Mmap, not measured
  const std::uint64_t pieces = std::min(kMaxPieces, len / kPieceBytes) / 2 * 2;
  if (scan_bytes < kProbeMinScanBytes || pieces < kMinPieces) return forced;  // Mmap, not measured
  static std::mutex mutex;
  static std::optional<ReadPathProbe> measured;
  const std::lock_guard lock(mutex);
  if (!measured) measured = measure(source, offset, pieces);
  return *measured;
}

std::shared_ptr<const ByteSource> read_whole_by_path(std::shared_ptr<const ByteSource> source, std::uint64_t scan_bytes,
                                                     const std::shared_ptr<KeptBuffers>& buffers) {
  if (!source || !source->reads_both_ways()) return source;
  if (choose_read_path(*source, 0, source->size(), scan_bytes).chosen != ReadPath::Pread) return source;
  // The copy is a memory source over a kept buffer, which goes back to `buffers` when the last
  // user of the copy lets go (or the read fails). The buffer only grows (its first bytes are the
  // object), so reusing it clears nothing.
  struct Held {
    explicit Held(std::shared_ptr<KeptBuffers> from) : buffers(std::move(from)), buffer(buffers->take()) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() { buffers->give(std::move(buffer)); }
    std::shared_ptr<KeptBuffers> buffers;
    std::vector<std::byte> buffer;
    std::unique_ptr<ByteSource> copy;  // views `buffer`
  };
  const auto held = std::make_shared<Held>(buffers);
  const std::size_t n = checked_size(source->size(), "object size");
  const std::span<std::byte> bytes = grown_prefix(held->buffer, n);
  source->read_at(0, bytes);
  held->copy = memory_source(bytes, source->name());
  return {held, held->copy.get()};  // shares ownership of the buffer
}

}  // namespace tessera::io
