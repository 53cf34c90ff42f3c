// Reading `.tet` files: `TetFile::open` runs the structural pass (layout.hpp) and then tessera's
// semantic rules (spec tet.md §1.9 B), so an opened file has a valid dtype, a complete chunk
// grid and exact tile sizes for every dataset. Chunks decode straight into caller buffers, on
// every thread, with one zstd context per thread.
//
// A TetFile is immutable after open and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/read_path.hpp"
#include "tessera/tet/layout.hpp"

namespace tessera::tet {

// One axis of a strided box: indices start, start+step, … < stop (stop exclusive, step ≥ 1).
struct AxisRange {
  std::uint64_t start = 0;
  std::uint64_t stop = 0;
  std::uint64_t step = 1;
  // Written so that ranges near 2^64 cannot wrap; an invalid step 0 selects nothing.
  std::uint64_t count() const noexcept { return stop > start && step > 0 ? (stop - start - 1) / step + 1 : 0; }
};
using Box = std::vector<AxisRange>;

struct Dataset {
  std::uint32_t id = 0;
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> chunk_shape;
  std::vector<std::uint64_t> grid;            // chunks per axis
  std::vector<std::uint32_t> entry_of_chunk;  // index entry per grid cell, row-major over `grid`
  std::uint64_t element_count = 0;
  std::uint64_t logical_bytes = 0;

  std::size_t ndim() const noexcept { return shape.size(); }
  std::size_t element_size() const noexcept { return dtype_size(dtype); }
  Box full_box() const;
  // Row-major position of grid coordinate `coords` in `entry_of_chunk`.
  std::uint64_t chunk_ordinal(std::span<const std::uint64_t> coords) const noexcept;
  // The tile of grid coordinate `coords`: its first element and clipped extent per axis.
  void tile_extent(std::span<const std::uint64_t> coords, std::span<std::uint64_t> origin,
                   std::span<std::uint64_t> extent) const noexcept;
};

// `{name:?}`: a name in double quotes with `"` and `\` escaped, as the spec's texts quote it.
std::string quoted_name(std::string_view name);
// `dataset {id} ({name:?})`: how rule texts name a dataset.
std::string dataset_label(std::uint64_t id, std::string_view name);

// The first semantic rule (§1.9 B) that `layout` breaks for dataset `id`, as the spec's text,
// or nullopt. `verify` reports these under `dataset_tensor_bytes`; `open` throws them.
std::optional<std::string> dataset_rule_violation(const Layout& layout, std::uint32_t id);
// The same for every dataset at once (element `id` for dataset `id`), in time linear in the
// number of entries; prefer it to calling dataset_rule_violation for each id.
std::vector<std::optional<std::string>> dataset_rule_violations(const Layout& layout);
// The first entry whose dataset_id is out of range, as the spec's text, or nullopt.
std::optional<std::string> dataset_id_violation(const Layout& layout);

// Decodes the payload of index entry `entry_index` (raw copy or zstd) from `source` into `dst`,
// which must be exactly raw_byte_len bytes. Throws FormatError `chunk {i}: {codec error}`.
// TetFile::decode_chunk and `verify` (which also decodes files that do not open) share it.
// With ReadPath::Pread the stored bytes of a zstd chunk are copied into a reused per-thread buffer
// even when the source is mapped (io/read_path.hpp); otherwise a mapped source is decoded in place.
void decode_chunk_payload(const io::ByteSource& source, const ChunkEntry& entry, std::uint64_t entry_index,
                          std::span<std::byte> dst, io::ReadPath path = io::ReadPath::Mmap);
// The decode check of `verify`: succeeds or fails exactly as decode_chunk_payload would, but a
// large zstd tile is streamed through a small window rather than decoded whole, so a few bytes
// of payload claiming a huge tile cannot make the check allocate that size.
// With `recorded_crc`, the stored bytes are first compared with it (FormatError
// `chunk {i}: stored bytes do not match their CRC-32C …`); they are read once for both checks.
void check_chunk_payload(const io::ByteSource& source, const ChunkEntry& entry, std::uint64_t entry_index,
                         const std::uint32_t* recorded_crc = nullptr);
// The CRC-32C of an entry's stored payload bytes (what the footer extension's chunk_crc32c records).
std::uint32_t chunk_crc32c(const io::ByteSource& source, const ChunkEntry& entry);
// The message of a chunk whose stored bytes differ from its recorded CRC-32C (verify and reads).
std::string checksum_mismatch(std::uint64_t entry_index, std::uint32_t recorded, std::uint32_t computed);

struct ReadOptions {
  // Threads to decode with (0 = all available).
  unsigned threads = 0;
  // Compare each chunk read with the CRC-32C the footer extension records for it (FormatError
  // `chunk {i}: stored bytes do not match their CRC-32C …` on a mismatch). Costs one pass over
  // the stored bytes; files without recorded checksums are read as without the option.
  bool verify_checksums = false;
};

// `source` wrapped so that reading a file's structure is served from one prefetch of its head
// and tail (superblock, directory, chunk index, footer) instead of a request per read, and its
// chunks can be fetched ahead (read_ahead.hpp); `source` itself when it is mapped or in memory.
// TetFile::open does this; `verify` of a remote file needs it too.
std::shared_ptr<const io::ByteSource> with_metadata_prefetched(std::shared_ptr<const io::ByteSource> source);

class TetFile {
 public:
  // Opens and validates. Throws FormatError (spec texts; path() = source name) on any rule.
  static TetFile open(std::shared_ptr<const io::ByteSource> source);
  static TetFile open(const std::string& path, io::OpenMode mode = io::OpenMode::MapAndRead);

