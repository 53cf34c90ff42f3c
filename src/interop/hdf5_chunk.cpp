// Direct chunk reads (see hdf5_chunk.hpp). Deflate is undone with ISA-L (already tessera's CRC
// library), shuffle here. Whatever this path does not handle — an unallocated chunk, a failing
// library call, bytes that do not decode to the chunk size — falls back to H5Dread, so fill
// values and error messages stay libhdf5's own.
#include "hdf5_chunk.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "hdf5_handle.hpp"
#include "nd_copy.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::interop::h5 {
namespace {

// HDF5 chunks are at most 4 GiB − 1 bytes (and ISA-L counts in u32).
constexpr std::uint64_t kMaxChunkBytes = 0xffffffffu;

// Per-thread buffers, reused from chunk to chunk: the stored bytes and two decode stages.
struct Scratch {
  std::vector<std::byte> stored, stage[2];
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// HDF5's deflate filter writes one zlib stream (header, deflate data, adler32). ISA-L's inflate
// (igzip, 2–3× zlib's speed) parses the header and verifies the checksum; the stream must give
// exactly `out_size` bytes.
bool inflate_zlib(std::span<const std::byte> in, std::byte* out, std::size_t out_size) {
  thread_local const std::unique_ptr<inflate_state> state = std::make_unique<inflate_state>();
  isal_inflate_init(state.get());
  state->crc_flag = ISAL_ZLIB;
  state->next_in = reinterpret_cast<std::uint8_t*>(const_cast<std::byte*>(in.data()));
  state->avail_in = static_cast<std::uint32_t>(in.size());
  state->next_out = reinterpret_cast<std::uint8_t*>(out);
  state->avail_out = static_cast<std::uint32_t>(out_size);
  if (isal_inflate(state.get()) != ISAL_DECOMP_OK) return false;
  if (state->block_state != ISAL_BLOCK_FINISH && state->total_out == out_size) {
    // The output is full but the end of the stream (last block, checksum) is still to be read:
    // one more byte of room shows whether anything but the end follows.
    std::uint8_t extra = 0;
    state->next_out = &extra;
    state->avail_out = 1;
    if (isal_inflate(state.get()) != ISAL_DECOMP_OK) return false;
  }
  return state->block_state == ISAL_BLOCK_FINISH && state->total_out == out_size;
}

// HDF5's shuffle filter: byte b of element i was stored at b·n + i; trailing bytes stay.
void unshuffle(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_size) {
  const std::size_t n = bytes / element_size;
  for (std::size_t b = 0; b < element_size; ++b) {
    const std::byte* src = in + b * n;
    std::byte* dst = out + b;
    for (std::size_t i = 0; i < n; ++i) dst[i * element_size] = src[i];
  }
  std::memcpy(out + n * element_size, in + n * element_size, bytes - n * element_size);
}

}  // namespace

std::optional<DirectChunks> DirectChunks::plan(hid_t dataset, hid_t memory_type, std::span<const std::uint64_t> shape) {
  quiet();
  std::optional<DirectChunks> out;
  Hid dcpl(H5Dget_create_plist(dataset), H5Pclose);
  Hid file_type(H5Dget_type(dataset), H5Tclose);
  const int rank = static_cast<int>(shape.size());
  std::vector<hsize_t> chunk(shape.size());
  if (dcpl.valid() && file_type.valid() && H5Pget_layout(dcpl.get()) == H5D_CHUNKED &&
      H5Pget_chunk(dcpl.get(), rank, chunk.data()) == rank && H5Tequal(file_type.get(), memory_type) > 0) {
    DirectChunks d;
    d.shape_.assign(shape.begin(), shape.end());
    d.chunk_.assign(chunk.begin(), chunk.end());
    d.element_size_ = H5Tget_size(memory_type);
    std::optional<std::uint64_t> bytes = d.element_size_;
    for (const auto c : chunk) bytes = bytes && c > 0 ? mul_u64(*bytes, c) : std::nullopt;
    bool usable = bytes && *bytes > 0 && *bytes <= kMaxChunkBytes;
    if (usable) d.chunk_bytes_ = *bytes;
    const int filters = H5Pget_nfilters(dcpl.get());
    usable = usable && filters >= 0;
    for (int i = 0; usable && i < filters; ++i) {
      unsigned flags = 0, config = 0;
      unsigned values[8] = {};
      std::size_t count = 8;
      char name[64] = {};
      const H5Z_filter_t id =
          H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &count, values, sizeof name, name, &config);
      if (id == H5Z_FILTER_DEFLATE) d.filters_.push_back(Filter::Deflate);
      else if (id == H5Z_FILTER_SHUFFLE && (count == 0 || values[0] == d.element_size_))
        d.filters_.push_back(Filter::Shuffle);
      else usable = false;
    }
    if (usable) out = std::move(d);
  }
  H5Eclear2(H5E_DEFAULT);
  return out;
}

bool DirectChunks::is_chunk(std::span<const std::uint64_t> origin,
                            std::span<const std::uint64_t> extent) const noexcept {
  if (origin.size() != chunk_.size() || extent.size() != chunk_.size()) return false;
  for (std::size_t d = 0; d < chunk_.size(); ++d) {
    if (origin[d] % chunk_[d] != 0 || origin[d] >= shape_[d]) return false;
    if (extent[d] != std::min(chunk_[d], shape_[d] - origin[d])) return false;
  }
  return true;
}

