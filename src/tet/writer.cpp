// TetWriter: call-order rules, the file preamble (superblock, directory, index placeholder), the
// chunk rows (cut into clipped tiles, zstd-compressed in parallel), raw tiles given as a payload
// stream cut anywhere (append_raw_tiles), payloads carried over from an existing file, and the
// commit (footer, final superblock and index patched in place). Spec validation and tile cutting
// live in writer_plan.cpp.
//
// The index is written as zeros first and patched at commit because zstd payload sizes are known
// only once each tile is compressed; payloads follow the index contiguously in index order, so
// each entry's offset is simply the sink position when its payload is written.
#include "tessera/tet/writer.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "ordered_writes.hpp"
#include "writer_plan.hpp"

namespace tessera::tet {
namespace {

using detail::DatasetPlan;
using detail::spec_prefix;

// Block size for writing zeros, patching the index and copying carried payloads.
constexpr std::size_t kIoBlock = std::size_t{8} << 20;

enum class Phase { Declaring, Writing, Committed, Failed };

void write_zeros(io::ByteSink& sink, std::uint64_t n) {
  const std::vector<std::byte> zeros(static_cast<std::size_t>(std::min<std::uint64_t>(n, kIoBlock)));
  while (n > 0) {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, zeros.size()));
    sink.write({zeros.data(), k});
    n -= k;
  }
}

}  // namespace

struct TetWriter::State {
  std::unique_ptr<io::AtomicFileSink> owned_sink;
  io::ByteSink* sink = nullptr;
  WriterOptions options;
  std::optional<tbb::task_arena> arena;

  std::vector<DatasetPlan> datasets;
  std::uint32_t carried_count = 0;  // leading datasets copied from an existing file
  const TetFile* carried = nullptr;
  std::uint64_t entry_count = 0;    // index entries of the finished file
  std::vector<ChunkEntry> entries;  // in index order, as written
  std::vector<std::uint32_t> crcs;  // CRC-32C of each entry's stored bytes (chunk_checksums)
  Superblock superblock;
  std::uint32_t cursor = 0;  // the dataset whose data is due
  Phase phase = Phase::Declaring;
  std::uint64_t file_size = 0;

  // Buffers reused from one chunk row to the next.
  std::vector<std::byte> row_buffer;
  std::vector<std::vector<std::byte>> compressed;
  // append_tiles of a compressed dataset: the bytes of the tile not complete yet, and the one
  // completed from them in the current call.
  std::vector<std::byte> held, held_done;