  const io::ByteSource& source() const noexcept { return *source_; }
  const Layout& layout() const noexcept { return layout_; }
  // Throws FormatError when entry `entry_index`'s stored bytes differ from the CRC-32C the footer
  // extension records; does nothing when the file records none.
  void check_chunk_checksum(std::uint32_t entry_index) const;
  const std::vector<Dataset>& datasets() const noexcept { return datasets_; }
  // First dataset with this exact name, or nullptr.
  const Dataset* find(std::string_view name) const noexcept;
  // Footer metadata of a dataset, or nullptr.
  const DatasetMetadata* metadata_of(std::string_view name) const noexcept;
  const ChunkEntry& entry(std::uint32_t index) const noexcept { return layout_.entries[index]; }

  // Decodes one chunk (raw copy or zstd) into `dst`, which must be exactly raw_byte_len bytes.
  // Throws FormatError `chunk {i}: {codec error}` naming the entry index.
  void decode_chunk(std::uint32_t entry_index, std::span<std::byte> dst, io::ReadPath path = io::ReadPath::Mmap) const;
  // The same into `scratch`, resized to raw_byte_len (its storage is reused across calls): the
  // one place a reader sizes a tile buffer by the file's word. The
  // size comes from the file, so it is checked before anything is allocated: a zstd payload whose
  // frames declare another size fails at once, and a large one that declares none is first
  // streamed through a small window (as `verify` does), so a few bytes cannot claim gigabytes.
  void decode_chunk_into(std::uint32_t entry_index, std::vector<std::byte>& scratch,
                         io::ReadPath path = io::ReadPath::Mmap) const;

  // Reads the strided box `box` of `dataset` into `dst` in logical (row-major) order; `dst`
  // must hold box element count × element size bytes. Touched chunks decode in parallel.
  void read_box(const Dataset& dataset, const Box& box, std::span<std::byte> dst,
                const ReadOptions& options = {}) const;

 private:
  TetFile(std::shared_ptr<const io::ByteSource> source, Layout layout);
  std::shared_ptr<const io::ByteSource> source_;
  Layout layout_;
  std::vector<Dataset> datasets_;
};

// Grid indices of the chunks along one axis that contain at least one selected index.
std::vector<std::uint64_t> touched_chunks(const AxisRange& range, std::uint64_t chunk_extent);

}  // namespace tessera::tet
