#include "tessera/tet/npy_export.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "tessera/codec/npy.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/tet/read_ahead.hpp"

namespace tessera::tet {

std::uint64_t write_npy(const TetFile& file, const Dataset& ds, const Box& box, io::ByteSink& sink,
                        const NpyExportOptions& options) {
  const std::size_t nd = ds.ndim();
  std::vector<std::uint64_t> out_shape(nd);
  std::uint64_t row_bytes = ds.element_size();  // bytes of one selected index along axis 0
  for (std::size_t d = 0; d < nd; ++d) {
    out_shape[d] = box[d].count();
    if (d > 0) row_bytes = checked_mul(row_bytes, out_shape[d], "selection size");
  }
  const std::string header = codec::npy_header(ds.dtype, out_shape);
  sink.write(std::as_bytes(std::span(header)));
  std::uint64_t written = header.size();

  // Slabs follow chunk rows along axis 0 so each chunk is decoded once when a chunk row's
  // output fits the window; larger chunk rows are split (their chunks then decode once per part).
  const std::uint64_t rows_per_window =
      std::max<std::uint64_t>(1, options.window_bytes / std::max<std::uint64_t>(row_bytes, 1));
  const AxisRange axis0 = box[0];
  const std::uint64_t cs0 = ds.chunk_shape[0];
  std::vector<std::byte> buffer;
  const ReadOptions read_options{options.threads, options.verify_checksums};
  // A remote file's chunks are fetched ahead, chunk row after chunk row (each slab alone may
  // touch a single chunk, too few for read_box to read ahead on its own).
  const std::vector<std::uint64_t> rows = touched_chunks(axis0, cs0);
  std::shared_ptr<ChunkReadAhead> ahead;
  std::uint64_t tiles_per_row = 1;
  if (ChunkReadAhead::fetches(file)) {
    std::vector<std::vector<std::uint64_t>> touched(nd);
    for (std::size_t d = 1; d < nd; ++d) {
      touched[d] = touched_chunks(box[d], ds.chunk_shape[d]);
      tiles_per_row *= touched[d].size();
    }
    std::vector<std::uint32_t> entries;
    std::vector<std::uint64_t> coords(nd);
    for (const std::uint64_t c : rows) {
      coords[0] = c;
      for (std::uint64_t t = 0; t < tiles_per_row; ++t) {
        std::uint64_t rest = t;
        for (std::size_t d = nd; d-- > 1;) {
          coords[d] = touched[d][rest % touched[d].size()];
          rest /= touched[d].size();
        }
        entries.push_back(ds.entry_of_chunk[ds.chunk_ordinal(coords)]);
      }
    }
    ahead = ChunkReadAhead::for_entries(file, entries);
  }
  std::uint64_t row_index = 0;
  for (std::uint64_t c : rows) {
    std::vector<ChunkReadAhead::Hold> holds;  // the row's chunks, until its slabs are read
    if (ahead)
      for (std::uint64_t t = 0; t < tiles_per_row; ++t) holds.push_back(ahead->before(row_index * tiles_per_row + t));
    ++row_index;
    // Selected indices of axis 0 inside chunk row c.
    const std::uint64_t lo = std::max(c * cs0, axis0.start);
    std::uint64_t first = axis0.start + (lo - axis0.start + axis0.step - 1) / axis0.step * axis0.step;
    const std::uint64_t hi = std::min((c + 1) * cs0, axis0.stop);
    while (first < hi) {
      const std::uint64_t available = (hi - first + axis0.step - 1) / axis0.step;
      const std::uint64_t rows = std::min(available, rows_per_window);
      Box slab = box;
      slab[0] = {first, std::min(hi, first + (rows - 1) * axis0.step + 1), axis0.step};
      buffer.resize(checked_size(checked_mul(rows, row_bytes, "slab size")));
      file.read_box(ds, slab, buffer, read_options);
      sink.write(buffer);
      written += buffer.size();
      first += rows * axis0.step;
    }
  }
  return written;
}

}  // namespace tessera::tet
