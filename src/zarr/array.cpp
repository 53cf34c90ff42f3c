// Array reads over a Store: geometry, the minimum-GET chunk reads of both storage geometries,
// whole-object reads, dense boxes and vlen chunks.
#include "tessera/zarr/array.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "nd_runs.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/kept.hpp"

namespace tessera::zarr {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

std::uint64_t product(const Coords& v, std::string_view what) {
  std::uint64_t n = 1;
  for (const auto x : v) n = checked_mul(n, x, what);
  return n;
}

std::string coords_text(const Coords& c) {
  std::string out = "(";
  for (std::size_t i = 0; i < c.size(); ++i) out += (i ? ", " : "") + std::to_string(c[i]);
  return out + ")";
}

}  // namespace

// ---- construction and geometry ------------------------------------------------------------

Array Array::open(const io::Store& store, std::string path, ReadOptions options) {
  if (!path.empty() && !io::is_valid_key(path)) throw UsageError("invalid array path '" + path + "'", store.name());
  const std::string key = io::join_key(path, kMetadataName);
  const auto bytes = store.get(key);
  if (!bytes) fail_at<FormatError>(key, "zarr.json", "missing: no array metadata at this key");
  return Array(store, std::move(path), decode_array(*bytes, key), options);
}

Array::Array(const io::Store& store, std::string path, ArrayMeta meta, ReadOptions options)
    : store_(&store), path_(std::move(path)), meta_(std::move(meta)), options_(options) {
  const std::string key = metadata_key();
  validate(meta_, key);
  read_chunk_shape_ = meta_.sharding ? meta_.sharding->chunk_shape : meta_.chunk_shape;
  for (std::size_t d = 0; d < rank(); ++d) {
    read_chunk_grid_.push_back(ceil_div(meta_.shape[d], read_chunk_shape_[d]));
    object_grid_.push_back(ceil_div(meta_.shape[d], meta_.chunk_shape[d]));
    chunks_per_object_.push_back(meta_.chunk_shape[d] / read_chunk_shape_[d]);
  }
  try {
    chunks_per_object_count_ = product(chunks_per_object_, "inner chunks per shard");
    read_chunk_elements_ = product(read_chunk_shape_, "chunk element count");
    product(meta_.chunk_shape, "shard element count");
    read_chunk_bytes_ = checked_mul(read_chunk_elements_, meta_.data_type.item_size(), "chunk size");
  } catch (const LimitError& e) {
    fail_at<LimitError>(key, "chunk_grid", e.what());
  }
}

std::string Array::metadata_key() const { return io::join_key(path_, kMetadataName); }

std::string Array::object_key(const Coords& object) const {
  return io::join_key(path_, chunk_key(meta_.chunk_key_encoding, object));
}

bool Array::in_read_chunk_grid(const Coords& c) const noexcept {
  if (c.size() != rank()) return false;
  for (std::size_t d = 0; d < rank(); ++d)
    if (c[d] >= read_chunk_grid_[d]) return false;
  return true;
}

void Array::check_read_chunk(const Coords& c) const {
  bool ok = c.size() == rank();
  for (std::size_t d = 0; ok && d < rank(); ++d) ok = c[d] < read_chunk_grid_[d];
  if (!ok)
    throw UsageError(path_ + ": read chunk " + coords_text(c) + " is outside the chunk grid " +
                     coords_text(read_chunk_grid_));
}

void Array::check_object(const Coords& o) const {
  bool ok = o.size() == rank();
  for (std::size_t d = 0; ok && d < rank(); ++d) ok = o[d] < object_grid_[d];
  if (!ok)
    throw UsageError(path_ + ": object " + coords_text(o) + " is outside the object grid " + coords_text(object_grid_));
}

void Array::require_dense(const char* what) const {
  if (meta_.data_type.vlen)
    throw UsageError(path_ + ": " + what + " needs a fixed-width data type; this array holds " + meta_.data_type.name);
  if (read_chunk_bytes_ > options_.max_chunk_bytes)
    fail_at<LimitError>(metadata_key(), "chunk_grid",
                        "a read chunk decodes to " + std::to_string(read_chunk_bytes_) + " bytes, above the limit of " +
                            std::to_string(options_.max_chunk_bytes));
}

void Array::require_vlen(const char* what) const {
  if (!meta_.data_type.vlen)
    throw UsageError(path_ + ": " + what + " needs a variable-length bytes array; this array holds " +
                     meta_.data_type.name);
}

