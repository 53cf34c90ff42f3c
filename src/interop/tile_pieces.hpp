// Internal to interop: how the converter cuts one dataset's output into bounded reads. A `.tet`
// dataset's raw payload is its clipped tiles in index order (spec tet.md §1.5–§1.7), each tile's
// elements row-major, so the payload is a sequence of source boxes ("pieces") whose bytes,
// concatenated, are exactly that stream. TetWriter::append_raw_tiles takes it in parts cut
// anywhere.
//
// * A tile that is a source chunk (chunked sources without CF packing) is one piece: the
//   source decodes a chunk whole anyway, and the HDF5 room reads it straight from the chunk.
// * A tile that is not (the whole-array tile of an unchunked source or of a CF-packed variable)
//   is cut into pieces of at most `piece_bytes`: slabs along the first axis whose trailing extent
//   fits, aligned to whole source chunks along that axis when the source is chunked.
// * Pieces are grouped into units of at most `unit_bytes` (at least one piece): the converter
//   reads a unit's pieces in parallel into one buffer, then hands the buffer to the writer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/interop/source.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::interop::detail {

struct Piece {
  std::array<std::uint64_t, tet::kMaxRank> origin{}, extent{};  // the box in array coordinates
  std::uint64_t elements = 0;
  std::uint64_t offset = 0;  // where its converted bytes start in the unit's buffer
  bool ends_tile = false;    // the last piece of its tile
};

struct Unit {
  std::vector<Piece> pieces;
  std::uint64_t bytes = 0;  // converted bytes of all pieces
  std::uint64_t tiles_completed = 0;
};

class TilePieces {
 public:
  // `chunk_shape` is the `.tet` chunk shape chosen for `array`; `element_bytes` the larger of the
  // stored and the `.tet` element sizes (what one element costs in the converter's buffers).
  TilePieces(const SourceArray& array, const std::vector<std::uint64_t>& chunk_shape, std::size_t element_bytes,
             std::size_t target_element_bytes, std::uint64_t unit_bytes, std::uint64_t piece_bytes);

  // Fills `unit` with the next pieces in payload order; false once the dataset is exhausted.
  bool next(Unit& unit);

 private:
  // Starts the pieces of tile `tile_` (or ends the stream).
  void start_tile();
  // The current piece, before advancing.
  Piece current() const;
  void advance();

  std::size_t nd_;
  std::vector<std::uint64_t> shape_, chunk_, grid_, source_chunk_;
  std::size_t target_bytes_;
  std::uint64_t unit_bytes_, piece_elements_;
  bool whole_tiles_;

  bool done_ = false;
  std::array<std::uint64_t, tet::kMaxRank> tile_{};               // grid coordinates of the current tile
  std::array<std::uint64_t, tet::kMaxRank> origin_{}, extent_{};  // its box
  // Cutting the current tile: axes before `axis_` step one index at a time, `axis_` in steps of
  // `step_`, later axes are whole. `at_` is the current piece's offset inside the tile.
  std::size_t axis_ = 0;
  std::uint64_t step_ = 1;
  std::array<std::uint64_t, tet::kMaxRank> at_{};
};

}  // namespace tessera::interop::detail
