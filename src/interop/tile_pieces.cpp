// Cutting a dataset's tiles into pieces and units (see tile_pieces.hpp).
#include "tile_pieces.hpp"

#include <algorithm>

namespace tessera::interop::detail {

TilePieces::TilePieces(const SourceArray& array, const std::vector<std::uint64_t>& chunk_shape,
                       std::size_t element_bytes, std::size_t target_element_bytes, std::uint64_t unit_bytes,
                       std::uint64_t piece_bytes)
    : nd_(array.shape.size()),
      shape_(array.shape),
      chunk_(chunk_shape),
      source_chunk_(array.chunk_shape),
      target_bytes_(target_element_bytes),
      unit_bytes_(std::max<std::uint64_t>(1, unit_bytes)),
      piece_elements_(std::max<std::uint64_t>(1, piece_bytes / std::max<std::size_t>(1, element_bytes))) {
  for (std::size_t d = 0; d < nd_; ++d) grid_.push_back((shape_[d] + chunk_[d] - 1) / chunk_[d]);
  // A tile is a source chunk when the chunk shape is the source's, capped at the extent.
  whole_tiles_ = source_chunk_.size() == nd_;
  for (std::size_t d = 0; whole_tiles_ && d < nd_; ++d)
    whole_tiles_ = chunk_[d] == std::max<std::uint64_t>(1, std::min(source_chunk_[d], shape_[d]));
  start_tile();
}

void TilePieces::start_tile() {
  for (std::size_t d = 0; d < nd_; ++d) {
    origin_[d] = tile_[d] * chunk_[d];
    extent_[d] = std::min(chunk_[d], shape_[d] - origin_[d]);
    at_[d] = 0;
  }
  if (whole_tiles_) {
    axis_ = 0;
    step_ = extent_[0];
    return;
  }
  // The first axis whose trailing extent fits in a piece; along it, as many indices as fit.
  std::uint64_t inner = 1;  // elements per index of axis_
  axis_ = nd_ - 1;
  while (axis_ > 0 && inner * extent_[axis_] <= piece_elements_) inner *= extent_[axis_--];
  if (inner * extent_[axis_] <= piece_elements_) {
    step_ = extent_[axis_];
  } else {
    step_ = std::max<std::uint64_t>(1, piece_elements_ / inner);
    // Whole source chunks along that axis, so no chunk is decoded for two pieces.
    if (source_chunk_.size() == nd_ && source_chunk_[axis_] > 0 && source_chunk_[axis_] <= step_)
      step_ = step_ / source_chunk_[axis_] * source_chunk_[axis_];
  }
}

Piece TilePieces::current() const {
  Piece p;
  p.elements = 1;
  bool last = true;
  for (std::size_t d = 0; d < nd_; ++d) {
    p.origin[d] = origin_[d] + at_[d];
    if (d < axis_) {
      p.extent[d] = 1;
      last = last && at_[d] + 1 == extent_[d];
    } else if (d == axis_) {
      p.extent[d] = std::min(step_, extent_[d] - at_[d]);
      last = last && at_[d] + p.extent[d] == extent_[d];
    } else {
      p.extent[d] = extent_[d];
    }
    p.elements *= p.extent[d];
  }
  p.ends_tile = last;
  return p;
}

void TilePieces::advance() {
  at_[axis_] += step_;
  if (at_[axis_] < extent_[axis_]) return;
  at_[axis_] = 0;
  for (std::size_t d = axis_; d-- > 0;) {
    if (++at_[d] < extent_[d]) return;
    at_[d] = 0;
  }
  // The tile is done: the next one in grid row-major order.
  for (std::size_t d = nd_; d-- > 0;) {
    if (++tile_[d] < grid_[d]) {
      start_tile();
      return;
    }
    tile_[d] = 0;
  }
  done_ = true;
}

bool TilePieces::next(Unit& unit) {
  unit.pieces.clear();
  unit.bytes = 0;
  unit.tiles_completed = 0;
  while (!done_) {
    Piece p = current();
    const std::uint64_t bytes = p.elements * target_bytes_;
    if (!unit.pieces.empty() && unit.bytes + bytes > unit_bytes_) break;
    p.offset = unit.bytes;
    unit.bytes += bytes;
    unit.tiles_completed += p.ends_tile ? 1 : 0;
    unit.pieces.push_back(p);
    advance();
  }
  return !unit.pieces.empty();
}

}  // namespace tessera::interop::detail
