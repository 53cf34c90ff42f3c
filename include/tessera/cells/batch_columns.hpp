// Gene subsets and reorderings of a decoded batch: scipy's `x[:, positions]` followed by
// `sort_indices()`, done in the library by a counting sort per block of rows.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/cells/dataset.hpp"

namespace tessera::cells {

// The batch's stored columns `positions` (repeats allowed) as the columns 0, 1, … of a new batch
// with `positions.size()` genes, each row's indices ascending. A counting sort per block of 256
// rows: O(nnz + positions + blocks × positions), cache-resident.
// UsageError naming the first position outside [0, n_genes).
// The batch is taken by value: when no column is asked for twice its buffers hold the result
// (move a batch in to avoid a copy).
[[nodiscard]] SparseBatch select_columns(SparseBatch batch, std::span<const std::int64_t> positions);

}  // namespace tessera::cells