  // Runs f(0..n-1), in parallel unless one thread was asked for.
  template <typename F>
  void for_each(std::uint64_t n, F&& f) {
    if (n <= 1 || options.threads == 1) {
      for (std::uint64_t i = 0; i < n; ++i) f(i);
      return;
    }
    auto body = [&] {
      tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n, 1), [&](const tbb::blocked_range<std::uint64_t>& r) {
        for (std::uint64_t i = r.begin(); i != r.end(); ++i) f(i);
      });
    };
    if (arena) arena->execute(body);
    else body();
  }

  // Any exception escaping `f` leaves the file half written: the writer refuses further calls.
  template <typename F>
  void guarded(F&& f) {
    try {
      f();
    } catch (...) {
      phase = Phase::Failed;
      throw;
    }
  }

  void require_open(const char* call) const {
    if (phase == Phase::Committed) throw UsageError(std::string(call) + ": the writer is already committed");
    if (phase == Phase::Failed)
      throw UsageError(std::string(call) + ": an earlier write failed; the file is abandoned");
  }

  std::string prefix(std::uint32_t id) const { return dataset_label(id, datasets[id].record.name) + ": "; }

  // Checks that dataset `id` is the one whose data is due and returns it.
  DatasetPlan& due(std::uint32_t id, const char* call) {
    require_open(call);
    if (id >= datasets.size())
      throw UsageError(std::string(call) + ": no dataset with id " + std::to_string(id) + " (" +
                       std::to_string(datasets.size()) + " declared)");
    if (id < carried_count) throw UsageError(prefix(id) + "already stored in the file being appended to");
    if (id < cursor)
      throw UsageError(prefix(id) + "all " + std::to_string(datasets[id].rows()) + " chunk rows are already written");
    if (id > cursor)
      throw UsageError(prefix(id) + "data is written in dataset order; " + prefix(cursor) +
                       std::to_string(datasets[cursor].rows_written) + " of " +
                       std::to_string(datasets[cursor].rows()) + " chunk rows written");
    return datasets[id];
  }

  // The CRC-32C of stored payload bytes, continuing `crc`; 0 when checksums are not recorded.
  std::uint32_t checksum(std::span<const std::byte> stored, std::uint32_t crc = 0) const {
    return options.chunk_checksums ? codec::crc32c(stored, crc) : 0;
  }

  void record_entry(std::uint32_t id, const std::array<std::uint64_t, kMaxRank>& coords, std::uint64_t offset,
                    std::uint64_t raw, std::uint64_t stored, std::uint32_t crc) {
    crcs.push_back(crc);
    ChunkEntry e;
    e.dataset_id = id;
    std::copy_n(coords.begin(), datasets[id].geometry.ndim(), e.chunk_index.begin());
    e.payload_offset = offset;
    e.raw_byte_len = raw;
    e.stored_byte_len = stored;
    e.codec = static_cast<std::uint32_t>(datasets[id].codec);
    entries.push_back(e);
  }

  // Moves on to the next dataset still due (carried ones are complete already).
  void advance() {
    while (cursor < datasets.size() && datasets[cursor].complete()) ++cursor;
  }

  // Whole chunk rows can only start where a row begins.
  void require_row_boundary(std::uint32_t id, const char* call) const {
    const DatasetPlan& p = datasets[id];
    if (p.tile_bytes_written != 0 || p.tiles_written != p.rows_written * p.row_tiles)
      throw UsageError(prefix(id) + call + " needs a chunk row boundary; " + std::to_string(p.tiles_written) +
                       " tiles (and " + std::to_string(p.tile_bytes_written) +
                       " bytes of the next) were given through append_raw_tiles");
  }

  void init(io::ByteSink& target, WriterOptions opts);
  void begin();
  void copy_carried_payloads();
  void write_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab);
  void append_raw(std::uint32_t id, std::span<const std::byte> bytes);
  void append_compressed(std::uint32_t id, std::span<const std::byte> bytes);
  // The checks and dispatch of append_raw_tiles / append_tiles (`call`), for a dataset that is due.
  void append_tiles(std::uint32_t id, std::span<const std::byte> bytes, const char* call) {
    DatasetPlan& p = datasets[id];
    const std::uint64_t left = p.geometry.logical_bytes - p.bytes_written;
    if (bytes.size() > left)
      throw UsageError(prefix(id) + call + " got " + std::to_string(bytes.size()) + " bytes but only " +
                       std::to_string(left) + " remain of the dataset's tiles");
    if (bytes.empty()) return;
    guarded([&] {
      if (phase == Phase::Declaring) begin();
      switch (p.codec) {
        case Codec::Raw: append_raw(id, bytes); return;
        case Codec::Zstd: append_compressed(id, bytes); return;
      }
      throw UsageError(prefix(id) + call + ": unknown codec");
    });
  }
  void patch_index();
};

