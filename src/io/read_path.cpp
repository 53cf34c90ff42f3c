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

// A whole object copied into a kept buffer, which goes back when the source is destroyed. The
// buffer only grows (its first `size_` bytes are the object), so reusing it clears nothing.
class KeptCopySource final : public ByteSource {
 public:
  KeptCopySource(const ByteSource& from, std::shared_ptr<KeptBuffers> buffers)
      : buffers_(std::move(buffers)), buffer_(buffers_->take()), size_(from.size()), name_(from.name()) {
    try {
      const std::size_t n = checked_size(size_, "object size");
      if (buffer_.size() < n) buffer_.resize(n);
      from.read_at(0, std::span<std::byte>(buffer_.data(), n));
    } catch (...) {
      buffers_->give(std::move(buffer_));
      throw;
    }
  }
  ~KeptCopySource() override { buffers_->give(std::move(buffer_)); }
  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    check_range(*this, offset, dst.size());
    if (!dst.empty()) std::memcpy(dst.data(), buffer_.data() + offset, dst.size());
  }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override {
    check_range(*this, offset, len);
    return buffer_.data() + offset;
  }

 private:
  std::shared_ptr<KeptBuffers> buffers_;
  std::vector<std::byte> buffer_;
  std::uint64_t size_;
  std::string name_;
};

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
  return std::make_shared<KeptCopySource>(*source, buffers);
}

}  // namespace tessera::io
