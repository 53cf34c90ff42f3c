// Writes a strided selection of one `.tet` dataset as a NumPy .npy file (spec tet.md §6.8):
// values exact in the dataset's dtype (f16 as numpy float16), C order. The output is produced in
// slabs along axis 0 so memory stays bounded by `window_bytes` plus one decoded chunk per worker.
#pragma once

#include <cstdint>

#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

struct NpyExportOptions {
  std::uint64_t window_bytes = std::uint64_t{64} << 20;  // largest slab held in memory
  unsigned threads = 0;                                  // 0 = all available
  bool verify_checksums = false;                         // ReadOptions::verify_checksums
};

// Writes header + data to `sink` (the caller commits it). Returns the number of bytes written.
std::uint64_t write_npy(const TetFile& file, const Dataset& dataset, const Box& box, io::ByteSink& sink,
                        const NpyExportOptions& options = {});

}  // namespace tessera::tet