void TetWriter::State::begin() {
  const std::uint32_t n = static_cast<std::uint32_t>(datasets.size());
  superblock.dataset_count = n;
  if (n == 0) {
    // §1.1: an empty file is the bare superblock with the index offset at 32.
    superblock.chunk_index_offset = Superblock::kSize;
    superblock.chunk_index_length = 0;
    std::byte sb[Superblock::kSize];
    superblock.encode_to(sb);
    sink->write(sb);
    phase = Phase::Writing;
    return;
  }
  std::vector<std::byte> head(Superblock::kSize + 8);
  for (const auto& p : datasets) p.record.append_to(head);
  const std::uint64_t blob_len = head.size() - Superblock::kSize - 8;
  store_le<std::uint64_t>(head.data() + Superblock::kSize, blob_len);
  superblock.chunk_index_offset = align8(head.size());
  superblock.chunk_index_length = ChunkIndexHeader::kSize + entry_count * ChunkEntry::kSize;  // checked in add_dataset
  head.resize(superblock.chunk_index_offset, std::byte{0});                                   // padding up to the index
  superblock.encode_to(head.data());  // flags are final only at commit; rewritten there
  sink->write(head);
  write_zeros(*sink, superblock.chunk_index_length);
  entries.reserve(checked_size(entry_count, "chunk index entries"));
  phase = Phase::Writing;
  copy_carried_payloads();
}

// Existing payloads keep their bytes and their index order; only their offsets change. Runs of
// entries that are adjacent in the source are copied as one range.
void TetWriter::State::copy_carried_payloads() {
  if (carried == nullptr) return;
  const io::ByteSource& src = carried->source();
  const auto& old = carried->layout().entries;
  std::vector<std::byte> buffer;
  auto copy_range = [&](std::uint64_t offset, std::uint64_t len) {
    while (len > 0) {
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(len, kIoBlock));
      if (const std::byte* p = src.view(offset, k)) {
        sink->write({p, k});
      } else {
        buffer.resize(k);
        src.read_at(offset, buffer);
        sink->write(buffer);
      }
      offset += k;
      len -= k;
    }
  };
  // Checksums the carried file recorded are kept; a file without them is checksummed as copied.
  const auto& footer = carried->layout().footer;
  const std::vector<std::uint32_t>* known = footer && footer->extension ? &footer->extension->chunk_crc32c : nullptr;
  if (known && known->size() != old.size()) known = nullptr;
  std::uint64_t run_start = 0, run_len = 0;
  for (std::size_t i = 0; i < old.size(); ++i) {
    const ChunkEntry& e = old[i];
    ChunkEntry moved = e;
    moved.payload_offset = sink->position() + run_len;
    entries.push_back(moved);
    if (!options.chunk_checksums) crcs.push_back(0);
    else if (known) crcs.push_back((*known)[i]);
    else crcs.push_back(checksum(src.read_vector(e.payload_offset, e.stored_byte_len)));
    if (run_len > 0 && e.payload_offset == run_start + run_len) {
      run_len += e.stored_byte_len;
      continue;
    }
    copy_range(run_start, run_len);
    run_start = e.payload_offset;
    run_len = e.stored_byte_len;
  }
  copy_range(run_start, run_len);
}

