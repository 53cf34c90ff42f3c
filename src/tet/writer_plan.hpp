// Internal to the writer rooms (writer.cpp, writer_plan.cpp): what TetWriter knows about each
// catalog entry, and cutting a chunk-row slab into clipped tiles (spec tet.md §1.5).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tessera/tet/format.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet::detail {

struct DatasetPlan {
  DatasetRecord record;  // as written to the directory
  Dataset geometry;      // dtype, shape, chunk_shape and grid (entry_of_chunk unused)
  Codec codec = Codec::Raw;
  int zstd_level = 3;
  std::uint64_t row_tiles = 1;     // tiles per chunk row: product of grid[1..]
  std::uint64_t row_elements = 1;  // elements per index along axis 0: product of shape[1..]
  std::uint64_t rows_written = 0;
  // Progress of raw tiles given through TetWriter::append_raw_tiles: the next tile in index order
  // and the bytes of it already written (0 at a tile boundary).
  std::uint64_t tiles_written = 0;
  std::uint64_t tile_bytes_written = 0;
  std::uint64_t bytes_written = 0;  // logical (decoded) bytes given so far, all calls together

  std::uint64_t rows() const noexcept { return geometry.grid[0]; }
  bool complete() const noexcept { return rows_written == rows(); }
  // Indices along axis 0 covered by chunk row `row` (the last row may be clipped).
  std::uint64_t row_extent(std::uint64_t row) const noexcept;
  std::uint64_t row_bytes(std::uint64_t row) const noexcept {
    return row_extent(row) * row_elements * geometry.element_size();
  }
};

// One tile of a chunk row: grid coordinates, first element inside the row's slab (axis 0 counted
// from the row's first index), clipped extent, and byte size (§1.5).
struct RowTile {
  std::array<std::uint64_t, kMaxRank> coords{}, origin{}, extent{};
  std::uint64_t bytes = 0;
};
// Tile `t` (0 ≤ t < row_tiles, grid row-major over axes 1..) of chunk row `row`.
RowTile row_tile(const DatasetPlan& plan, std::uint64_t row, std::uint64_t t);

// The plan of a record that passed validate_dataset_spec (or TetFile::open).
DatasetPlan make_plan(const DatasetRecord& record, DType dtype, std::uint32_t id);

// Copies one tile out of a chunk-row slab (shape `slab_shape`) into `out`, row-major over the
// tile's clipped `extent`; `origin` is the tile's first element inside the slab.
void gather_tile(const std::byte* slab, std::span<const std::uint64_t> slab_shape,
                 std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent, std::size_t element_size,
                 std::byte* out);

// `dataset "name": ` — how validation messages name a dataset that has no id yet.
std::string spec_prefix(std::string_view name);

}  // namespace tessera::tet::detail
