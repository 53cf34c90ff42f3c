// How streaming scans reach the page cache: through a memory map (the bytes are used where they
// lie; each page is faulted into the process once) or by copying them out with pread into
// reused, cache-sized buffers. Which is faster depends on the machine: on some virtual machines
// a fault on a page-cache page costs several times the copy, on others the kernel maps large
// folios and the map wins (docs/performance.md, "Which read path a scan takes").
//
// `TESSERA_READ_PATH=auto|mmap|pread` forces a path for diagnosis; `auto` (the default) measures
// the machine once per process on the first large scan (choose_read_path). The query engine's
// folds measure their own raw pieces instead (tet_query/query_plan.cpp), since a fold's loads cost
// differently from the plain reads measured here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tessera/core/kept.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::io {

enum class ReadPath { Auto, Mmap, Pread };

[[nodiscard]] std::string_view read_path_name(ReadPath path) noexcept;

// The path TESSERA_READ_PATH asks for (Auto when unset or empty). Throws UsageError naming the
// variable and the accepted values on anything else.
[[nodiscard]] ReadPath configured_read_path();

// What a probe measured: nanoseconds to sum the same number of bytes each way.
struct ReadPathProbe {
  ReadPath chosen = ReadPath::Mmap;
  std::uint64_t pread_ns = 0, mmap_ns = 0, bytes = 0;
  bool measured = false;  // false: forced by TESSERA_READ_PATH, or the scan is too small to matter
};

// The path a scan of `scan_bytes` bytes of `source` should take. A forced path is returned as is.
// For Auto, a source that cannot view (not mapped) is read with Pread; one that views but cannot
// also pread (memory, a mapping without its descriptor: ByteSource::reads_both_ways) keeps the
// view; a scan below
// kProbeMinScanBytes keeps the map; otherwise the first call in the process times both ways over
// [offset, offset + len) of `source` (at most 16 MiB of it; two passes so both read warm pages)
// and every later call returns that result.
inline constexpr std::uint64_t kProbeMinScanBytes = std::uint64_t{64} << 20;
[[nodiscard]] ReadPathProbe choose_read_path(const ByteSource& source, std::uint64_t offset, std::uint64_t len,
                                             std::uint64_t scan_bytes);

// An object a reader parses in place (a deltacells tile), as a scan of `scan_bytes` should reach
// it: `source` itself when the map is the cheaper path (or nothing can be chosen), else its bytes
// copied with pread into a buffer taken from `buffers` and given back when the returned source is
// destroyed (the source shares `buffers`, so either may go first). A stream of objects then faults
// no fresh memory in once the buffers have grown.
using KeptBuffers = Kept<std::vector<std::byte>>;
[[nodiscard]] std::shared_ptr<const ByteSource> read_whole_by_path(std::shared_ptr<const ByteSource> source,
                                                                   std::uint64_t scan_bytes,
                                                                   const std::shared_ptr<KeptBuffers>& buffers);

}  // namespace tessera::io
