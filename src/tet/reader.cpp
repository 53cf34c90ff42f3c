// TetFile: semantic validation (§1.9 B), chunk lookup, chunk decoding and strided box reads.
#include "tessera/tet/reader.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/prefetching_source.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet/read_ahead.hpp"

namespace tessera::tet {
namespace {

std::string bracketed(std::span<const std::uint64_t> v) { return "[" + join_coords(v, ", ") + "]"; }

std::string dataset_prefix(std::uint32_t id, const DatasetRecord& r) { return dataset_label(id, r.name) + ": "; }

// Chunks along one axis: ceil(shape / cs), written so that extents near 2^64 cannot wrap.
std::uint64_t grid_len(std::uint64_t shape, std::uint64_t cs) { return shape / cs + (shape % cs != 0); }

// Clipped tile extent along one axis (c inside the grid, so c·cs < shape). `begin + cs` could
// wrap for chunk extents near 2^64, hence the subtraction form.
std::uint64_t tile_len(std::uint64_t c, std::uint64_t cs, std::uint64_t shape) {
  const std::uint64_t begin = c * cs;
  return std::min(cs, shape - begin);
}

// The first index selected by `r` at or after `lo` (lo ≥ r.start), or nullopt when it would lie
// beyond 2^64 - 1 (and so beyond any stop).
std::optional<std::uint64_t> first_selected_from(const AxisRange& r, std::uint64_t lo) {
  const std::uint64_t gap = lo - r.start;
  const std::uint64_t steps = gap / r.step + (gap % r.step != 0);
  const auto offset = mul_u64(steps, r.step);
  return offset ? add_u64(r.start, *offset) : std::nullopt;
}

}  // namespace

std::string quoted_name(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string dataset_label(std::uint64_t id, std::string_view name) {
  return "dataset " + std::to_string(id) + " (" + quoted_name(name) + ")";
}

std::optional<std::string> dataset_id_violation(const Layout& L) {
  const std::uint64_t n = L.datasets.size();
  for (std::size_t i = 0; i < L.entries.size(); ++i)
    if (L.entries[i].dataset_id >= n)
      return "chunk " + std::to_string(i) + ": dataset_id " + std::to_string(L.entries[i].dataset_id) +
             " >= dataset_count " + std::to_string(n);
  return std::nullopt;
}

namespace {

// The semantic rules of dataset `id`, given the indices of its entries in index order. Taking
// the entries from the caller keeps a whole-file check linear: scanning every entry per dataset
// made opening a file with many small datasets quadratic.
std::optional<std::string> rule_violation(const Layout& L, std::uint32_t id, std::span<const std::size_t> entries) {
  const DatasetRecord& r = L.datasets[id];
  const std::string prefix = dataset_prefix(id, r);
  const auto dtype = dtype_from_tag(r.dtype_tag);
  if (!dtype) return prefix + "unsupported dtype tag " + std::to_string(r.dtype_tag);
  const std::size_t nd = r.ndim();
  std::optional<std::uint64_t> bytes = dtype_size(*dtype);
  std::vector<std::uint64_t> grid(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    if (r.shape[d] == 0 || r.chunk_shape[d] == 0) return prefix + "zero extent in shape or chunk_shape";
    if (bytes) bytes = mul_u64(*bytes, r.shape[d]);
    grid[d] = grid_len(r.shape[d], r.chunk_shape[d]);
  }
  if (!bytes) return prefix + "logical tensor byte length overflow";

  // Coordinates of this dataset's entries, in index order.
  std::vector<std::pair<std::array<std::uint64_t, kMaxRank>, std::size_t>> coords;
  for (const std::size_t i : entries) {
    const ChunkEntry& e = L.entries[i];
    for (std::size_t d = 0; d < nd; ++d)
      if (e.chunk_index[d] >= grid[d])
        return prefix + "chunk " + std::to_string(i) + " coordinate " + bracketed({e.chunk_index.data(), nd}) +
               " outside grid " + bracketed(grid);
    std::array<std::uint64_t, kMaxRank> c{};
    std::copy_n(e.chunk_index.begin(), nd, c.begin());
    coords.emplace_back(c, i);
  }
  std::vector<std::size_t> order(coords.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return coords[a] < coords[b]; });
  for (std::size_t k = 1; k < order.size(); ++k)
    if (coords[order[k]].first == coords[order[k - 1]].first)
      return prefix + "duplicate chunk coordinate " + bracketed({coords[order[k]].first.data(), nd});

  std::optional<std::uint64_t> expected = 1;
  for (auto g : grid)
    if (expected) expected = mul_u64(*expected, g);
  if (!expected || *expected != coords.size()) {
    return prefix + "chunk count " + std::to_string(coords.size()) + " != expected grid " +
           (expected ? std::to_string(*expected) : std::string("overflow"));
  }
  // Counts match and there are no duplicates or out-of-grid cells, so every cell is present;
  // the "missing chunk coordinate" text of the spec cannot arise here.
  for (const auto& [c, i] : coords) {
    std::uint64_t tile = dtype_size(*dtype);
    for (std::size_t d = 0; d < nd; ++d) tile *= tile_len(c[d], r.chunk_shape[d], r.shape[d]);
    if (L.entries[i].raw_byte_len != tile)
      return "dataset " + std::to_string(id) + " chunk " + std::to_string(i) + ": raw_byte_len " +
             std::to_string(L.entries[i].raw_byte_len) + " != tile " + std::to_string(tile);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> dataset_rule_violation(const Layout& L, std::uint32_t id) {
  std::vector<std::size_t> entries;
  for (std::size_t i = 0; i < L.entries.size(); ++i)
    if (L.entries[i].dataset_id == id) entries.push_back(i);
  return rule_violation(L, id, entries);
}

std::vector<std::optional<std::string>> dataset_rule_violations(const Layout& L) {
  // Entry indices grouped by dataset (a counting sort that keeps index order within a group);
  // entries with an out-of-range dataset_id belong to no group.
  const std::size_t n = L.datasets.size();
  std::vector<std::size_t> start(n + 1, 0);
  for (const auto& e : L.entries)
    if (e.dataset_id < n) ++start[e.dataset_id + 1];
  for (std::size_t id = 0; id < n; ++id) start[id + 1] += start[id];
  std::vector<std::size_t> grouped(start[n]);
  std::vector<std::size_t> cursor(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < L.entries.size(); ++i)
    if (L.entries[i].dataset_id < n) grouped[cursor[L.entries[i].dataset_id]++] = i;
  std::vector<std::optional<std::string>> out(n);
  for (std::uint32_t id = 0; id < n; ++id)
    out[id] = rule_violation(L, id, std::span(grouped).subspan(start[id], start[id + 1] - start[id]));
  return out;
}

Box Dataset::full_box() const {
  Box box(ndim());
  for (std::size_t d = 0; d < ndim(); ++d) box[d] = {0, shape[d], 1};
  return box;
}

std::uint64_t Dataset::chunk_ordinal(std::span<const std::uint64_t> coords) const noexcept {
  std::uint64_t ordinal = 0;
  for (std::size_t d = 0; d < ndim(); ++d) ordinal = ordinal * grid[d] + coords[d];
  return ordinal;
}

void Dataset::tile_extent(std::span<const std::uint64_t> coords, std::span<std::uint64_t> origin,
                          std::span<std::uint64_t> extent) const noexcept {
  for (std::size_t d = 0; d < ndim(); ++d) {
    origin[d] = coords[d] * chunk_shape[d];
    extent[d] = tile_len(coords[d], chunk_shape[d], shape[d]);
  }
}

TetFile::TetFile(std::shared_ptr<const io::ByteSource> source, Layout layout)
    : source_(std::move(source)), layout_(std::move(layout)) {}

TetFile TetFile::open(const std::string& path, io::OpenMode mode) {
  return open(std::shared_ptr<const io::ByteSource>(io::open_source(path, {.mode = mode})));
}

namespace {

// What a remote open fetches first, in one parallel batch: this much of the head (superblock,
// dataset directory and, for up to about a thousand chunks, the chunk index) and of the tail
// (footer). Ranges closer than 1 MiB are one request, so a file under about 1 MiB is read whole.
constexpr std::uint64_t kSpeculativeHeadBytes = std::uint64_t{64} * 1024;
constexpr std::uint64_t kSpeculativeTailBytes = std::uint64_t{64} * 1024;

}  // namespace

// A source that is not memory-resident (a remote object, a pread file) is wrapped so that the
// metadata reads of the open are served from one prefetch instead of one request each.
std::shared_ptr<const io::ByteSource> with_metadata_prefetched(std::shared_ptr<const io::ByteSource> source) {
  auto wrapped = std::make_shared<io::PrefetchingSource>(source);
  if (!wrapped->fetches()) return source;  // mapped or in memory: reads cost nothing to batch
  const std::uint64_t size = wrapped->size();
  const std::uint64_t tail = std::min(size, kSpeculativeTailBytes);
  const io::ByteRange ends[] = {{0, std::min(size, kSpeculativeHeadBytes)}, {size - tail, tail}};
  wrapped->prefetch(ends);
  return wrapped;
}

TetFile TetFile::open(std::shared_ptr<const io::ByteSource> source) {
  source = with_metadata_prefetched(std::move(source));
  Layout layout = parse_layout(*source);
  const std::string& path = source->name();
  if (auto broken = dataset_id_violation(layout)) throw FormatError(*broken, path, "chunk index");
  for (auto& broken : dataset_rule_violations(layout))
    if (broken) throw FormatError(*broken, path, "dataset directory");

  TetFile file(std::move(source), std::move(layout));
  const Layout& L = file.layout_;
  file.datasets_.reserve(L.datasets.size());
  for (std::uint32_t id = 0; id < L.datasets.size(); ++id) {
    const DatasetRecord& r = L.datasets[id];
    Dataset ds;
    ds.id = id;
    ds.name = r.name;
    ds.dtype = *dtype_from_tag(r.dtype_tag);
    ds.shape = r.shape;
    ds.chunk_shape = r.chunk_shape;
    ds.element_count = 1;
    std::uint64_t cells = 1;
    for (std::size_t d = 0; d < r.ndim(); ++d) {
      ds.grid.push_back(grid_len(r.shape[d], r.chunk_shape[d]));
      ds.element_count *= r.shape[d];
      cells *= ds.grid.back();
    }
    ds.logical_bytes = ds.element_count * ds.element_size();
    ds.entry_of_chunk.assign(cells, 0);
    file.datasets_.push_back(std::move(ds));
  }
  for (std::uint32_t i = 0; i < L.entries.size(); ++i) {
    Dataset& ds = file.datasets_[L.entries[i].dataset_id];
    ds.entry_of_chunk[ds.chunk_ordinal({L.entries[i].chunk_index.data(), ds.ndim()})] = i;
  }
  return file;
}

const Dataset* TetFile::find(std::string_view name) const noexcept {
  for (const auto& ds : datasets_)
    if (ds.name == name) return &ds;
  return nullptr;
}

const DatasetMetadata* TetFile::metadata_of(std::string_view name) const noexcept {
  if (!layout_.footer) return nullptr;
  const auto& m = layout_.footer->metadata.datasets;
  auto it = m.find(std::string(name));
  return it == m.end() ? nullptr : &it->second;
}

namespace {

// The most bytes a zstd frame header can take (ZSTD_FRAMEHEADERSIZE_MAX).
constexpr std::size_t kZstdFrameHeaderMax = 18;

// The stored bytes of a chunk: a view into memory-resident sources, else a per-thread copy
// (valid until the next call on the same thread).
std::span<const std::byte> stored_payload(const io::ByteSource& source, const ChunkEntry& e, io::ReadPath path) {
  if (path != io::ReadPath::Pread)
    if (const std::byte* p = source.view(e.payload_offset, e.stored_byte_len))
      return {p, checked_size(e.stored_byte_len)};
  thread_local std::vector<std::byte> staging;
  staging.resize(checked_size(e.stored_byte_len));
  source.read_at(e.payload_offset, staging);
  return staging;
}

// A chunk whose bytes were read but do not decode is a FormatError naming the chunk; a failed read
// stays the IoError it is (callers treat the two differently: `verify` reports the first as a
// damaged chunk and stops on the second).
[[noreturn]] void rethrow_as_chunk_error(const io::ByteSource& source, std::uint64_t entry_index, const Error& err) {
  throw FormatError("chunk " + std::to_string(entry_index) + ": " + err.what(), source.name(), "chunk payload");
}

}  // namespace

void decode_chunk_payload(const io::ByteSource& source, const ChunkEntry& e, std::uint64_t entry_index,
                          std::span<std::byte> dst, io::ReadPath path) {
  if (dst.size() != e.raw_byte_len)
    throw UsageError("decode_chunk: destination is " + std::to_string(dst.size()) + " bytes, chunk is " +
                     std::to_string(e.raw_byte_len));
  try {
    switch (entry_codec(e)) {
      case Codec::Raw: source.read_at(e.payload_offset, dst); return;
      case Codec::Zstd: codec::zstd_decompress_into(stored_payload(source, e, path), dst); return;
    }
  } catch (const IoError&) {
    throw;  // the bytes could not be read (a disk or a network failure): not a damaged chunk
  } catch (const Error& err) {
    rethrow_as_chunk_error(source, entry_index, err);
  }
}

void check_chunk_payload(const io::ByteSource& source, const ChunkEntry& e, std::uint64_t entry_index,
                         const std::uint32_t* recorded_crc) {
  // Raw tiles are no larger than the file (S13); zstd tiles can claim any size, so large ones
  // are only streamed through a window instead of being decoded whole. The stored bytes are read
  // once, for the checksum and the decode alike.
  constexpr std::uint64_t kWholeTileBytes = std::uint64_t{16} << 20;
  const std::span<const std::byte> stored =
      stored_payload(source, e, io::ReadPath::Mmap);  // a failed read stays an IoError
  if (recorded_crc != nullptr) {
    const std::uint32_t computed = codec::crc32c(stored);
    if (computed != *recorded_crc)
      throw FormatError(checksum_mismatch(entry_index, *recorded_crc, computed), source.name(), "chunk payload");
  }
  try {
    switch (entry_codec(e)) {
      case Codec::Raw: return;  // the stored bytes are the tile
      case Codec::Zstd:
        if (e.raw_byte_len > kWholeTileBytes) {
          codec::zstd_check_decoded_length(stored, e.raw_byte_len);
        } else {
          thread_local std::vector<std::byte> tile;
          tile.resize(checked_size(e.raw_byte_len, "chunk raw_byte_len"));
          codec::zstd_decompress_into(stored, tile);
        }
        return;
    }
  } catch (const Error& err) {
    rethrow_as_chunk_error(source, entry_index, err);
  }
}

std::uint32_t chunk_crc32c(const io::ByteSource& source, const ChunkEntry& e) {
  return codec::crc32c(stored_payload(source, e, io::ReadPath::Mmap));
}

std::string checksum_mismatch(std::uint64_t entry_index, std::uint32_t recorded, std::uint32_t computed) {
  auto hex = [](std::uint32_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out = "0x00000000";
    for (std::size_t i = 9; i >= 2; --i, v >>= 4) out[i] = kDigits[v & 0xf];
    return out;
  };
  return "chunk " + std::to_string(entry_index) + ": stored bytes do not match their CRC-32C (recorded " +
         hex(recorded) + ", computed " + hex(computed) + ")";
}

void TetFile::check_chunk_checksum(std::uint32_t entry_index) const {
  const auto& footer = layout_.footer;
  if (!footer || !footer->extension) return;
  const auto& crcs = footer->extension->chunk_crc32c;
  if (crcs.size() != layout_.entries.size()) return;  // none recorded (a wrong count is verify's to report)
  const std::uint32_t computed = chunk_crc32c(*source_, layout_.entries[entry_index]);
  if (computed != crcs[entry_index])
    throw FormatError(checksum_mismatch(entry_index, crcs[entry_index], computed), source_->name(), "chunk payload");
}

void TetFile::decode_chunk(std::uint32_t entry_index, std::span<std::byte> dst, io::ReadPath path) const {
  decode_chunk_payload(*source_, layout_.entries[entry_index], entry_index, dst, path);
}

void TetFile::decode_chunk_into(std::uint32_t entry_index, std::vector<std::byte>& scratch, io::ReadPath path) const {
  const ChunkEntry& e = layout_.entries[entry_index];
  switch (entry_codec(e)) {
    case Codec::Raw: break;  // bounded by the file (S13): nothing to prove first
    case Codec::Zstd: {
      // Raw tiles are bounded by the file (S13); a zstd tile only by its payload's expansion, which
      // no valid payload takes past 32768:1. A first frame that declares more than the tile fails too.
      if (e.raw_byte_len > codec::zstd_max_decoded_size(e.stored_byte_len)) {
        rethrow_as_chunk_error(*source_, entry_index,
                               FormatError("raw_byte_len " + std::to_string(e.raw_byte_len) + " is more than a " +
                                           std::to_string(e.stored_byte_len) + "-byte zstd payload can decode to"));
      }
      // The frame header: a view of a memory-resident source, else one small read.
      std::array<std::byte, kZstdFrameHeaderMax> header{};
      const std::size_t head_len = static_cast<std::size_t>(std::min<std::uint64_t>(e.stored_byte_len, header.size()));
      std::span<const std::byte> head;
      const std::byte* p = path == io::ReadPath::Pread ? nullptr : source_->view(e.payload_offset, head_len);
      if (p != nullptr) {
        head = {p, head_len};
      } else {
        source_->read_at(e.payload_offset, std::span(header).first(head_len));
        head = std::span(header).first(head_len);
      }
      const auto declared = codec::zstd_frame_content_size(head);
      if (declared && *declared > e.raw_byte_len) {
        rethrow_as_chunk_error(*source_, entry_index,
                               FormatError("decoded payload length " + std::to_string(*declared) + " != raw_byte_len " +
                                           std::to_string(e.raw_byte_len)));
      }
      // A large tile that expands far more than ordinary data does (constant fill chunks do, crafted
      // files claim to) is first proven by streaming it through a small window.
      constexpr std::uint64_t kLargeTile = std::uint64_t{16} << 20;
      constexpr std::uint64_t kOrdinaryExpansion = 64;
      if (e.raw_byte_len > kLargeTile && e.raw_byte_len / kOrdinaryExpansion > e.stored_byte_len)
        check_chunk_payload(*source_, e, entry_index);
      break;
    }
  }
  scratch.resize(checked_size(e.raw_byte_len, "chunk raw_byte_len"));
  decode_chunk(entry_index, std::span<std::byte>(scratch), path);
}

std::vector<std::uint64_t> touched_chunks(const AxisRange& r, std::uint64_t cs) {
  std::vector<std::uint64_t> out;
  if (r.count() == 0) return out;
  // A chunk is touched when the first selected index at or after its start lies inside it.
  for (std::uint64_t c = r.start / cs; c <= (r.stop - 1) / cs; ++c) {
    const std::uint64_t begin = c * cs;  // <= stop - 1, so neither this nor `end` wraps
    const std::uint64_t end = begin + std::min(cs, r.stop - begin);
    const auto first = first_selected_from(r, std::max(begin, r.start));
    if (first && *first < end) out.push_back(c);
  }
  return out;
}

namespace {

// Per-axis mapping of a tile onto the box: which tile-local indices are selected and where the
// first one lands in the output.
struct AxisCopy {
  std::uint64_t tile_first = 0;  // first selected tile-local index
  std::uint64_t count = 0;       // selected indices in this tile
  std::uint64_t step = 1;
  std::uint64_t out_first = 0;  // output index of the first selected one
};

// The byte offset in the output of a tile that is selected whole and fills one contiguous run of
// it: every axis after some axis k covers the output's whole extent, every axis before k one
// index. Such a tile can be decoded straight into place. nullopt for any other tile.
std::optional<std::uint64_t> contiguous_offset(std::span<const std::uint64_t> extent, const std::vector<AxisCopy>& axes,
                                               std::span<const std::uint64_t> out_shape, std::size_t es) {
  const std::size_t nd = axes.size();
  for (std::size_t d = 0; d < nd; ++d)
    if (axes[d].step != 1 || axes[d].tile_first != 0 || axes[d].count != extent[d]) return std::nullopt;
  std::size_t k = nd - 1;  // the outermost axis from which on the tile spans the output
  while (k > 0 && axes[k].count == out_shape[k]) --k;
  for (std::size_t d = 0; d < k; ++d)
    if (axes[d].count != 1) return std::nullopt;
  std::uint64_t offset = 0, stride = 1;
  for (std::size_t d = nd; d-- > 0;) {
    offset += axes[d].out_first * stride;
    stride *= out_shape[d];
  }
  return offset * es;
}

template <typename T>
void copy_strided(std::byte* out, const std::byte* in, std::uint64_t n, std::uint64_t step) {
  for (std::uint64_t k = 0; k < n; ++k) std::memcpy(out + k * sizeof(T), in + k * step * sizeof(T), sizeof(T));
}

// Copies the selected elements of one decoded tile into the box-shaped output.
void scatter_tile(const std::byte* tile, std::span<const std::uint64_t> extent, const std::vector<AxisCopy>& axes,
                  std::span<const std::uint64_t> out_shape, std::size_t es, std::byte* out) {
  const std::size_t nd = axes.size();
  std::array<std::uint64_t, kMaxRank> in_stride{}, out_stride{}, idx{};
  in_stride[nd - 1] = out_stride[nd - 1] = 1;
  for (std::size_t d = nd - 1; d-- > 0;) {
    in_stride[d] = in_stride[d + 1] * extent[d + 1];
    out_stride[d] = out_stride[d + 1] * out_shape[d + 1];
  }
  const AxisCopy& inner = axes[nd - 1];
  while (true) {
    std::uint64_t in_off = inner.tile_first, out_off = inner.out_first;
    for (std::size_t d = 0; d + 1 < nd; ++d) {
      in_off += (axes[d].tile_first + idx[d] * axes[d].step) * in_stride[d];
      out_off += (axes[d].out_first + idx[d]) * out_stride[d];
    }
    const std::byte* src = tile + in_off * es;
    std::byte* dst = out + out_off * es;
    if (inner.step == 1) {
      std::memcpy(dst, src, inner.count * es);
    } else {
      switch (es) {
        case 1: copy_strided<std::uint8_t>(dst, src, inner.count, inner.step); break;
        case 2: copy_strided<std::uint16_t>(dst, src, inner.count, inner.step); break;
        case 4: copy_strided<std::uint32_t>(dst, src, inner.count, inner.step); break;
        default: copy_strided<std::uint64_t>(dst, src, inner.count, inner.step); break;
      }
    }
    std::size_t d = nd - 1;
    while (d-- > 0) {
      if (++idx[d] < axes[d].count) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace

void TetFile::read_box(const Dataset& ds, const Box& box, std::span<std::byte> dst, const ReadOptions& options) const {
  const std::size_t nd = ds.ndim();
  const std::size_t es = ds.element_size();
  if (box.size() != nd) throw UsageError("read_box: box rank " + std::to_string(box.size()) + " != dataset rank");
  std::vector<std::uint64_t> out_shape(nd);
  std::uint64_t out_elems = 1;
  std::vector<std::vector<std::uint64_t>> touched(nd);
  std::uint64_t tiles = 1;
  for (std::size_t d = 0; d < nd; ++d) {
    const AxisRange& r = box[d];
    if (r.step == 0 || r.start >= r.stop || r.stop > ds.shape[d])
      throw UsageError("read_box: axis " + std::to_string(d) + " range is outside the dataset");
    out_shape[d] = r.count();
    out_elems *= out_shape[d];
    touched[d] = touched_chunks(r, ds.chunk_shape[d]);
    tiles *= touched[d].size();
  }
  if (dst.size() != out_elems * es)
    throw UsageError("read_box: destination is " + std::to_string(dst.size()) + " bytes, selection is " +
                     std::to_string(out_elems * es));

  // Tile t's grid coordinates: row-major over the touched chunks of each axis.
  auto coords_of_tile = [&](std::uint64_t t, std::array<std::uint64_t, kMaxRank>& coords) {
    for (std::size_t d = nd; d-- > 0;) {
      coords[d] = touched[d][t % touched[d].size()];
      t /= touched[d].size();
    }
  };
  // A remote file's chunks are fetched ahead of the copies, in few parallel requests.
  std::shared_ptr<ChunkReadAhead> ahead;
  if (tiles > 1 && ChunkReadAhead::fetches(*this)) {
    std::vector<std::uint32_t> entries(checked_size(tiles));
    std::array<std::uint64_t, kMaxRank> coords{};
    for (std::uint64_t t = 0; t < tiles; ++t) {
      coords_of_tile(t, coords);
      entries[t] = ds.entry_of_chunk[ds.chunk_ordinal({coords.data(), nd})];
    }
    ahead = ChunkReadAhead::for_entries(*this, entries);
  }

  // Frames are decoded from the map or copied out first, as the machine measured (io/read_path.hpp).
  io::ReadPath path = io::ReadPath::Mmap;
  if (!ds.entry_of_chunk.empty()) {
    const std::uint64_t at = layout_.entries[ds.entry_of_chunk.front()].payload_offset;
    path = io::choose_read_path(*source_, at, source_->size() - at, dst.size()).chosen;
  }

  auto read_tile = [&](std::uint64_t t) {
    std::array<std::uint64_t, kMaxRank> coords{}, origin{}, extent{};
    coords_of_tile(t, coords);
    ds.tile_extent({coords.data(), nd}, {origin.data(), nd}, {extent.data(), nd});
    std::vector<AxisCopy> axes(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const AxisRange& r = box[d];
      const std::uint64_t lo = std::max(origin[d], r.start);
      const std::uint64_t first = first_selected_from(r, lo).value_or(UINT64_MAX);
      const std::uint64_t hi = std::min(origin[d] + extent[d], r.stop);
      AxisCopy& a = axes[d];
      a.step = r.step;
      a.count = first < hi ? (hi - first - 1) / r.step + 1 : 0;
      a.tile_first = first - origin[d];
      a.out_first = (first - r.start) / r.step;
      if (a.count == 0) return;
    }
    const std::uint32_t entry = ds.entry_of_chunk[ds.chunk_ordinal({coords.data(), nd})];
    ChunkReadAhead::Hold hold;
    if (ahead) hold = ahead->before(t);
    if (options.verify_checksums) check_chunk_checksum(entry);
    // A raw tile that fills a run of the output is read straight into it: one copy out of the
    // page cache, none through a staging buffer (a whole-array read of row-chunked data). Its
    // raw_byte_len is the tile's extent in bytes: open rejects a file where it is not.
    const ChunkEntry& e = layout_.entries[entry];
    if (entry_codec(e) == Codec::Raw)
      if (const auto at = contiguous_offset({extent.data(), nd}, axes, out_shape, es)) {
        decode_chunk(entry, dst.subspan(checked_size(*at), checked_size(e.raw_byte_len)), path);
        return;
      }
    thread_local std::vector<std::byte> scratch;
    decode_chunk_into(entry, scratch, path);
    scatter_tile(scratch.data(), {extent.data(), nd}, axes, out_shape, es, dst.data());
  };

  if (ahead) {  // in tile order, which is the order the read-ahead fetches them in
    for_each_in_order(checked_size(tiles), options.threads, [&](std::size_t t) { read_tile(t); });
    return;
  }
  auto run = [&] {
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, tiles, 1), [&](const tbb::blocked_range<std::uint64_t>& rg) {
      for (std::uint64_t t = rg.begin(); t != rg.end(); ++t) read_tile(t);
    });
  };
  if (options.threads == 1 || tiles == 1) {
    for (std::uint64_t t = 0; t < tiles; ++t) read_tile(t);
  } else if (options.threads > 1) {
    tbb::task_arena arena(static_cast<int>(options.threads));
    arena.execute(run);
  } else {
    run();
  }
}

}  // namespace tessera::tet
