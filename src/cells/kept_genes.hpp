// get_batch with genes (Dataset::get_batch(cells, genes, …)), one tile at a time: the kept
// nonzeros of a tile's requested rows, numbered as output columns (the positions in `genes`)
// and ascending in each row, are appended to a stage in tile order; the batch request copies
// them into request order at the end. A tile with a gene index (gene_index.hpp) is read column
// by column; any other is read row by row, scanning each row's genes against a mask.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "decoded_tile.hpp"
#include "gene_index.hpp"

namespace tessera::cells::detail {

// The genes asked for, in the forms both readings need.
struct KeptGenes {
  std::vector<std::uint32_t> columns;       // per output column, its stored gene
  std::vector<std::uint8_t> keep;           // per stored gene: asked for
  std::vector<std::uint32_t> target_first;  // per stored gene g: its output columns are
  std::vector<std::uint32_t> targets;       //   targets[target_first[g] .. target_first[g + 1]), ascending
  bool ascending = true;                    // columns strictly increasing: rows need no sort
  // `genes` are stored columns in [0, n_genes), already checked.
  void assign(std::span<const std::int64_t> genes, std::uint64_t n_genes);
};

// A requested cell of the tile: its position in the request and its row in the tile.
struct TileRow {
  std::size_t request = 0;
  std::uint64_t row = 0;
};

// Kept nonzeros of the tiles read so far, and the scratch of the two readings (reused across
// calls, so a steady stream of batches allocates nothing).
struct KeptStage {
  std::vector<std::int32_t> columns, counts;
  std::vector<std::uint64_t> first;  // per request position: its first staged nonzero
  std::vector<std::uint64_t> kept_positions, kept_end;
  std::vector<std::pair<std::int32_t, std::int32_t>> sort_scratch;
  std::vector<std::uint64_t> want, row_kept, row_next;
  std::vector<std::uint32_t> projection_next;
  MatchBuffer matches;
  void reset(std::size_t requests) {
    columns.clear();
    counts.clear();
    first.resize(requests);
  }
};

// Stages the kept nonzeros of `rows` of decoded tile `d`, writing each request's kept length to
// lengths[request + 1]. Rows are scanned gene by gene against kept.keep.
void stage_scanned(const DecodedTile& d, std::span<const TileRow> rows, const KeptGenes& kept, KeptStage& stage,
                   std::span<std::int64_t> lengths);
// The same through the tile's gene index: only the kept genes' columns are read.
void stage_indexed(const GeneIndex& index, std::span<const TileRow> rows, const KeptGenes& kept, KeptStage& stage,
                   std::span<std::int64_t> lengths);
// Builds `out`, the projection of every row of the indexed tile onto kept.columns, unless it
// would take more than `max_bytes` (then `out` is left cleared and false is returned).
bool project(const GeneIndex& index, const KeptGenes& kept, KeptStage& stage, std::uint64_t max_bytes,
             GeneProjection& out);
// The same as stage_indexed, read from a projection onto kept.columns.
void stage_projected(const GeneProjection& projection, std::span<const TileRow> rows, KeptStage& stage,
                     std::span<std::int64_t> lengths);

}  // namespace tessera::cells::detail
