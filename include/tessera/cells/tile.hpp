// Reading one deltacells tile (spec deltacells.md §2, §3): `Tile::parse` runs stages 1–3 of the
// reader validation (header and chunk table T1–T14, CRC T15, indptr T16–T18) on the whole object;
// `decode` runs stage 5 (T19–T22, X1–X4) while decoding the chunks straight into caller buffers.
//
// Every failure is a FormatError whose message names the object, the structure and the rule,
// e.g. `tiles/tile_000003.dct: chunk 2: vals frame decompresses to 14 bytes, expected 2*n = 16 (T19)`.
//
// A parsed Tile is immutable and safe to share between threads. It keeps the object's bytes
// alive: a memory-resident source (mmap, memory) is used in place, any other is read once.
// Decoding uses one zstd context and one scratch buffer per thread, reused across calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/chunk_entry.hpp"
#include "tessera/cells/tile_header.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::cells {

struct TileOptions {
  // Stage 2 (T15). The reference verifies only on request; tessera verifies by default.
  bool verify_crc = true;
};

// A count above 65535 in a narrow decode (Tile::decode_narrow): its position in the tile's
// nonzeros and its value.
struct WideCount {
  std::uint64_t position = 0;
  std::uint32_t count = 0;
  friend bool operator==(const WideCount&, const WideCount&) = default;
};

struct DecodeOptions {
  // Threads decoding the chunks of the tile in parallel (1 = the calling thread only, 0 = all
  // available). The output does not depend on it.
  unsigned threads = 1;
};

// Thread-safety: a parsed tile is immutable; every const member may be called concurrently.
// Lifetime: the tile keeps its source (or owns its bytes). It can be moved (a vector's buffer
// moves with it, so the view into it stays valid) but not copied (a copy's view would point into
// the original's bytes).
class Tile {
 public:
  Tile(Tile&&) noexcept = default;
  Tile& operator=(Tile&&) noexcept = default;
  Tile(const Tile&) = delete;
  Tile& operator=(const Tile&) = delete;

  // Parses the whole object of `source` (stages 1–3). `name` (default: the source's name) is the
  // object named in error messages, e.g. `tiles/tile_000003.dct`.
  static Tile parse(std::shared_ptr<const io::ByteSource> source, const TileOptions& options = {},
                    std::string name = {});
  // Parses bytes the tile takes ownership of.
  static Tile parse(std::vector<std::byte> bytes, std::string name, const TileOptions& options = {});

  const std::string& name() const noexcept { return name_; }
  const TileHeader& header() const noexcept { return header_; }
  std::uint32_t version() const noexcept { return header_.version; }
  std::uint64_t n_cells() const noexcept { return header_.n_cells; }
  std::uint64_t nnz() const noexcept { return header_.nnz; }
  std::uint64_t n_genes() const noexcept { return header_.n_genes; }
  std::uint64_t size() const noexcept { return header_.total_size; }
  const std::vector<ChunkEntry>& chunks() const noexcept { return chunks_; }
  // int64[n_cells + 1], validated (T16–T18).
  std::span<const std::int64_t> indptr() const noexcept { return indptr_; }
  // The largest chunk's nonzero count (sizes decode scratch).
  std::uint64_t max_chunk_nnz() const noexcept { return max_chunk_nnz_; }
  // The object's bytes [0, total_size).
  std::span<const std::byte> bytes() const noexcept { return {data_, static_cast<std::size_t>(header_.total_size)}; }

  // Decodes every chunk: `indices` and `values` must hold exactly nnz() elements (UsageError
  // otherwise). Gene indices are stored column numbers; float32 values are exact up to 2^24.
  void decode(std::span<std::int32_t> indices, std::span<std::int32_t> values, const DecodeOptions& options = {}) const;
  void decode(std::span<std::int32_t> indices, std::span<float> values, const DecodeOptions& options = {}) const;
  // Decodes every chunk with the same validation as `decode` and discards the result: what
  // `verify` needs, in memory bounded by the largest chunk per thread instead of by the tile (a
  // 400-million-nonzero tile would otherwise take 3.2 GB of output buffers).
  void check_decodes(const DecodeOptions& options = {}) const;
  // Decodes chunk `k` into the tile-wide buffers (entries [nnz_lo, nnz_hi) are written).
  void decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<std::int32_t> values) const;
  void decode_chunk(std::size_t k, std::span<std::int32_t> indices, std::span<float> values) const;

  // The narrow form: gene indices and counts as uint16, half the memory (and memory traffic) of
  // `decode`, with the same validation. Only for tiles of at most kNarrowMaxGenes genes, so that
  // every index fits (UsageError otherwise). A count above 65535 (a v2 value exception) is
  // written as 65535 and listed in `wide_counts`, which is replaced, in position order.
  static constexpr std::uint64_t kNarrowMaxGenes = std::uint64_t{1} << 16;
  bool narrow_decodable() const noexcept { return header_.n_genes <= kNarrowMaxGenes; }
  void decode_narrow(std::span<std::uint16_t> genes, std::span<std::uint16_t> counts,
                     std::vector<WideCount>& wide_counts, const DecodeOptions& options = {}) const;
  // Chunk `k` of decode_narrow into the tile-wide buffers; `wide_counts` is replaced by the
  // chunk's counts above 65535 (tile-wide positions, in order).
  void decode_chunk_narrow(std::size_t k, std::span<std::uint16_t> genes, std::span<std::uint16_t> counts,
                           std::vector<WideCount>& wide_counts) const;

 private:
  Tile() = default;
  void parse_stages(const TileOptions& options);
  // I/V: int32_t/int32_t or float (decode), uint16_t/uint16_t (decode_narrow, which passes the
  // per-chunk lists of counts above 65535 in `wide`, one per chunk).
  template <typename I, typename V>
  void decode_all(std::span<I> indices, std::span<V> values, std::vector<WideCount>* wide,
                  const DecodeOptions& options) const;
  // `indices`/`values` point at nonzero `first` of the tile: 0 for tile-wide buffers, the
  // chunk's nnz_lo for a buffer holding the chunk alone.
  template <typename I, typename V>
  void decode_one(std::size_t k, I* indices, V* values, std::vector<WideCount>* wide, std::uint64_t first = 0) const;

  std::shared_ptr<const io::ByteSource> source_;
  std::vector<std::byte> owned_;
  const std::byte* data_ = nullptr;
  std::uint64_t object_size_ = 0;
  std::string name_;
  TileHeader header_;
  std::vector<ChunkEntry> chunks_;
  std::vector<std::int64_t> indptr_;
  std::uint64_t max_chunk_nnz_ = 0;
};

}  // namespace tessera::cells