Array::ChunkAddress Array::locate(const Coords& read_chunk) const {
  check_read_chunk(read_chunk);
  ChunkAddress out;
  out.object.resize(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    out.object[d] = read_chunk[d] / chunks_per_object_[d];
    out.inner = out.inner * chunks_per_object_[d] + read_chunk[d] % chunks_per_object_[d];
  }
  return out;
}

Coords Array::read_chunk_of(const Coords& object, std::uint64_t inner) const {
  Coords out(rank());
  for (std::size_t d = rank(); d-- > 0;) {
    out[d] = object[d] * chunks_per_object_[d] + inner % chunks_per_object_[d];
    inner /= chunks_per_object_[d];
  }
  return out;
}

Box Array::stored_span(const Coords& object) const {
  check_object(object);
  Box out(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    const std::uint64_t begin = object[d] * meta_.chunk_shape[d];
    out[d] = {begin, std::min(meta_.shape[d], begin + meta_.chunk_shape[d])};
  }
  return out;
}

Box Array::chunk_span(const Coords& read_chunk) const {
  check_read_chunk(read_chunk);
  Box out(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    const std::uint64_t begin = read_chunk[d] * read_chunk_shape_[d];
    out[d] = {begin, std::min(meta_.shape[d], begin + read_chunk_shape_[d])};
  }
  return out;
}

