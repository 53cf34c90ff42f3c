// Direct chunk reads for the HDF5 room (private to src/interop/hdf5*.cpp). When the converter asks
// for exactly one chunk of a chunked dataset whose filters are only deflate and/or shuffle and
// whose file type is already the memory type, the chunk's stored bytes are fetched with
// H5Dread_chunk and decoded here (inflate with ISA-L, unshuffle) outside libhdf5. libhdf5 as Debian
// builds it runs every call under one global lock, filters included, so this is what lets several
// converter threads inflate chunks at the same time; the bytes are the ones H5Dread would give.
#pragma once

#include "hdf5_api.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tessera/core/dtype.hpp"

namespace tessera::interop::h5 {

class DirectChunks {
 public:
  // The plan for `dataset` read as `memory_type`, or nullopt when it does not qualify (not
  // chunked, another filter, a type conversion, a shape that does not fit). Never throws.
  static std::optional<DirectChunks> plan(hid_t dataset, hid_t memory_type, std::span<const std::uint64_t> shape);

  // Whether [origin, origin + extent) is one chunk, clipped to the array at the edges.
  bool is_chunk(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent) const noexcept;

  // Reads that chunk into `out` (the clipped box, C order, exactly its bytes). Returns false when
  // it cannot: the chunk is not allocated (H5Dread supplies the fill value), a library call fails
  // or the bytes do not decode to the chunk size (H5Dread reports the damage in its own words);
  // `out` may have been written to then. Never throws. Safe to call from several threads.
  bool read(hid_t dataset, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::byte> out) const;

  const std::vector<std::uint64_t>& chunk() const noexcept { return chunk_; }

 private:
  enum class Filter { Deflate, Shuffle };
  std::vector<std::uint64_t> shape_, chunk_;
  std::size_t element_size_ = 0;
  std::uint64_t chunk_bytes_ = 0;  // an unclipped chunk, decoded
  std::vector<Filter> filters_;    // in pipeline (write) order; decoding runs them backwards
};

// Boxes of a 1-D or 2-D numeric dataset read as double through DirectChunks: each chunk the box
// meets is decoded whole (ISA-L, outside libhdf5's lock) and the part inside the box converted.
// The last chunk decoded is kept, so consecutive slabs that share a chunk (a granule read in
// blocks of rows that are not multiples of its chunk rows) decode it once. One reader per thread.
class DirectBoxReader {
 public:
  // nullopt when the dataset does not qualify: not chunked with deflate and/or shuffle only, a
  // rank other than 1 or 2, or elements other than integers and 32/64-bit floats in the
  // machine's byte order. Never throws.
  static std::optional<DirectBoxReader> plan(hid_t dataset, hid_t file_type, std::span<const std::uint64_t> shape);

  // The box [origin, origin + extent) (inside the dataset) as double into `out` (exactly its
  // element count). False when a chunk cannot be read directly (DirectChunks::read): the caller
  // then reads the box with H5Dread, which supplies fill values and reports damage in its words.
  bool read(hid_t dataset, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<double> out);

 private:
  DirectChunks chunks_;
  DType element_ = DType::F64;
  std::vector<std::uint64_t> shape_;
  std::vector<std::byte> buffer_;             // the last chunk decoded
  std::vector<std::uint64_t> buffer_origin_;  // its origin, empty when none
};

}  // namespace tessera::interop::h5
