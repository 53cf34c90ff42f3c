// A tile of a cells::Dataset kept decoded (spec deltacells.md §8.4), in one of two forms: int32
// `indices` and `values`, or (narrow, see OpenOptions::narrow_tiles) uint16 `genes` and `counts`
// plus the counts above 65535.
#pragma once

#include <cstdint>
#include <vector>

#include "gene_index.hpp"
#include "tessera/cells/tile.hpp"

namespace tessera::cells::detail {

struct DecodedTile {
  std::uint64_t tile = 0;
  bool narrow = false;
  bool hot = false;                  // kept for reuse under decoded_cache_bytes (see OpenOptions::max_cached_tiles)
  std::uint64_t first_request = 0;   // Dataset::Impl::requests when it was decoded
  std::vector<std::int64_t> indptr;  // the tile's, so a batch of decoded tiles needs no fetch
  std::vector<std::int32_t> indices, values;
  std::vector<std::uint16_t> genes, counts;
  std::vector<WideCount> wide_counts;
  // Built on demand for hot tiles that batches of a few genes read (Dataset::Impl::gene_index_of).
  GeneIndex by_gene;
  // The count at position j (in the narrow form, the real one when it was above 65535).
  std::int32_t count_at(std::uint64_t j) const;
};

}  // namespace tessera::cells::detail
