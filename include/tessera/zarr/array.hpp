// Reading a Zarr v3 array from a Store (spec §1.4–§1.6), for both storage geometries behind one
// read path:
//   - sharded: one object per shard (`chunk_grid` chunk); it packs K inner (read) chunks and an
//     index of their byte ranges;
//   - per-chunk: one object per read chunk.
// A *read chunk* is the unit the codec chain encodes (the sharding `chunk_shape`, else the
// `chunk_grid` chunk); an *object* is what the store holds (a shard, or one read chunk).
//
// Every read goes through the Store's GET calls, with the fewest requests the geometry allows:
//   - one read chunk, sharded: GET the index (suffix, or prefix for `index_location: start`),
//     then GET exactly the chunk's byte range: 2 GETs; 1 when the index marks it absent or the
//     shard object is missing;
//   - one read chunk, per-chunk geometry: 1 GET;
//   - a box covering whole objects: 1 GET per object (shards are read whole and split in memory);
//     objects the box only partly covers are read chunk by chunk as above.
// Metadata (`zarr.json`) is read once, by `open`.
//
// Values are returned as C-order little-endian elements of the declared data type; absent
// chunks read as the fill value (dense) or as empty byte strings (vlen).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/io/read_path.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/codec.hpp"
#include "tessera/zarr/metadata.hpp"
#include "tessera/zarr/shard_index.hpp"
#include "tessera/zarr/vlen.hpp"

namespace tessera::zarr {

using Coords = std::vector<std::uint64_t>;

// [begin, end) on one axis.
struct Interval {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool operator==(const Interval&) const = default;
};
using Box = std::vector<Interval>;

struct ReadOptions {
  // Upper bound on the decoded bytes of one read chunk and on a shard index (LimitError beyond);
  // spec §1.7's `max_chunk_bytes`.
  std::uint64_t max_chunk_bytes = std::uint64_t{1} << 30;
};

class StoredObject;

// Thread-safety: immutable once opened; every member may be called concurrently (reads go through
// the store, which allows that). Lifetime: refers to the store, which must outlive it and its copies.
class Array {
 public:
  // Reads and validates `{path}/zarr.json` (path "" is the store root). FormatError when the
  // metadata is missing or is not an array's; everything `decode_array` and `validate` refuse.
  static Array open(const io::Store& store, std::string path, ReadOptions options = {});
  // An array whose metadata is already known (validated here). The store must outlive it.
  Array(const io::Store& store, std::string path, ArrayMeta meta, ReadOptions options = {});

  const io::Store& store() const noexcept { return *store_; }
  const std::string& path() const noexcept { return path_; }
  const ArrayMeta& meta() const noexcept { return meta_; }
  const DataType& data_type() const noexcept { return meta_.data_type; }
  const ReadOptions& options() const noexcept { return options_; }
  std::string metadata_key() const;

  // ---- geometry (spec §1.6) ----
  std::size_t rank() const noexcept { return meta_.shape.size(); }
  const Coords& shape() const noexcept { return meta_.shape; }
  bool sharded() const noexcept { return meta_.sharding.has_value(); }
  const Coords& read_chunk_shape() const noexcept { return read_chunk_shape_; }
  const Coords& object_shape() const noexcept { return meta_.chunk_shape; }
  const Coords& read_chunk_grid() const noexcept { return read_chunk_grid_; }
  const Coords& object_grid() const noexcept { return object_grid_; }
  // Read chunks per object on each axis (all 1 when not sharded) and their product K.
  const Coords& chunks_per_object() const noexcept { return chunks_per_object_; }
  std::uint64_t chunks_per_object_count() const noexcept { return chunks_per_object_count_; }
  std::uint64_t read_chunk_elements() const noexcept { return read_chunk_elements_; }
  // Decoded bytes of one dense read chunk (elements × itemsize; 0 for vlen).
  std::uint64_t read_chunk_bytes() const noexcept { return read_chunk_bytes_; }

  // The store key of an object.
  std::string object_key(const Coords& object) const;
  // Which object holds a read chunk, and its ordinal inside (C order over the object's grid of
  // read chunks; always 0 when not sharded).
  struct ChunkAddress {
    Coords object;
    std::uint64_t inner = 0;
  };
  ChunkAddress locate(const Coords& read_chunk) const;
  // May name a read chunk beyond the array's edge (a shard at the edge can hold some).
  Coords read_chunk_of(const Coords& object, std::uint64_t inner) const;
  bool in_read_chunk_grid(const Coords& read_chunk) const noexcept;
  // Elements an object or a read chunk covers inside the array (clipped at the array's edge).
  Box stored_span(const Coords& object) const;
  Box chunk_span(const Coords& read_chunk) const;
  // The objects present in the store, in C order: one LIST. Every listed key in the encoding's
  // key space must be a chunk key of this array inside the grid (FormatError otherwise).
  std::vector<Coords> list_stored_objects() const;

