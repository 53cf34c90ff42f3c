// Writing array metadata, chunk objects and shard objects.
#include "tessera/zarr/array_writer.hpp"

#include <algorithm>
#include <cstring>

#include "nd_runs.hpp"
#include "tessera/core/checked.hpp"

namespace tessera::zarr {
namespace {

std::span<const std::byte> text_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

void write_group(io::Store& store, const std::string& path, const GroupMeta& meta) {
  store.put(io::join_key(path, kMetadataName), text_bytes(encode(meta)));
}

ArrayWriter::ArrayWriter(io::Store& store, std::string path, ArrayMeta meta)
    : store_(&store), array_(store, std::move(path), std::move(meta)) {}

void ArrayWriter::write_metadata() { store_->put(array_.metadata_key(), text_bytes(encode(array_.meta()))); }

std::vector<std::byte> ArrayWriter::assemble_shard(std::span<const std::optional<std::vector<std::byte>>> inner) const {
  const ShardingSpec& spec = *array_.meta().sharding;
  const std::uint64_t index_size = shard_index_size(inner.size(), spec.index_codecs);
  // Offsets count from the start of the object, so with the index first the data starts after it.
  std::uint64_t offset = spec.index_location == IndexLocation::Start ? index_size : 0;
  std::vector<ShardIndexEntry> entries(inner.size(), ShardIndexEntry::absent());
  std::vector<std::byte> data;
  bool any = false;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    if (!inner[i]) continue;
    any = true;
    entries[i] = {offset, inner[i]->size()};
    offset = checked_add(offset, inner[i]->size(), "shard size");
    data.insert(data.end(), inner[i]->begin(), inner[i]->end());
  }
  if (!any) return {};
  const std::vector<std::byte> index = encode_shard_index(entries, spec.index_codecs);
  if (spec.index_location == IndexLocation::Start) {
    std::vector<std::byte> out(index);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
  data.insert(data.end(), index.begin(), index.end());
  return data;
}

std::uint64_t ArrayWriter::write_encoded_object(const Coords& object,
                                                std::span<const std::optional<std::vector<std::byte>>> encoded) {
  const std::string key = array_.object_key(object);
  std::uint64_t present = 0;
  for (const auto& e : encoded) present += e ? 1 : 0;
  if (present == 0) {
    store_->erase(key);
    return 0;
  }
  if (array_.sharded()) store_->put(key, assemble_shard(encoded));
  else store_->put(key, *encoded[0]);
  return present;
}

std::optional<std::vector<std::byte>> ArrayWriter::encode_dense_read_chunk(std::span<const std::byte> elements) const {
  const ArrayMeta& meta = array_.meta();
  if (meta.data_type.vlen) throw UsageError(array_.path() + ": encode_dense_read_chunk on a variable-length array");
  if (elements.size() != array_.read_chunk_bytes())
    throw UsageError(array_.path() + ": read chunk of " + std::to_string(elements.size()) + " bytes, expected " +
                     std::to_string(array_.read_chunk_bytes()));
  if (all_equal_fill(elements, meta.data_type, meta.fill_value)) return std::nullopt;
  return encode_dense_chunk(meta.codecs, meta.data_type, elements);
}

std::optional<std::vector<std::byte>> ArrayWriter::encode_vlen_read_chunk(
    std::span<const std::span<const std::byte>> elements) const {
  const ArrayMeta& meta = array_.meta();
  if (!meta.data_type.vlen) throw UsageError(array_.path() + ": encode_vlen_read_chunk on a fixed-width array");
  if (elements.size() != array_.read_chunk_elements())
    throw UsageError(array_.path() + ": read chunk of " + std::to_string(elements.size()) + " elements, expected " +
                     std::to_string(array_.read_chunk_elements()));
  if (std::all_of(elements.begin(), elements.end(), [](const auto& e) { return e.empty(); })) return std::nullopt;
  return encode_vlen_chunk(meta.codecs, elements);
}

std::uint64_t ArrayWriter::write_dense_object(const Coords& object, std::span<const std::byte> elements) {
  const ArrayMeta& meta = array_.meta();
  if (meta.data_type.vlen) throw UsageError(array_.path() + ": write_dense_object on a variable-length array");
  array_.stored_span(object);  // checks the coordinates
  const std::size_t item = meta.data_type.item_size();
  std::uint64_t object_elements = 1;
  for (const auto n : array_.object_shape()) object_elements = checked_mul(object_elements, n, "object size");
  if (elements.size() != checked_mul(object_elements, item, "object size"))
    throw UsageError(array_.path() + ": object data of " + std::to_string(elements.size()) + " bytes, expected " +
                     std::to_string(object_elements * item));
  const Coords& inner_shape = array_.read_chunk_shape();
  const Coords zeros(array_.rank(), 0);
  std::vector<std::optional<std::vector<std::byte>>> encoded(array_.chunks_per_object_count());
  std::vector<std::byte> chunk(checked_size(array_.read_chunk_bytes(), "chunk size"));
  for (std::uint64_t inner = 0; inner < encoded.size(); ++inner) {
    const Coords rc = array_.read_chunk_of(object, inner);
    if (!array_.in_read_chunk_grid(rc)) continue;
    Coords origin(array_.rank());
    for (std::size_t d = 0; d < array_.rank(); ++d)
      origin[d] = (rc[d] - object[d] * array_.chunks_per_object()[d]) * inner_shape[d];
    detail::for_each_run(inner_shape, origin, array_.object_shape(), zeros, inner_shape,
                         [&](std::uint64_t src, std::uint64_t dst, std::uint64_t run) {
                           std::memcpy(chunk.data() + dst * item, elements.data() + src * item, run * item);
                         });
    if (all_equal_fill(chunk, meta.data_type, meta.fill_value)) continue;
    encoded[inner] = encode_dense_chunk(meta.codecs, meta.data_type, chunk);
  }
  return write_encoded_object(object, encoded);
}

std::uint64_t ArrayWriter::write_vlen_object(const Coords& object,
                                             std::span<const std::span<const std::byte>> elements) {
  const ArrayMeta& meta = array_.meta();
  if (!meta.data_type.vlen) throw UsageError(array_.path() + ": write_vlen_object on a fixed-width array");
  array_.stored_span(object);
  std::uint64_t object_elements = 1;
  for (const auto n : array_.object_shape()) object_elements = checked_mul(object_elements, n, "object size");
  if (elements.size() != object_elements)
    throw UsageError(array_.path() + ": " + std::to_string(elements.size()) + " elements for an object of " +
                     std::to_string(object_elements));
  const Coords& inner_shape = array_.read_chunk_shape();
  const Coords zeros(array_.rank(), 0);
  std::vector<std::optional<std::vector<std::byte>>> encoded(array_.chunks_per_object_count());
  std::vector<std::span<const std::byte>> chunk(checked_size(array_.read_chunk_elements(), "chunk size"));
  for (std::uint64_t inner = 0; inner < encoded.size(); ++inner) {
    const Coords rc = array_.read_chunk_of(object, inner);
    if (!array_.in_read_chunk_grid(rc)) continue;
    Coords origin(array_.rank());
    for (std::size_t d = 0; d < array_.rank(); ++d)
      origin[d] = (rc[d] - object[d] * array_.chunks_per_object()[d]) * inner_shape[d];
    bool all_empty = true;
    detail::for_each_run(inner_shape, origin, array_.object_shape(), zeros, inner_shape,
                         [&](std::uint64_t src, std::uint64_t dst, std::uint64_t run) {
                           for (std::uint64_t k = 0; k < run; ++k) {
                             chunk[dst + k] = elements[src + k];
                             all_empty = all_empty && elements[src + k].empty();
                           }
                         });
    if (all_empty) continue;
    encoded[inner] = encode_vlen_chunk(meta.codecs, chunk);
  }
  return write_encoded_object(object, encoded);
}

}  // namespace tessera::zarr
