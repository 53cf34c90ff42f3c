// Writing `.tet` files (spec tet.md §1.10): `TetWriter` streams a new file through a ByteSink,
// `TetAppender` rewrites an existing file with extra datasets, history rows and metadata.
//
// Layout written: superblock, dataset directory, zero padding, chunk index, payloads packed
// contiguously in index order (datasets in catalog order, tiles of a dataset in grid row-major
// order), then the optional metadata spill and history footer. Edge tiles are clipped (§1.5).
// For the raw codec the bytes are identical to the reference writer's.
//
// Usage contract:
//  1. declare every dataset with `add_dataset` (the index size must be known before any data);
//  2. give the data dataset by dataset in id order, either whole (`write_dataset`), one chunk
//     row at a time (`write_chunk_row`, rows in order), or — raw codec only — as the tiles
//     themselves in index order, in parts cut anywhere (`append_raw_tiles`), so files larger than
//     RAM can be written, and even a single tile larger than RAM streams through a small buffer;
//     `append_tiles` does the same for any codec (a compressed tile is held until complete);
//  3. `commit()` appends the footer, patches the superblock and index, and commits the sink.
// Calls out of order throw UsageError and leave the writer usable; an I/O or codec failure while
// writing leaves it failed (every later call throws). A writer destroyed without `commit()` never
// touches the destination of an AtomicFileSink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

struct DatasetSpec {
  std::string name;                        // unique, 1..1024 bytes of UTF-8
  DType dtype = DType::F32;                // one of the ten .tet element types (§1.4)
  std::vector<std::uint64_t> shape;        // 1..8 axes, no zero extent
  std::vector<std::uint64_t> chunk_shape;  // same rank; need not divide shape
  Codec codec = Codec::Raw;
  int zstd_level = 3;  // libzstd level, used when codec is zstd
};

struct WriterOptions {
  // File execution settings (TIDX bytes 16–31, §1.6); one value per file. 0 = engine default.
  std::uint16_t memory_budget_percent_bps = 0;
  std::uint32_t memory_budget_bytes = 0;
  // Footer contents; no footer is written when both are empty. Both can also be changed through
  // TetWriter::history() / metadata() until commit.
  std::vector<HistoryRow> history;
  Metadata metadata;
  // Threads compressing the tiles of a chunk row (0 = all available, 1 = the calling thread).
  unsigned threads = 0;
  // The footer's tessera extension (typed and global attributes, applied CF encoding); its
  // chunk_crc32c is the writer's to fill. Also reachable through TetWriter::extension().
  FooterExtension extension;
  // Record the CRC-32C of every chunk's stored bytes in the extension (verify --deep and the
  // opt-in read check compare them). Off only to reproduce a reference-written file exactly.
  bool chunk_checksums = true;
};

// The zstd levels accepted in a DatasetSpec (libzstd's fast negative levels up to 22).
inline constexpr int kMinZstdLevel = -131072;
inline constexpr int kMaxZstdLevel = 22;

// Checks one spec on its own (§1.10: rank, equal ranks, zero extents, element type, name,
// logical size, codec and level). Throws UsageError or LimitError naming the dataset and rule.
void validate_dataset_spec(const DatasetSpec& spec);

class TetWriter {
 public:
  // Writes to `sink`, which must be empty (position 0) and outlive the writer.
  explicit TetWriter(io::ByteSink& sink, WriterOptions options = {});
  // Writes to `path` through an owned io::AtomicFileSink (temp file + fsync + rename on commit).
  explicit TetWriter(const std::string& path, WriterOptions options = {});
  ~TetWriter();
  TetWriter(TetWriter&&) noexcept;
  TetWriter& operator=(TetWriter&&) noexcept;
  TetWriter(const TetWriter&) = delete;
  TetWriter& operator=(const TetWriter&) = delete;

  // Declares a dataset and returns its id (its position in the catalog). Validates the spec and
  // name uniqueness; throws UsageError after data has been written.
  std::uint32_t add_dataset(const DatasetSpec& spec);

  // The whole logical array of dataset `id`, row-major. The dataset must be the next one due
  // and none of its rows may have been written yet.
  void write_dataset(std::uint32_t id, std::span<const std::byte> logical_row_major);