void TetWriter::State::write_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab) {
  DatasetPlan& p = datasets[id];
  const Dataset& g = p.geometry;
  const std::size_t nd = g.ndim();
  const std::size_t es = g.element_size();
  std::array<std::uint64_t, kMaxRank> slab_shape{};
  slab_shape[0] = p.row_extent(row);
  std::copy(g.shape.begin() + 1, g.shape.end(), slab_shape.begin() + 1);

  auto tile_at = [&](std::uint64_t t) { return detail::row_tile(p, row, t); };
  auto record = [&](const detail::RowTile& tile, std::uint64_t offset, std::span<const std::byte> stored) {
    record_entry(id, tile.coords, offset, tile.bytes, stored.size(), checksum(stored));
  };
  const std::span<const std::uint64_t> slab_dims{slab_shape.data(), nd};
  // With one tile per row (rank 1, or a single chunk across the trailing axes) the slab is the tile.
  const bool slab_is_tile = p.row_tiles == 1;

  switch (p.codec) {
    case Codec::Raw: {
      std::vector<std::uint64_t> offsets(checked_size(p.row_tiles) + 1, 0);
      for (std::uint64_t t = 0; t < p.row_tiles; ++t) offsets[t + 1] = offsets[t] + tile_at(t).bytes;
      std::span<const std::byte> out = slab;
      if (!slab_is_tile) {
        row_buffer.resize(slab.size());
        for_each(p.row_tiles, [&](std::uint64_t t) {
          const detail::RowTile tile = tile_at(t);
          detail::gather_tile(slab.data(), slab_dims, {tile.origin.data(), nd}, {tile.extent.data(), nd}, es,
                              row_buffer.data() + offsets[t]);
        });
        out = row_buffer;
      }
      const std::uint64_t base = sink->position();
      sink->write(out);
      for (std::uint64_t t = 0; t < p.row_tiles; ++t)
        record(tile_at(t), base + offsets[t],
               out.subspan(checked_size(offsets[t]), checked_size(offsets[t + 1] - offsets[t])));
      break;
    }
    case Codec::Zstd: {
      compressed.resize(checked_size(p.row_tiles));
      const codec::ZstdOptions zopts{p.zstd_level, /*content_size=*/true, /*checksum=*/false};
      detail::compress_then_write_in_order([&](std::uint64_t n, const auto& f) { for_each(n, f); }, p.row_tiles,
                                           [&](std::uint64_t t) {
                                             std::vector<std::byte>& out = compressed[t];
                                             out.clear();
                                             if (slab_is_tile) {
                                               codec::zstd_compress_append(slab, out, zopts);
                                               return;
                                             }
                                             const detail::RowTile tile = tile_at(t);
                                             thread_local std::vector<std::byte> scratch;
                                             scratch.resize(checked_size(tile.bytes));
                                             detail::gather_tile(slab.data(), slab_dims, {tile.origin.data(), nd},
                                                                 {tile.extent.data(), nd}, es, scratch.data());
                                             codec::zstd_compress_append(scratch, out, zopts);
                                           },
                                           [&](std::uint64_t t) {
                                             record(tile_at(t), sink->position(), compressed[t]);
                                             sink->write(compressed[t]);
                                           });
      break;
    }
  }
  p.tiles_written += p.row_tiles;
  p.bytes_written += slab.size();
  if (++p.rows_written == p.rows()) advance();
}

// Raw tiles in index order, cut anywhere: each tile's entry is recorded where its first byte
// lands (a raw payload is the tile bytes, stored = raw length, §1.7), then the bytes go to the sink
// in one write.
void TetWriter::State::append_raw(std::uint32_t id, std::span<const std::byte> bytes) {
  DatasetPlan& p = datasets[id];
  const std::uint64_t base = sink->position();
  std::uint64_t done = 0;
  while (done < bytes.size()) {
    const std::uint64_t row = p.tiles_written / p.row_tiles;
    const detail::RowTile tile = detail::row_tile(p, row, p.tiles_written % p.row_tiles);
    if (p.tile_bytes_written == 0) record_entry(id, tile.coords, base + done, tile.bytes, tile.bytes, 0);
    const std::uint64_t k = std::min<std::uint64_t>(bytes.size() - done, tile.bytes - p.tile_bytes_written);
    // A tile given in parts is checksummed part by part (its entry is the last one recorded).
    crcs.back() = checksum(bytes.subspan(checked_size(done), checked_size(k)), crcs.back());
    done += k;
    p.tile_bytes_written += k;
    if (p.tile_bytes_written == tile.bytes) {
      p.tile_bytes_written = 0;
      if (++p.tiles_written % p.row_tiles == 0) ++p.rows_written;
    }
  }
  sink->write(bytes);
  p.bytes_written += bytes.size();
  if (p.complete()) advance();
}