bool DirectChunks::read(hid_t dataset, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                        std::span<std::byte> out) const {
  quiet();
  const std::vector<hsize_t> offset = to_hsize(origin);
  hsize_t stored_size = 0;
  if (H5Dget_chunk_storage_size(dataset, offset.data(), &stored_size) < 0 || stored_size == 0 ||
      stored_size > kMaxChunkBytes) {
    H5Eclear2(H5E_DEFAULT);
    return false;  // not allocated (the fill value) or not locatable: H5Dread decides
  }
  const bool whole = std::equal(extent.begin(), extent.end(), chunk_.begin());
  const std::size_t full = static_cast<std::size_t>(chunk_bytes_);
  Scratch& s = scratch();
  std::uint32_t skipped = 0;  // bit i set: filter i was not applied to this chunk
  // An unfiltered interior chunk lands straight in `out`.
  if (filters_.empty() && whole && stored_size == full) {
    if (H5Dread_chunk(dataset, H5P_DEFAULT, offset.data(), &skipped, out.data()) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    return true;
  }
  s.stored.resize(static_cast<std::size_t>(stored_size));
  if (H5Dread_chunk(dataset, H5P_DEFAULT, offset.data(), &skipped, s.stored.data()) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  // Undo the filters last to first; the last stage decodes into `out` when the chunk is whole.
  std::vector<std::size_t> active;
  for (std::size_t i = filters_.size(); i-- > 0;)
    if ((skipped & (1u << i)) == 0) active.push_back(i);
  std::span<const std::byte> current = s.stored;
  std::byte* chunk_out = nullptr;
  for (std::size_t k = 0; k < active.size(); ++k) {
    std::byte* dst;
    if (k + 1 == active.size() && whole) {
      dst = out.data();
    } else {
      std::vector<std::byte>& stage = s.stage[k % 2];
      stage.resize(full);
      dst = stage.data();
    }
    if (filters_[active[k]] == Filter::Deflate) {
      if (!inflate_zlib(current, dst, full)) return false;
    } else {
      if (current.size() != full) return false;
      unshuffle(current.data(), dst, full, element_size_);
    }
    current = {dst, full};
    chunk_out = dst;
  }
  if (current.size() != full) return false;
  if (whole) {
    if (chunk_out != out.data()) std::memcpy(out.data(), current.data(), full);
    return true;
  }
  // An edge chunk is stored padded to the full chunk shape: copy the part inside the array.
  const std::vector<std::uint64_t> zero(chunk_.size(), 0);
  detail::copy_box(current.data(), chunk_, zero, out.data(), extent, zero, extent, element_size_);
  return true;
}

std::optional<DirectBoxReader> DirectBoxReader::plan(hid_t dataset, hid_t file_type,
                                                     std::span<const std::uint64_t> shape) {
  if (shape.empty() || shape.size() > 2) return std::nullopt;
  const auto element = classify(file_type);
  if (!element || element->stored == DType::F16 || element->stored == DType::Bool) return std::nullopt;
  auto chunks = DirectChunks::plan(dataset, element->memory.get(), shape);
  if (!chunks) return std::nullopt;
  DirectBoxReader r;
  r.chunks_ = std::move(*chunks);
  r.element_ = element->stored;
  r.shape_.assign(shape.begin(), shape.end());
  return r;
}

bool DirectBoxReader::read(hid_t dataset, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                           std::span<double> out) {
  const std::size_t rank = shape_.size();
  if (origin.size() != rank || extent.size() != rank) return false;
  const auto& chunk = chunks_.chunk();
  // Box and chunk as [rows, columns] (a 1-D dataset is one column).
  const std::uint64_t box_rows = extent[0], box_cols = rank == 2 ? extent[1] : 1;
  const std::uint64_t row0 = origin[0], col0 = rank == 2 ? origin[1] : 0;
  const std::uint64_t chunk_rows = chunk[0], chunk_cols = rank == 2 ? chunk[1] : 1;
  const std::uint64_t shape_cols = rank == 2 ? shape_[1] : 1;
  if (box_rows == 0 || box_cols == 0) return true;
  for (std::uint64_t cr = row0 / chunk_rows * chunk_rows; cr < row0 + box_rows; cr += chunk_rows) {
    for (std::uint64_t cc = col0 / chunk_cols * chunk_cols; cc < col0 + box_cols; cc += chunk_cols) {
      const std::uint64_t c_origin[2] = {cr, cc};
      const std::uint64_t c_extent[2] = {std::min(chunk_rows, shape_[0] - cr), std::min(chunk_cols, shape_cols - cc)};
      const std::span<const std::uint64_t> co(c_origin, rank), ce(c_extent, rank);
      if (!std::equal(co.begin(), co.end(), buffer_origin_.begin(), buffer_origin_.end())) {
        buffer_origin_.clear();
        buffer_.resize(static_cast<std::size_t>(c_extent[0] * c_extent[1]) * dtype_size(element_));
        if (!chunks_.read(dataset, co, ce, buffer_)) return false;
        buffer_origin_.assign(co.begin(), co.end());
      }
      // The part of the chunk inside the box, converted row by row.
      const std::uint64_t r_lo = std::max(cr, row0), r_hi = std::min(cr + c_extent[0], row0 + box_rows);
      const std::uint64_t c_lo = std::max(cc, col0), c_hi = std::min(cc + c_extent[1], col0 + box_cols);
      visit_dtype(element_, [&](auto zero) {
        using T = decltype(zero);
        const T* in = reinterpret_cast<const T*>(buffer_.data());
        for (std::uint64_t r = r_lo; r < r_hi; ++r) {
          const T* from = in + (r - cr) * c_extent[1] + (c_lo - cc);
          double* to = out.data() + (r - row0) * box_cols + (c_lo - col0);
          for (std::uint64_t c = 0; c < c_hi - c_lo; ++c) to[c] = static_cast<double>(from[c]);
        }
      });
    }
  }
  return true;
}

}  // namespace tessera::interop::h5