  // Chunk row `row` of dataset `id`: the logical row-major data of rows
  // [row·cs0, min((row+1)·cs0, shape0)) along axis 0 by the full trailing extents. Rows come in
  // order; the slab is cut into clipped tiles (compressed in parallel for zstd) and written out
  // before the call returns, so the caller may reuse the buffer.
  void write_chunk_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab);

  // The next `bytes` of raw-codec dataset `id`'s payloads: its clipped tiles (§1.5) in index order
  // (grid row-major), each tile's elements row-major, back to back with no padding. A call may
  // begin and end anywhere, also inside a tile, so one tile can be given in many parts (a
  // whole-array tile larger than memory, a row slab at a time) and many small tiles in one call.
  // A raw payload is the tile bytes (§1.7: stored = raw length, no checksum), so each tile's index
  // entry is known when its first byte arrives and every call is one sink write; nothing is
  // buffered. Chunk rows (`write_chunk_row`) may follow only at a chunk row boundary. Throws
  // UsageError for a zstd dataset or for more bytes than the dataset has left.
  void append_raw_tiles(std::uint32_t id, std::span<const std::byte> bytes);
  // The same for a dataset of any codec: a zstd dataset's tiles are compressed as they complete
  // (the tiles one call completes in parallel on `threads`), so a tile given in parts is held in
  // memory until its last part. The file is byte for byte what write_dataset writes.
  void append_tiles(std::uint32_t id, std::span<const std::byte> bytes);

  // Appends the footer (when there is history or metadata), sets flag bit 0 accordingly, writes
  // the final superblock and index, and commits the sink. Throws UsageError when a dataset is
  // missing data, LimitError when the footer breaks MetadataLimitsV1.
  void commit();

  // Footer contents, editable until commit.
  std::vector<HistoryRow>& history();
  FooterExtension& extension();
  Metadata& metadata();

  std::uint32_t dataset_count() const;
  // Chunk rows of dataset `id` (grid extent along axis 0).
  std::uint64_t chunk_rows(std::uint32_t id) const;
  // Byte size of the slab `write_chunk_row(id, row, …)` expects.
  std::uint64_t chunk_row_bytes(std::uint32_t id, std::uint64_t row) const;
  // Index entries of the file being written.
  std::uint64_t chunk_count() const;
  // File length once committed (0 before).
  std::uint64_t file_size() const;

 private:
  friend class TetAppender;
  struct State;
  // Declares the datasets of `file` as already written; their payloads are copied verbatim
  // (index order, packed contiguously) right after the new index. Must precede add_dataset.
  void carry_over(const TetFile& file);
  std::unique_ptr<State> state_;
};

struct AppendOptions {
  // New file execution settings; nullopt keeps the file's own.
  std::optional<std::uint16_t> memory_budget_percent_bps;
  std::optional<std::uint32_t> memory_budget_bytes;
  unsigned threads = 0;
};

// Adds datasets, history rows and metadata to an existing file. The file is opened (and fully
// validated) through TetFile::open; `commit()` rewrites it atomically: existing payload bytes are
// copied verbatim (offsets shifted), followed by the new payloads and a new footer carrying the
// old history plus the appended rows. Until commit the original file is untouched, and an
// appender destroyed without commit leaves no temporary file behind.
class TetAppender {
 public:
  explicit TetAppender(const std::string& path, AppendOptions options = {});
  ~TetAppender();
  TetAppender(const TetAppender&) = delete;
  TetAppender& operator=(const TetAppender&) = delete;

  // The file as it was opened.
  const TetFile& original() const noexcept;

  // Same contract as TetWriter; ids continue after the file's existing datasets, and names must
  // differ from theirs too.
  std::uint32_t add_dataset(const DatasetSpec& spec);
  void write_dataset(std::uint32_t id, std::span<const std::byte> logical_row_major);
  void write_chunk_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab);

  void append_history(HistoryRow row);
  // Replaces the metadata entirely.
  void set_metadata(Metadata metadata);
  // Merges into the current metadata: set `file` fields replace, dataset entries merge attr by
  // attr, and `dim_names` / coords axes given in `update` replace the existing ones.
  void merge_metadata(const Metadata& update);
  const std::vector<HistoryRow>& history() const;
  const Metadata& metadata() const;

  void commit();
  std::uint64_t file_size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::tet