// Tiles in index order, cut anywhere, compressed as each one completes: a tile given whole in
// one call is compressed from the caller's bytes, one given in parts is held until its last byte.
// The tiles completed by one call are compressed in parallel, then written in order, exactly as
// write_row writes the same tiles.
void TetWriter::State::append_compressed(std::uint32_t id, std::span<const std::byte> bytes) {
  DatasetPlan& p = datasets[id];
  struct Ready {
    detail::RowTile tile;
    std::span<const std::byte> data;
  };
  std::vector<Ready> ready;
  held_done.clear();
  for (std::uint64_t done = 0; done < bytes.size();) {
    const detail::RowTile tile = detail::row_tile(p, p.tiles_written / p.row_tiles, p.tiles_written % p.row_tiles);
    const std::uint64_t k = std::min<std::uint64_t>(bytes.size() - done, tile.bytes - p.tile_bytes_written);
    const std::span<const std::byte> part = bytes.subspan(checked_size(done), checked_size(k));
    done += k;
    if (p.tile_bytes_written == 0 && k == tile.bytes) {
      ready.push_back({tile, part});
    } else {
      held.insert(held.end(), part.begin(), part.end());
      p.tile_bytes_written += k;
      if (p.tile_bytes_written < tile.bytes) break;  // the call ends inside this tile
      // Only a call's first tile can complete from held bytes; later ones start in this call.
      held_done.swap(held);
      held.clear();
      p.tile_bytes_written = 0;
      ready.push_back({tile, held_done});
    }
    if (++p.tiles_written % p.row_tiles == 0) ++p.rows_written;
  }
  compressed.resize(std::max(compressed.size(), ready.size()));
  const codec::ZstdOptions zopts{p.zstd_level, /*content_size=*/true, /*checksum=*/false};
  detail::compress_then_write_in_order([&](std::uint64_t n, const auto& f) { for_each(n, f); }, ready.size(),
                                       [&](std::uint64_t i) {
                                         compressed[i].clear();
                                         codec::zstd_compress_append(ready[i].data, compressed[i], zopts);
                                       },
                                       [&](std::uint64_t i) {
                                         record_entry(id, ready[i].tile.coords, sink->position(), ready[i].tile.bytes,
                                                      compressed[i].size(), checksum(compressed[i]));
                                         sink->write(compressed[i]);
                                       });
  p.bytes_written += bytes.size();
  if (p.complete()) advance();
}

void TetWriter::State::patch_index() {
  std::vector<std::byte> block;
  block.reserve(kIoBlock + ChunkEntry::kSize);
  block.resize(ChunkIndexHeader::kSize);
  ChunkIndexHeader header;
  header.entry_count = entry_count;
  header.memory_budget_percent_bps = options.memory_budget_percent_bps;
  header.memory_budget_bytes = options.memory_budget_bytes;
  header.encode_to(block.data());
  std::uint64_t at = superblock.chunk_index_offset;
  for (const ChunkEntry& e : entries) {
    const std::size_t old = block.size();
    block.resize(old + ChunkEntry::kSize);
    e.encode_to(block.data() + old);
    if (block.size() >= kIoBlock) {
      sink->write_at(at, block);
      at += block.size();
      block.clear();
    }
  }
  if (!block.empty()) sink->write_at(at, block);
}

void TetWriter::State::init(io::ByteSink& target, WriterOptions opts) {
  if (target.position() != 0)
    throw UsageError("TetWriter needs an empty sink (position " + std::to_string(target.position()) + ")");
  sink = &target;
  options = std::move(opts);
  if (options.threads > 1) arena.emplace(static_cast<int>(options.threads));
  // Fail before any data is streamed rather than at commit.
  if (auto broken = check_limits(options.history, options.metadata))
    throw LimitError("history footer metadata exceeds limits: " + *broken, {}, "history footer");
}

TetWriter::TetWriter(io::ByteSink& sink, WriterOptions options) : state_(std::make_unique<State>()) {
  state_->init(sink, std::move(options));
}

TetWriter::TetWriter(const std::string& path, WriterOptions options) : state_(std::make_unique<State>()) {
  state_->owned_sink = std::make_unique<io::AtomicFileSink>(path);
  state_->init(*state_->owned_sink, std::move(options));
}

TetWriter::~TetWriter() = default;
TetWriter::TetWriter(TetWriter&&) noexcept = default;
TetWriter& TetWriter::operator=(TetWriter&&) noexcept = default;

