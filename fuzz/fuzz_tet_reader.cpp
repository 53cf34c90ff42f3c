// Fuzz target for the `.tet` reader: open (structural + semantic pass), decode every chunk, read
// every dataset's full box and one strided box, and check that the strided box agrees with the
// full one. A clean tessera::Error is an accepted outcome; any other exception, a crash or a
// sanitizer report is a finding.
//
// The corruption sweep (tests/tet/corruption_test.cpp) includes this file and drives
// `exercise_tet_reader` directly, so the fuzzer and the sweep exercise exactly the same paths.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::fuzzing {

// Caps that keep one input from allocating without bound: a few hundred bytes of zstd can
// legitimately declare a tile of gigabytes, and a valid header can declare a huge dataset.
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{4} << 20;
inline constexpr std::uint64_t kMaxDatasetBytes = std::uint64_t{16} << 20;

// Thrown when the reader returns data that contradicts itself (a reader bug, not bad input).
struct ReaderInconsistency {
  const char* what;
};

// A box touching every axis at a stride, starting away from the origin so it crosses tile edges
// at varying tile-local offsets.
inline tet::Box strided_box(const tet::Dataset& ds) {
  tet::Box box(ds.ndim());
  for (std::size_t d = 0; d < ds.ndim(); ++d) box[d] = {ds.shape[d] / 3, ds.shape[d], 2 + d % 2};
  return box;
}

// Checks that `strided` holds the elements of `full` selected by `box`.
inline void check_strided(const tet::Dataset& ds, const tet::Box& box, std::span<const std::byte> full,
                          std::span<const std::byte> strided) {
  const std::size_t nd = ds.ndim();
  const std::size_t es = ds.element_size();
  std::vector<std::uint64_t> idx(nd, 0);
  const std::uint64_t n = strided.size() / es;
  for (std::uint64_t k = 0; k < n; ++k) {
    std::uint64_t offset = 0;
    for (std::size_t d = 0; d < nd; ++d) offset = offset * ds.shape[d] + box[d].start + idx[d] * box[d].step;
    if (std::memcmp(strided.data() + k * es, full.data() + offset * es, es) != 0)
      throw ReaderInconsistency{"strided box differs from the full box"};
    for (std::size_t d = nd; d-- > 0;) {
      if (++idx[d] < box[d].count()) break;
      idx[d] = 0;
    }
  }
}

// Returns true when the input opened; throws whatever the reader throws.
inline bool exercise_tet_reader(std::span<const std::byte> bytes) {
  const auto file = tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(bytes, "<fuzz>")));
  const tet::ReadOptions serial{.threads = 1};  // deterministic and fast under libFuzzer
  std::vector<std::byte> buffer, strided;
  for (const tet::Dataset& ds : file.datasets()) {
    if (ds.logical_bytes > kMaxDatasetBytes) continue;
    for (const std::uint32_t entry : ds.entry_of_chunk) {
      const std::uint64_t len = file.entry(entry).raw_byte_len;
      if (len > kMaxChunkBytes) continue;
      buffer.resize(len);
      file.decode_chunk(entry, buffer);
    }
    buffer.resize(ds.logical_bytes);
    file.read_box(ds, ds.full_box(), buffer, serial);
    const tet::Box box = strided_box(ds);
    std::uint64_t count = 1;
    for (const auto& r : box) count *= r.count();
    strided.resize(count * ds.element_size());
    file.read_box(ds, box, strided, serial);
    check_strided(ds, box, buffer, strided);
  }
  return true;
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    tessera::fuzzing::exercise_tet_reader({reinterpret_cast<const std::byte*>(data), size});
  } catch (const tessera::Error&) {
    // Malformed input rejected cleanly: the expected outcome for most inputs.
  }
  return 0;
}
#endif
