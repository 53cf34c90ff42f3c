// Writing one deltacells tile (spec deltacells.md §4): chunk boundaries (§4.4), gaps and values
// with the v2 exception policy (§4.2, §4.3), single-shot zstd frames (§4.5) and the layout
// (§4.6). For version 1 the output is byte-identical to the Python reference's at the same
// libzstd version and level; for either version it is identical for every thread count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cells/tile_header.hpp"

namespace tessera::cells {

// libzstd's level range (ZSTD_minCLevel() .. ZSTD_maxCLevel() of libzstd 1.5); 0 means its default.
inline constexpr int kMinZstdLevel = -131072;
inline constexpr int kMaxZstdLevel = 22;

// A tile's cells in canonical CSR form: per cell strictly increasing stored gene indices below
// `n_genes` and counts >= 1 (canonicalize() in csr_source.hpp produces it from any input).
struct TileCsr {
  std::span<const std::int64_t> indptr;    // n_cells + 1 entries, indptr[0] = 0, non-decreasing
  std::span<const std::uint32_t> indices;  // indptr.back() entries
  std::span<const std::uint32_t> values;   // indptr.back() entries
  std::uint64_t n_genes = 0;
};

struct TileEncodeOptions {
  std::uint32_t version = kVersion2;
  int level = 19;              // zstd level, kMinZstdLevel..kMaxZstdLevel
  std::uint32_t n_chunks = 8;  // chunks requested (>= 1); fewer are produced when cuts collapse
  unsigned threads = 1;        // frames compressed in parallel (0 = all available)
  std::string name = "tile";   // object named in errors, e.g. tiles/tile_000003.dct
};

// §4.4: the half-open cell ranges of the chunks for `indptr` (n_cells + 1 entries) and
// `n_chunks` requested: cuts where the cumulative nonzeros first reach i * (nnz / k) in double
// precision, duplicates collapsed. No chunks for zero cells.
std::vector<std::pair<std::uint64_t, std::uint64_t>> chunk_bounds(std::span<const std::int64_t> indptr,
                                                                  std::uint64_t n_chunks);

// Encodes one tile. Throws UsageError for input that is not canonical CSR or bad options,
// LimitError for n_genes or a count beyond the version's range (v1: suggests version 2) and for
// v2 tiles with more than max(1024, nnz / 200) exceptions of one kind.
std::vector<std::byte> encode_tile(const TileCsr& csr, const TileEncodeOptions& options = {});

}  // namespace tessera::cells