std::vector<Coords> Array::list_stored_objects() const {
  const auto& enc = meta_.chunk_key_encoding;
  // With the default '/' encoding every chunk key lies below `c/`: list only there.
  const bool under_c = enc.kind == ChunkKeyEncoding::Kind::Default && enc.separator == '/';
  const std::string base = under_c ? io::join_key(path_, "c") : path_;
  const std::string strip = path_.empty() ? std::string() : path_ + "/";
  std::vector<Coords> out;
  for (const std::string& key : store_->list(base)) {
    if (key.compare(0, strip.size(), strip) != 0) continue;
    if (auto coords = parse_chunk_key(enc, std::string_view(key).substr(strip.size()), object_grid_, key))
      out.push_back(std::move(*coords));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---- stored bytes -------------------------------------------------------------------------

std::optional<ShardIndex> Array::read_shard_index(const Coords& object) const {
  if (!sharded()) throw UsageError(path_ + ": read_shard_index on an array that is not sharded");
  check_object(object);
  const std::string key = object_key(object);
  const std::uint64_t index_size = shard_index_size(chunks_per_object_count_, meta_.sharding->index_codecs);
  if (index_size > options_.max_chunk_bytes)
    fail_at<LimitError>(
        key, "shard index",
        std::to_string(index_size) + " bytes exceeds the limit of " + std::to_string(options_.max_chunk_bytes));
  const auto read = meta_.sharding->index_location == IndexLocation::End ? store_->get_suffix(key, index_size)
                                                                         : store_->get_range(key, 0, index_size);
  if (!read) return std::nullopt;
  return ShardIndex::decode(read->bytes, chunks_per_object_count_, *meta_.sharding, read->object_size, key);
}

std::optional<std::vector<std::byte>> Array::read_stored_chunk(const ShardIndex& index, std::uint64_t inner) const {
  const auto range = index.chunk_range(inner);
  if (!range) return std::nullopt;
  auto read = store_->get_range(index.key(), range->offset, range->nbytes);
  if (!read || read->bytes.size() != range->nbytes || read->object_size != index.object_size())
    throw IoError(
        index.key() + ": shard object changed between reading its index and inner chunk " + std::to_string(inner),
        index.key(), "shard");
  return std::move(read->bytes);
}

std::vector<std::optional<std::vector<std::byte>>> Array::read_stored_chunks(const ShardIndex& index,
                                                                             std::uint64_t first,
                                                                             std::uint64_t last) const {
  std::vector<std::optional<std::vector<std::byte>>> out(last > first ? last - first : 0);
  std::vector<std::pair<std::uint64_t, ShardIndexEntry>> present;
  std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0, needed = 0;
  for (std::uint64_t i = first; i < last; ++i) {
    const auto range = index.chunk_range(i);  // checked: inside the data region, no overflow
    if (!range) continue;
    present.emplace_back(i, *range);
    lo = std::min(lo, range->offset);
    hi = std::max(hi, range->offset + range->nbytes);
    needed += range->nbytes;
  }
  constexpr std::uint64_t kMaxGapBytes = 1ull << 20;
  // (Entries may share bytes, so the span can be smaller than `needed`.)
  const bool one_request = present.size() > 1 && hi - lo <= needed + std::max(needed, kMaxGapBytes);
  if (!one_request) {
    for (const auto& entry : present) out[entry.first - first] = read_stored_chunk(index, entry.first);
    return out;
  }
  const auto read = store_->get_range(index.key(), lo, hi - lo);
  if (!read || read->bytes.size() != hi - lo || read->object_size != index.object_size())
    throw IoError(index.key() + ": shard object changed between reading its index and inner chunks " +
                      std::to_string(first) + ".." + std::to_string(last - 1),
                  index.key(), "shard");
  for (const auto& [i, range] : present) {
    const auto begin = read->bytes.begin() + static_cast<std::ptrdiff_t>(range.offset - lo);
    out[i - first].emplace(begin, begin + static_cast<std::ptrdiff_t>(range.nbytes));
  }
  return out;
}

std::optional<std::vector<std::byte>> Array::read_stored_chunk(const Coords& read_chunk) const {
  const ChunkAddress at = locate(read_chunk);
  if (!sharded()) return store_->get(object_key(at.object));
  const auto index = read_shard_index(at.object);
  if (!index) return std::nullopt;
  return read_stored_chunk(*index, at.inner);
}

StoredObject Array::read_object(const Coords& object) const {
  check_object(object);
  StoredObject out(*this, object, object_key(object));
  std::shared_ptr<const io::ByteSource> source = store_->open_whole(out.key_);
  if (!source) return out;
  const std::uint64_t size = source->size();
  if (size > 0 && source->view(0, size) == nullptr)  // a source that only copies: hold the bytes
    source = io::owned_memory_source(source->read_vector(0, size), source->name());
  out.bytes_ = size > 0 ? std::span<const std::byte>(source->view(0, size), checked_size(size, "object size"))
                        : std::span<const std::byte>();
  out.source_ = std::move(source);
  if (sharded()) {
    const auto& bytes = out.bytes_;
    const std::uint64_t index_size = shard_index_size(chunks_per_object_count_, meta_.sharding->index_codecs);
    std::span<const std::byte> index_bytes;
    if (bytes.size() >= index_size) {
      index_bytes =
          meta_.sharding->index_location == IndexLocation::End ? bytes.last(index_size) : bytes.first(index_size);
    }
    out.index_ = ShardIndex::decode(index_bytes, chunks_per_object_count_, *meta_.sharding, bytes.size(), out.key_);
  }
  return out;
}

// ---- decoding -----------------------------------------------------------------------------

void Array::fill_chunk(std::span<std::byte> out) const {
  const auto& fill = meta_.fill_value.element;
  const std::size_t size = fill.size();
  if (size == 0) return;
  for (std::size_t off = 0; off + size <= out.size(); off += size) std::memcpy(out.data() + off, fill.data(), size);
}

void Array::decode_chunk(std::span<const std::byte> stored, std::span<std::byte> out, const ChunkRef& chunk) const {
  require_dense("decode_chunk");
  if (out.size() != read_chunk_bytes_)
    throw UsageError(path_ + ": chunk buffer of " + std::to_string(out.size()) + " bytes, expected " +
                     std::to_string(read_chunk_bytes_));
  decode_dense_chunk(meta_.codecs, meta_.data_type, stored, out, options_.max_chunk_bytes, chunk);
}

VlenChunk Array::decode_vlen_chunk(std::span<const std::byte> stored, const ChunkRef& chunk) const {
  VlenChunk out;
  decode_vlen_chunk_into(stored, chunk, out);
  return out;
}

void Array::decode_vlen_chunk_into(std::span<const std::byte> stored, const ChunkRef& chunk, VlenChunk& out) const {
  require_vlen("decode_vlen_chunk");
  zarr::decode_vlen_chunk_into(meta_.codecs, stored, read_chunk_elements_, options_.max_chunk_bytes, chunk, out);
}

void Array::read_chunk(const Coords& read_chunk, std::span<std::byte> out) const {
  require_dense("read_chunk");
  const ChunkAddress at = locate(read_chunk);
  const std::string key = object_key(at.object);
  const auto stored = read_stored_chunk(read_chunk);
  if (out.size() != read_chunk_bytes_)
    throw UsageError(path_ + ": chunk buffer of " + std::to_string(out.size()) + " bytes, expected " +
                     std::to_string(read_chunk_bytes_));
  if (!stored) return fill_chunk(out);
  decode_chunk(*stored, out, ChunkRef{key, sharded(), at.inner});
}

std::vector<std::byte> Array::read_chunk(const Coords& read_chunk) const {
  require_dense("read_chunk");
  std::vector<std::byte> out(checked_size(read_chunk_bytes_, "chunk size"));
  this->read_chunk(read_chunk, out);
  return out;
}

VlenChunk Array::read_vlen_chunk(const Coords& read_chunk) const {
  require_vlen("read_vlen_chunk");
  const ChunkAddress at = locate(read_chunk);
  const std::string key = object_key(at.object);
  const auto stored = read_stored_chunk(read_chunk);
  if (!stored) return VlenChunk::empty(read_chunk_elements_);
  return decode_vlen_chunk(*stored, ChunkRef{key, sharded(), at.inner});
}

std::vector<std::byte> Array::read_box(const Box& box) const {
  require_dense("read_box");
  std::vector<std::byte> out(box_bytes(box));
  read_box_into(box, out);
  return out;
}

std::size_t Array::box_bytes(const Box& box) const {
  bool ok = box.size() == rank();
  for (std::size_t d = 0; ok && d < rank(); ++d) ok = box[d].begin <= box[d].end && box[d].end <= meta_.shape[d];
  if (!ok) throw UsageError(path_ + ": box outside the array's shape " + coords_text(meta_.shape));
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < rank(); ++d) elements = checked_mul(elements, box[d].end - box[d].begin, "box size");
  return checked_size(checked_mul(elements, meta_.data_type.item_size(), "box size"), "box size");
}

void Array::read_box_into(const Box& box, std::span<std::byte> out) const {
  require_dense("read_box");
  if (out.size() != box_bytes(box))
    throw UsageError(path_ + ": box buffer of " + std::to_string(out.size()) + " bytes, expected " +
                     std::to_string(box_bytes(box)));
  const std::size_t item = meta_.data_type.item_size();
  Coords box_origin(rank()), box_extent(rank());
  for (std::size_t d = 0; d < rank(); ++d) box_origin[d] = box[d].begin, box_extent[d] = box[d].end - box[d].begin;
  fill_chunk(out);
  if (out.empty()) return;

  std::vector<std::byte> chunk(checked_size(read_chunk_bytes_, "chunk size"));
  // Copies the part of decoded read chunk `rc` (in `chunk`) that lies in the box.
  const auto copy_into_box = [&](const Coords& rc) {
    Coords lo(rank()), extent(rank()), src_origin(rank()), dst_origin(rank());
    for (std::size_t d = 0; d < rank(); ++d) {
      const std::uint64_t c0 = rc[d] * read_chunk_shape_[d];
      lo[d] = std::max(c0, box[d].begin);
      const std::uint64_t hi = std::min({c0 + read_chunk_shape_[d], box[d].end, meta_.shape[d]});
      if (hi <= lo[d]) return;
      extent[d] = hi - lo[d];
      src_origin[d] = lo[d] - c0;
      dst_origin[d] = lo[d] - box[d].begin;
    }
    detail::for_each_run(extent, src_origin, read_chunk_shape_, dst_origin, box_extent,
                         [&](std::uint64_t src, std::uint64_t dst, std::uint64_t run) {
                           std::memcpy(out.data() + dst * item, chunk.data() + src * item, run * item);
                         });
  };

  // Objects touching the box, in C order.
  Coords first(rank()), count(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    first[d] = box[d].begin / meta_.chunk_shape[d];
    count[d] = ceil_div(box[d].end, meta_.chunk_shape[d]) - first[d];
  }
  const Coords zeros(rank(), 0);
  detail::for_each_run(count, zeros, count, zeros, count, [&](std::uint64_t flat, std::uint64_t, std::uint64_t run) {
    for (std::uint64_t r = 0; r < run; ++r) {
      Coords object(rank());
      std::uint64_t rest = flat + r;
      for (std::size_t d = rank(); d-- > 0;) object[d] = first[d] + rest % count[d], rest /= count[d];
      const Box span = stored_span(object);
      bool whole = true;
      for (std::size_t d = 0; d < rank(); ++d)
        whole = whole && box[d].begin <= span[d].begin && span[d].end <= box[d].end;
      if (whole || !sharded()) {
        // One GET for the whole object, then every read chunk from memory.
        const StoredObject obj = read_object(object);
        if (!obj.exists()) continue;
        for (std::uint64_t inner = 0; inner < chunks_per_object_count_; ++inner) {
          const Coords rc = read_chunk_of(object, inner);
          if (!in_read_chunk_grid(rc)) continue;
          const auto stored = obj.stored_chunk(inner);
          if (!stored) continue;
          decode_chunk(*stored, chunk, ChunkRef{obj.key(), sharded(), inner});
          copy_into_box(rc);
        }
        continue;
      }
      // Partly covered shard: the index, then only the read chunks the box needs.
      const auto index = read_shard_index(object);
      if (!index) continue;
      for (std::uint64_t inner = 0; inner < chunks_per_object_count_; ++inner) {
        const Coords rc = read_chunk_of(object, inner);
        if (!in_read_chunk_grid(rc)) continue;
        bool touches = true;
        for (std::size_t d = 0; d < rank(); ++d) {
          const std::uint64_t c0 = rc[d] * read_chunk_shape_[d];
          touches = touches && c0 < box[d].end && box[d].begin < c0 + read_chunk_shape_[d];
        }
        if (!touches) continue;
        const auto stored = read_stored_chunk(*index, inner);
        if (!stored) continue;
        decode_chunk(*stored, chunk, ChunkRef{index->key(), true, inner});
        copy_into_box(rc);
      }
    }
  });
}

std::vector<std::byte> Array::read_all() const {
  Box box(rank());
  for (std::size_t d = 0; d < rank(); ++d) box[d] = {0, meta_.shape[d]};
  return read_box(box);
}

// ---- StoredObject -------------------------------------------------------------------------

std::uint64_t StoredObject::chunk_count() const noexcept { return array_->chunks_per_object_count(); }

std::optional<ShardIndexEntry> StoredObject::chunk_range(std::uint64_t inner) const {
  if (inner >= chunk_count())
    throw UsageError(key_ + ": inner chunk " + std::to_string(inner) + " of an object holding " +
                     std::to_string(chunk_count()));
  if (!source_) return std::nullopt;
  if (!index_) return ShardIndexEntry{0, bytes_.size()};
  return index_->chunk_range(inner);
}

std::optional<std::span<const std::byte>> StoredObject::stored_chunk(std::uint64_t inner) const {
  const auto range = chunk_range(inner);
  if (!range) return std::nullopt;
  return bytes_.subspan(range->offset, range->nbytes);
}

io::ReadPath StoredObject::scan_read_path() const {
  if (!source_) return io::ReadPath::Mmap;
  return io::choose_read_path(*source_, 0, source_->size(), source_->size()).chosen;
}

std::optional<std::span<const std::byte>> StoredObject::stored_chunk(std::uint64_t inner, io::ReadPath path,
                                                                     std::vector<std::byte>& scratch) const {
  if (path != io::ReadPath::Pread) return stored_chunk(inner);
  const auto range = chunk_range(inner);
  if (!range) return std::nullopt;
  const auto bytes = grown_prefix(scratch, checked_size(range->nbytes, "chunk size"));
  source_->read_at(range->offset, bytes);
  return bytes;
}

void StoredObject::read_chunk(std::uint64_t inner, std::span<std::byte> out) const {
  const auto stored = stored_chunk(inner);
  if (array_->data_type().vlen || out.size() != array_->read_chunk_bytes())
    throw UsageError(key_ + ": read_chunk needs a dense array and a buffer of " +
                     std::to_string(array_->read_chunk_bytes()) + " bytes");
  if (!stored) return array_->fill_chunk(out);
  array_->decode_chunk(*stored, out, ref(inner));
}

VlenChunk StoredObject::read_vlen_chunk(std::uint64_t inner) const {
  VlenChunk out;
  read_vlen_chunk_into(inner, out);
  return out;
}

void StoredObject::read_vlen_chunk_into(std::uint64_t inner, VlenChunk& out) const {
  if (!array_->data_type().vlen) throw UsageError(key_ + ": read_vlen_chunk needs a variable-length bytes array");
  const auto stored = stored_chunk(inner);
  if (!stored) {
    out = VlenChunk::empty(array_->read_chunk_elements());
    return;
  }
  array_->decode_vlen_chunk_into(*stored, ref(inner), out);
}

}  // namespace tessera::zarr
