// Content hashes (spec §7): per-array sha256 over decoded content, the combined hash, the tree
// walk that finds the arrays of a leaf or column, and verification against a recorded set.
#include "tessera/ragged/content_hash.hpp"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>

#include "objects_ahead.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/zarr/hierarchy.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged {

using codec::json::Json;

namespace {

void hash_vlen_cells(codec::Sha256& sha, const zarr::VlenChunk& chunk, std::uint64_t count) {
  // Gathered into one buffer per chunk: a leaf has millions of mostly empty cells, and one
  // digest update per length prefix cost more than the hashing itself.
  std::vector<std::byte> buffer;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto cell = chunk[i];
    append_le<std::uint64_t>(buffer, cell.size());
    buffer.insert(buffer.end(), cell.begin(), cell.end());
  }
  sha.update(buffer);
}

}  // namespace

std::string hash_array(const zarr::Array& array) {
  codec::Sha256 sha;
  if (array.rank() != 1) {
    // Multi-dimensional arrays (rasters): C order over the whole array.
    if (array.data_type().vlen)
      throw UnsupportedError(array.path() + ": content hash of a multi-dimensional vlen array");
    sha.update(array.read_all());
    return sha.finish_hex();
  }
  // 1-D: stream object by object in axis order, absent objects and chunks as fill.
  const std::uint64_t length = array.shape()[0];
  const std::uint64_t chunk_cells = array.read_chunk_elements();
  const auto stored = array.list_stored_objects();
  std::size_t next = 0;
  const std::uint64_t objects = array.object_grid()[0];
  std::vector<std::byte> buffer, fill;
  if (!array.data_type().vlen) {
    buffer.resize(checked_size(array.read_chunk_bytes(), "chunk"));
    fill.resize(buffer.size());
    array.fill_chunk(fill);
  }
  const zarr::VlenChunk empty = zarr::VlenChunk::empty(chunk_cells);
  detail::ObjectsAhead ahead(array, stored, [](std::size_t) { return true; });  // fetched ahead when remote
  for (std::uint64_t o = 0; o < objects; ++o) {
    std::optional<zarr::StoredObject> obj;
    if (next < stored.size() && stored[next][0] == o) obj.emplace(ahead.take(next++));
    for (std::uint64_t inner = 0; inner < array.chunks_per_object_count(); ++inner) {
      const zarr::Coords rc = array.read_chunk_of({o}, inner);
      if (!array.in_read_chunk_grid(rc)) break;
      const std::uint64_t cells = std::min(chunk_cells, length - rc[0] * chunk_cells);
      if (array.data_type().vlen) {
        if (obj && obj->exists()) hash_vlen_cells(sha, obj->read_vlen_chunk(inner), cells);
        else hash_vlen_cells(sha, empty, cells);
      } else {
        const std::vector<std::byte>* src = &fill;
        if (obj && obj->exists()) {
          obj->read_chunk(inner, buffer);
          src = &buffer;
        }
        sha.update(std::span<const std::byte>(*src).first(cells * array.data_type().item_size()));
      }
    }
  }
  return sha.finish_hex();
}

std::string combined_hash(const std::map<std::string, std::string>& arrays) {
  std::vector<std::string> digests;
  digests.reserve(arrays.size());
  for (const auto& [name, hex] : arrays) digests.push_back(hex);
  std::sort(digests.begin(), digests.end());
  std::string joined;
  for (std::size_t i = 0; i < digests.size(); ++i) joined += (i ? "\n" : "") + digests[i];
  return codec::sha256_hex(codec::as_bytes(joined));
}

ContentHashes hash_tree(const io::Store& store, std::string_view root) {
  const std::string prefix(root);
  ContentHashes out;
  // Arrays reachable from the root through groups; the root itself is never one of them. Each
  // array is hashed on its own, so they are hashed in parallel (within the caller's arena).
  std::vector<std::string> paths;
  for (const zarr::Node& node : zarr::walk_nodes(store, prefix))
    if (node.is_array && node.path != prefix) paths.push_back(node.path);
  std::vector<std::string> digests(paths.size());
  tbb::parallel_for(std::size_t{0}, paths.size(),
                    [&](std::size_t i) { digests[i] = hash_array(zarr::Array::open(store, paths[i])); });
  for (std::size_t i = 0; i < paths.size(); ++i)
    out.arrays[prefix.empty() ? paths[i] : paths[i].substr(prefix.size() + 1)] = digests[i];
  out.combined = combined_hash(out.arrays);
  return out;
}

Json to_json(const ContentHashes& hashes) {
  Json arrays = Json::object();
  for (const auto& [k, v] : hashes.arrays) arrays[k] = v;  // std::map iterates key-sorted
  Json out = Json::object();
  out["arrays"] = std::move(arrays);
  out["combined"] = hashes.combined;
  return out;
}

std::optional<ContentHashes> parse_content_hashes(const Json& document) {
  if (!document.is_object()) return std::nullopt;
  const Json* ch = &document;
  if (const auto it = document.find("content_hashes"); it != document.end()) ch = &*it;
  if (!ch->is_object()) return std::nullopt;
  ContentHashes out;
  const Json* arrays = ch;
  if (const auto it = ch->find("arrays"); it != ch->end()) {
    if (!it->is_object()) return std::nullopt;
    arrays = &*it;
  }
  for (const auto& [k, v] : arrays->items()) {
    if (k == "combined" || !v.is_string()) continue;
    out.arrays[k] = v.get<std::string>();
  }
  if (const auto it = ch->find("combined"); it != ch->end() && it->is_string()) out.combined = it->get<std::string>();
  if (out.arrays.empty() && out.combined.empty()) return std::nullopt;
  return out;
}

std::string_view name_of(HashVerification::Outcome o) noexcept {
  switch (o) {
    case HashVerification::Outcome::Ok: return "ok";
    case HashVerification::Outcome::Mismatch: return "mismatch";
    case HashVerification::Outcome::Extra: return "extra";
    case HashVerification::Outcome::Missing: return "missing";
    case HashVerification::Outcome::Unrecorded: return "unrecorded";
  }
  return "unrecorded";
}

HashVerification verify_hashes(const ContentHashes& actual, const std::optional<ContentHashes>& recorded) {
  HashVerification v;
  if (!recorded || recorded->arrays.empty()) return v;
  for (const auto& [k, h] : actual.arrays) {
    const auto it = recorded->arrays.find(k);
    if (it == recorded->arrays.end()) v.extra.push_back(k);
    else if (it->second != h) v.mismatch.push_back(k);
  }
  for (const auto& [k, h] : recorded->arrays)
    if (!actual.arrays.count(k)) v.missing.push_back(k);
  using O = HashVerification::Outcome;
  v.outcome = !v.mismatch.empty() ? O::Mismatch : !v.missing.empty() ? O::Missing : !v.extra.empty() ? O::Extra : O::Ok;
  return v;
}

}  // namespace tessera::ragged