void TetWriter::carry_over(const TetFile& file) {
  State& s = *state_;
  if (s.phase != Phase::Declaring || !s.datasets.empty()) throw UsageError("carry_over must come first");
  for (const Dataset& ds : file.datasets()) {
    DatasetPlan p = detail::make_plan(file.layout().datasets[ds.id], ds.dtype, ds.id);
    p.rows_written = p.rows();
    s.datasets.push_back(std::move(p));
  }
  s.carried = &file;
  s.carried_count = static_cast<std::uint32_t>(s.datasets.size());
  s.cursor = s.carried_count;
  s.entry_count = file.layout().entries.size();
}

std::uint32_t TetWriter::add_dataset(const DatasetSpec& spec) {
  State& s = *state_;
  s.require_open("add_dataset");
  if (s.phase != Phase::Declaring)
    throw UsageError(spec_prefix(spec.name) + "every dataset must be declared before any data is written");
  validate_dataset_spec(spec);
  for (std::uint32_t id = 0; id < s.datasets.size(); ++id)
    if (s.datasets[id].record.name == spec.name)
      throw UsageError(spec_prefix(spec.name) + "duplicate dataset name (already dataset " + std::to_string(id) + ")",
                       {}, "dataset directory");
  if (s.datasets.size() >= UINT32_MAX) throw LimitError("too many datasets for a u32 dataset_count");
  DatasetRecord record;
  record.name = spec.name;
  record.dtype_tag = tag_from_dtype(spec.dtype);
  record.shape = spec.shape;
  record.chunk_shape = spec.chunk_shape;
  DatasetPlan p = detail::make_plan(record, spec.dtype, static_cast<std::uint32_t>(s.datasets.size()));
  p.codec = spec.codec;
  p.zstd_level = spec.zstd_level;
  std::uint64_t tiles = 1;
  for (auto g : p.geometry.grid) tiles *= g;  // at most the element count, which fits (validated above)
  const std::uint64_t entries = checked_add(s.entry_count, tiles, "chunk index entry count");
  (void)checked_add(ChunkIndexHeader::kSize, checked_mul(entries, ChunkEntry::kSize, "chunk index length"),
                    "chunk index length");
  s.entry_count = entries;
  s.datasets.push_back(std::move(p));
  return static_cast<std::uint32_t>(s.datasets.size() - 1);
}

void TetWriter::write_chunk_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab) {
  State& s = *state_;
  DatasetPlan& p = s.due(id, "write_chunk_row");
  s.require_row_boundary(id, "write_chunk_row");
  if (row != p.rows_written)
    throw UsageError(s.prefix(id) + (row >= p.rows() ? "chunk row " + std::to_string(row) + " is outside the grid (" +
                                                           std::to_string(p.rows()) + " rows)"
                                                     : "expected chunk row " + std::to_string(p.rows_written) +
                                                           ", got " + std::to_string(row)));
  if (slab.size() != p.row_bytes(row))
    throw UsageError(s.prefix(id) + "chunk row " + std::to_string(row) + " needs " + std::to_string(p.row_bytes(row)) +
                     " bytes, got " + std::to_string(slab.size()));
  s.guarded([&] {
    if (s.phase == Phase::Declaring) s.begin();
    s.write_row(id, row, slab);
  });
}

void TetWriter::write_dataset(std::uint32_t id, std::span<const std::byte> data) {
  State& s = *state_;
  DatasetPlan& p = s.due(id, "write_dataset");
  s.require_row_boundary(id, "write_dataset");
  if (p.rows_written != 0)
    throw UsageError(s.prefix(id) + "write_dataset needs a dataset with no rows written (" +
                     std::to_string(p.rows_written) + " of " + std::to_string(p.rows()) + " written)");
  const std::uint64_t logical = p.geometry.logical_bytes;
  if (data.size() != logical)
    throw UsageError(s.prefix(id) + "write_dataset needs " + std::to_string(logical) + " bytes, got " +
                     std::to_string(data.size()));
  s.guarded([&] {
    if (s.phase == Phase::Declaring) s.begin();
    std::uint64_t offset = 0;
    for (std::uint64_t row = 0; row < p.rows(); ++row) {
      const std::uint64_t n = p.row_bytes(row);
      s.write_row(id, row, data.subspan(offset, n));
      offset += n;
    }
  });
}

