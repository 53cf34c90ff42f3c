// A tile of a cells::Dataset kept decoded (spec deltacells.md §8.4), in one of two forms: int32
// `indices` and `values`, or (narrow, see OpenOptions::narrow_tiles) uint16 `genes` and `counts`
// plus the counts above 65535.
#pragma once

#include <cstdint>
#include <vector>

#include "gene_index.hpp"
#include "tessera/cells/tile.hpp"

namespace tessera::cells::detail {

// Every row of a tile restricted to one list of genes (a batch's `genes`, asked for again), in
// CSR form: a row's nonzeros numbered as output columns, ascending. Batches that keep asking
// for the same genes (a model's gene panel) then read each requested row's few nonzeros
// directly, instead of each batch walking the genes' bitmaps over the whole tile.
struct GeneProjection {
  struct Entry {  // a column and its count side by side: a row's few entries share a cache line
    std::int32_t column, count;
  };
  std::vector<std::uint32_t> genes;   // the stored gene of each output column (KeptGenes::columns)
  std::vector<std::uint32_t> indptr;  // rows + 1 (empty: not built)
  std::vector<Entry> entries;
  bool built() const noexcept { return !indptr.empty(); }
  // Whether this is the projection onto `columns` (KeptGenes::columns).
  bool onto(const std::vector<std::uint32_t>& columns) const noexcept { return built() && genes == columns; }
  std::uint64_t bytes() const noexcept {
    return (genes.capacity() + indptr.capacity()) * sizeof(std::uint32_t) + entries.capacity() * sizeof(Entry);
  }
  void clear() noexcept {
    genes = {};
    indptr = {};
    entries = {};
  }
};

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
  // Built from by_gene when a list of genes is asked for twice in a row (Dataset::Impl::projection_of).
  GeneProjection projection;
  // The count at position j (in the narrow form, the real one when it was above 65535).
  std::int32_t count_at(std::uint64_t j) const;
};

}  // namespace tessera::cells::detail
