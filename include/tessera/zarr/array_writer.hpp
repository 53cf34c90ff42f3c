// Writing Zarr v3 arrays and groups to a Store the way zarr-python and zagg do (spec §1.5,
// §1.8): metadata bytes identical to zarr-python's; one object per shard (or per chunk); a read
// chunk whose elements all equal the fill value (dense; numerically for floats) or are all
// empty (vlen) is absent; present inner chunks are concatenated in ascending order from the
// start of the data region, then the index (all K entries, absent ones as the sentinel pair)
// and its CRC; an object with no present read chunk is not written, and an existing object at
// its key is erased.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::zarr {

// Writes `{path}/zarr.json` for a group.
void write_group(io::Store& store, const std::string& path, const GroupMeta& meta);

// Thread-safety: the encode_* members may be called concurrently; the write_* members may run
// concurrently for different objects (the store's puts are). Lifetime: the writer refers to
// `store`, which must outlive it.
class ArrayWriter {
 public:
  // Validates `meta` (FormatError/UnsupportedError as the reader would raise them).
  ArrayWriter(io::Store& store, std::string path, ArrayMeta meta);

  // The reader's view of the array being written (geometry, keys).
  const Array& array() const noexcept { return array_; }

  // Writes `{path}/zarr.json` (encode(meta)).
  void write_metadata();

  // Writes object `object` from the elements of its whole span at the object shape (shard or
  // chunk, edge objects included), C order, little-endian at the declared type. Returns the
  // number of read chunks written (0: the object was erased).
  std::uint64_t write_dense_object(const Coords& object, std::span<const std::byte> elements);

  // The same for a vlen array: one byte string per element of the object span, C order.
  std::uint64_t write_vlen_object(const Coords& object, std::span<const std::span<const std::byte>> elements);

  // Assembles one shard object from the encoded inner chunks (K entries in C order; an empty
  // optional is absent) with the array's index codecs and location. Empty result: nothing
  // present.
  std::vector<std::byte> assemble_shard(std::span<const std::optional<std::vector<std::byte>>> inner) const;

  // Writers that aggregate one read chunk at a time (the ragged leaf writer) encode each chunk
  // themselves (thread-safe, no store access) and place the results in one call: `encoded`
  // holds the object's read chunks in C order (one entry unsharded); an empty optional is
  // absent. Writes the shard (or chunk) object, or erases it when nothing is present; returns the
  // number of present read chunks.
  std::uint64_t write_encoded_object(const Coords& object,
                                     std::span<const std::optional<std::vector<std::byte>>> encoded);
  // One dense read chunk (C order at the read chunk shape) → its stored bytes, or nullopt when
  // every element equals the fill value.
  std::optional<std::vector<std::byte>> encode_dense_read_chunk(std::span<const std::byte> elements) const;
  // One vlen read chunk → its stored bytes, or nullopt when every element is empty.
  std::optional<std::vector<std::byte>> encode_vlen_read_chunk(
      std::span<const std::span<const std::byte>> elements) const;

 private:
  io::Store* store_;
  Array array_;
};

}  // namespace tessera::zarr