void TetWriter::append_raw_tiles(std::uint32_t id, std::span<const std::byte> bytes) {
  State& s = *state_;
  const DatasetPlan& p = s.due(id, "append_raw_tiles");
  if (p.codec != Codec::Raw)
    throw UsageError(s.prefix(id) + "append_raw_tiles needs a raw-codec dataset (this one is " +
                     std::string(codec_name(p.codec)) + ")");
  s.append_tiles(id, bytes, "append_raw_tiles");
}

void TetWriter::append_tiles(std::uint32_t id, std::span<const std::byte> bytes) {
  State& s = *state_;
  s.due(id, "append_tiles");
  s.append_tiles(id, bytes, "append_tiles");
}

void TetWriter::commit() {
  State& s = *state_;
  s.require_open("commit");
  if (s.phase == Phase::Writing && s.cursor < s.datasets.size()) {
    const DatasetPlan& p = s.datasets[s.cursor];
    throw UsageError(s.prefix(s.cursor) + std::to_string(p.rows_written) + " of " + std::to_string(p.rows()) +
                     " chunk rows written; every dataset needs all its data before commit");
  }
  if (s.phase == Phase::Declaring && s.cursor < s.datasets.size())
    throw UsageError(s.prefix(s.cursor) + "no data written; every dataset needs all its data before commit");
  // Limits are checked before anything is written, so the caller can fix the footer and retry.
  if (auto broken = check_limits(s.options.history, s.options.metadata))
    throw LimitError("history footer metadata exceeds limits: " + *broken, {}, "history footer");
  s.guarded([&] {
    if (s.phase == Phase::Declaring) s.begin();
    const std::uint64_t payload_end = s.sink->position();
    FooterExtension& extension = s.options.extension;
    if (s.options.chunk_checksums) extension.chunk_crc32c = s.crcs;
    const std::vector<std::byte> footer = encode_footer(s.options.history, s.options.metadata, extension, payload_end);
    if (!footer.empty()) {
      s.sink->write(footer);
      s.superblock.flags |= Superblock::kHistoryFooterFlag;
    }
    std::byte sb[Superblock::kSize];
    s.superblock.encode_to(sb);
    s.sink->write_at(0, sb);
    if (!s.datasets.empty()) s.patch_index();
    s.sink->commit();
    s.file_size = payload_end + footer.size();
  });
  s.phase = Phase::Committed;
}

std::vector<HistoryRow>& TetWriter::history() { return state_->options.history; }
Metadata& TetWriter::metadata() { return state_->options.metadata; }
FooterExtension& TetWriter::extension() { return state_->options.extension; }
std::uint32_t TetWriter::dataset_count() const { return static_cast<std::uint32_t>(state_->datasets.size()); }
std::uint64_t TetWriter::chunk_count() const { return state_->entry_count; }
std::uint64_t TetWriter::file_size() const { return state_->file_size; }

std::uint64_t TetWriter::chunk_rows(std::uint32_t id) const {
  if (id >= state_->datasets.size()) throw UsageError("no dataset with id " + std::to_string(id));
  return state_->datasets[id].rows();
}

std::uint64_t TetWriter::chunk_row_bytes(std::uint32_t id, std::uint64_t row) const {
  if (id >= state_->datasets.size()) throw UsageError("no dataset with id " + std::to_string(id));
  const DatasetPlan& p = state_->datasets[id];
  if (row >= p.rows()) throw UsageError("chunk row " + std::to_string(row) + " is outside the grid");
  return p.row_bytes(row);
}

}  // namespace tessera::tet