  // ---- stored (encoded) bytes ----
  // The index of a shard object (1 GET), nullopt when the object is missing. Sharded only.
  std::optional<ShardIndex> read_shard_index(const Coords& object) const;
  // The encoded bytes of one read chunk (2 GETs sharded, 1 otherwise), nullopt when absent.
  std::optional<std::vector<std::byte>> read_stored_chunk(const Coords& read_chunk) const;
  // The encoded bytes of inner chunk `inner` of a shard whose index was read before: 1 GET when
  // present, none when absent.
  std::optional<std::vector<std::byte>> read_stored_chunk(const ShardIndex& index, std::uint64_t inner) const;
  // The encoded bytes of inner chunks [first, last) of that shard (entry i - first for chunk i,
  // nullopt when absent), in as few requests as their layout allows: one ranged GET covering
  // every present chunk when the bytes between them are no more than the chunks' own (or 1 MiB),
  // else one GET per present chunk. A single present chunk is exactly read_stored_chunk's GET.
  std::vector<std::optional<std::vector<std::byte>>> read_stored_chunks(const ShardIndex& index, std::uint64_t first,
                                                                        std::uint64_t last) const;
  // A whole object in one GET, or mapped when local (sweeps).
  StoredObject read_object(const Coords& object) const;

  // ---- decoded values ----
  // One dense read chunk (full read-chunk shape, edge chunks included) into `out`
  // (read_chunk_bytes() bytes).
  void read_chunk(const Coords& read_chunk, std::span<std::byte> out) const;
  std::vector<std::byte> read_chunk(const Coords& read_chunk) const;
  // The elements of `box` (dense types), C order. UsageError for a box outside the shape.
  std::vector<std::byte> read_box(const Box& box) const;
  // The same into `out` of exactly box_bytes(box) (UsageError otherwise), so a reader can reuse
  // its buffer.
  void read_box_into(const Box& box, std::span<std::byte> out) const;
  // The byte size of `box`'s elements. UsageError for a box outside the shape.
  std::size_t box_bytes(const Box& box) const;
  std::vector<std::byte> read_all() const;
  // One vlen read chunk: read_chunk_elements() byte strings.
  VlenChunk read_vlen_chunk(const Coords& read_chunk) const;

  // Decoding bytes fetched by the caller (e.g. from a cached or whole-object read).
  void decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out, const ChunkRef& chunk) const;
  VlenChunk decode_vlen_chunk(std::span<const std::byte> stored, const ChunkRef& chunk) const;
  // The same into `out`, reusing its storage.
  void decode_vlen_chunk_into(std::span<const std::byte> stored, const ChunkRef& chunk, VlenChunk& out) const;
  // Writes the fill value over a dense read-chunk buffer.
  void fill_chunk(std::span<std::byte> out) const;

 private:
  void require_dense(const char* what) const;
  void require_vlen(const char* what) const;
  void check_read_chunk(const Coords& read_chunk) const;
  void check_object(const Coords& object) const;

  const io::Store* store_;
  std::string path_;
  ArrayMeta meta_;
  ReadOptions options_;
  Coords read_chunk_shape_, read_chunk_grid_, object_grid_, chunks_per_object_;
  std::uint64_t chunks_per_object_count_ = 1;
  std::uint64_t read_chunk_elements_ = 1;
  std::uint64_t read_chunk_bytes_ = 0;
};

// One object fetched whole: one GET into memory on a remote store, a mapping on a local one
// (its descriptor kept, so a scan may copy chunks out with pread instead of faulting the map:
// scan_read_path). Its read chunks decode with no further request. Refers to its Array, which
// must outlive it; copies share the object's bytes.
class StoredObject {
 public:
  const Coords& object() const noexcept { return object_; }
  const std::string& key() const noexcept { return key_; }
  bool exists() const noexcept { return source_ != nullptr; }
  // The shard index (sharded arrays, object present).
  const std::optional<ShardIndex>& index() const noexcept { return index_; }
  // Read chunks in the object (K; 1 when not sharded).
  std::uint64_t chunk_count() const noexcept;
  // The encoded bytes of read chunk `inner`, entry-validated, viewed where they lie; nullopt when
  // absent.
  std::optional<std::span<const std::byte>> stored_chunk(std::uint64_t inner) const;
  // How a scan of every chunk of this object reaches them (io::choose_read_path over the object):
  // Mmap for bytes in memory; for a local file, whichever this machine makes cheaper.
  io::ReadPath scan_read_path() const;
  // The same bytes by `path`: viewed in place (Mmap), or copied with pread into the start of
  // `scratch`, whose storage is reused from call to call and only ever grows (Pread).
  std::optional<std::span<const std::byte>> stored_chunk(std::uint64_t inner, io::ReadPath path,
                                                         std::vector<std::byte>& scratch) const;
  void read_chunk(std::uint64_t inner, std::span<std::byte> out) const;
  VlenChunk read_vlen_chunk(std::uint64_t inner) const;
  // The same into `out`, reusing its storage (a sweep decodes every chunk into a few buffers).
  void read_vlen_chunk_into(std::uint64_t inner, VlenChunk& out) const;

 private:
  friend class Array;
  StoredObject(const Array& array, Coords object, std::string key)
      : array_(&array), object_(std::move(object)), key_(std::move(key)) {}
  ChunkRef ref(std::uint64_t inner) const { return {key_, array_->sharded(), inner}; }
  // The byte range of read chunk `inner` inside the object, nullopt when absent.
  std::optional<ShardIndexEntry> chunk_range(std::uint64_t inner) const;

  const Array* array_;
  Coords object_;
  std::string key_;
  std::shared_ptr<const io::ByteSource> source_;  // null when the object is missing
  std::span<const std::byte> bytes_;              // all of source_, viewed
  std::optional<ShardIndex> index_;
};

}  // namespace tessera::zarr
