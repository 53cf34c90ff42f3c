// Writing: every fixture array rewritten from its decoded values reproduces the fixture's
// metadata byte for byte and its uncompressed objects byte for byte (compressed ones decode to
// the same values); random arrays of every geometry (2-D shards with edge shards, index at
// either end, big-endian, every dtype) read back identically, whole and by boxes, with the
// request counts the reader documents.
#include <gtest/gtest.h>

#include <random>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/zarr/array_writer.hpp"

namespace tessera::zarr {
namespace {

namespace fs = std::filesystem;

bool has_zstd(const CodecChain& chain) {
  for (const auto& c : chain.bytes_to_bytes)
    if (std::holds_alternative<ZstdCodec>(c)) return true;
  return false;
}

// Copies the elements of `object`'s span out of a full C-order array into the object shape
// (cells past the array edge stay zero / empty).
template <typename T>
std::vector<T> object_elements(const Array& array, const std::vector<T>& all, const Coords& object, std::size_t item) {
  std::uint64_t n = 1;
  for (const auto s : array.object_shape()) n *= s;
  std::vector<T> out(n * item);
  const Box span = array.stored_span(object);
  Coords idx(array.rank(), 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t rest = i, flat = 0;
    bool inside = true;
    for (std::size_t d = array.rank(); d-- > 0;)
      idx[d] = rest % array.object_shape()[d], rest /= array.object_shape()[d];
    for (std::size_t d = 0; d < array.rank(); ++d) {
      const std::uint64_t g = span[d].begin + idx[d];
      inside = inside && g < span[d].end;
      flat = flat * array.shape()[d] + g;
    }
    if (inside)
      for (std::size_t b = 0; b < item; ++b) out[i * item + b] = all[flat * item + b];
  }
  return out;
}

std::vector<Coords> all_objects(const Array& array) {
  std::vector<Coords> out;
  Coords c(array.rank(), 0);
  while (true) {
    out.push_back(c);
    std::size_t d = array.rank();
    while (d-- > 0) {
      if (++c[d] < array.object_grid()[d]) break;
      c[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return out;
  }
}

// Every element of a vlen array in C order (via the reader, chunk by chunk).
std::vector<std::vector<std::byte>> vlen_elements(const Array& array) {
  std::uint64_t n = 1;
  for (const auto s : array.shape()) n *= s;
  std::vector<std::vector<std::byte>> out(n);
  for (const Coords& object : all_objects(array)) {
    for (std::uint64_t inner = 0; inner < array.chunks_per_object_count(); ++inner) {
      const Coords rc = array.read_chunk_of(object, inner);
      if (!array.in_read_chunk_grid(rc)) continue;
      const VlenChunk chunk = array.read_vlen_chunk(rc);
      const Box span = array.chunk_span(rc);
      for (std::uint64_t i = 0; i < chunk.size(); ++i) {
        std::uint64_t rest = i, flat = 0;
        bool inside = true;
        Coords local(array.rank());
        for (std::size_t d = array.rank(); d-- > 0;)
          local[d] = rest % array.read_chunk_shape()[d], rest /= array.read_chunk_shape()[d];
        for (std::size_t d = 0; d < array.rank(); ++d) {
          const std::uint64_t g = span[d].begin + local[d];
          inside = inside && g < span[d].end;
          flat = flat * array.shape()[d] + g;
        }
        if (inside) out[flat].assign(chunk[i].begin(), chunk[i].end());
      }
    }
  }
  return out;
}

TEST(ZarrWriter, FixtureArraysRewriteIdentically) {
  std::size_t identical_objects = 0;
  for (const auto& fa : test::all_fixture_arrays()) {
    SCOPED_TRACE(fa.name());
    io::DirectoryStore source(fa.root.string());
    const Array original = Array::open(source, fa.path);
    io::MemoryStore out;
    ArrayWriter writer(out, fa.path, original.meta());
    writer.write_metadata();
    EXPECT_EQ(out.get(original.metadata_key()), source.get(original.metadata_key()));
    if (original.data_type().vlen) {
      const auto elements = vlen_elements(original);
      for (const Coords& object : all_objects(original)) {
        const auto objs = object_elements(original, elements, object, 1);
        std::vector<std::span<const std::byte>> views(objs.begin(), objs.end());
        writer.write_vlen_object(object, views);
      }
    } else {
      const auto all = original.read_all();
      for (const Coords& object : all_objects(original))
        writer.write_dense_object(object, object_elements(original, all, object, original.data_type().item_size()));
    }
    const Array rewritten = Array::open(out, fa.path);
    EXPECT_EQ(test::content_hash(rewritten), test::content_hash(original));
    // The same objects exist, with the same absent inner chunks.
    EXPECT_EQ(rewritten.list_stored_objects(), original.list_stored_objects());
    for (const Coords& object : original.list_stored_objects()) {
      const std::string key = original.object_key(object);
      if (original.sharded()) {
        const auto a = original.read_shard_index(object), b = rewritten.read_shard_index(object);
        for (std::uint64_t i = 0; i < a->size(); ++i)
          EXPECT_EQ(a->entry(i).is_absent(), b->entry(i).is_absent()) << key << " " << i;
      }
      if (!has_zstd(original.meta().codecs)) {
        EXPECT_EQ(out.get(key), source.get(key)) << key;
        ++identical_objects;
      }
    }
  }
  EXPECT_GE(identical_objects, 30u);
}

TEST(ZarrWriter, CountShardIsTheDocumented116Bytes) {
  io::MemoryStore out;
  io::DirectoryStore source((test::zagg_dir() / "tests/data/spec/minimal/1/1/2/1/3/11213.zarr").string());
  ArrayWriter writer(out, "6/count", Array::open(source, "6/count").meta());
  std::vector<std::byte> values(64);
  for (const auto& [cell, v] : std::vector<std::pair<int, std::int32_t>>{{0, 40}, {2, 1}, {5, 5}, {15, 300}})
    std::memcpy(values.data() + 4 * cell, &v, 4);
  EXPECT_EQ(writer.write_dense_object({0}, values), 3u);
  const auto bytes = *out.get("6/count/c/0");
  EXPECT_EQ(bytes.size(), 116u);
  EXPECT_EQ(test::hex(std::span(bytes).last(4)), "fb08f406");
  // All fill: the object is not written, and an existing one is erased.
  EXPECT_EQ(writer.write_dense_object({0}, std::vector<std::byte>(64)), 0u);
  EXPECT_FALSE(out.exists("6/count/c/0"));
}

struct Geometry {
  DType dtype;
  Coords shape, chunk;
  std::optional<Coords> inner;
  IndexLocation location;
  Endian endian;
  bool crc;
  std::vector<BytesToBytesCodec> tail;
};

TEST(ZarrWriter, RandomGeometriesReadBackWholeAndByBoxes) {
  std::mt19937_64 rng(20261129);
  const std::vector<Geometry> geometries = {
      {DType::I32, {10, 7}, {4, 6}, Coords{2, 3}, IndexLocation::End, Endian::Little, true, {}},
      {DType::F64, {9, 9}, {6, 6}, Coords{3, 2}, IndexLocation::Start, Endian::Big, false, {ZstdCodec{3, true}}},
      {DType::U16, {17}, {8}, Coords{2}, IndexLocation::Start, Endian::Little, true, {Crc32cCodec{}}},
      {DType::F16,
       {5, 3, 4},
       {2, 3, 4},
       Coords{1, 3, 2},
       IndexLocation::End,
       Endian::Big,
       true,
       {ZstdCodec{1, false}, Crc32cCodec{}}},
      {DType::U8, {13, 5}, {4, 4}, std::nullopt, IndexLocation::End, Endian::Little, false, {ZstdCodec{3, false}}},
      {DType::Bool, {20}, {6}, std::nullopt, IndexLocation::End, Endian::Little, false, {}},
      {DType::I64, {6, 6}, {3, 4}, std::nullopt, IndexLocation::End, Endian::Big, false, {Crc32cCodec{}}},
  };
  for (const Geometry& g : geometries) {
    ArrayMeta meta;
    meta.shape = g.shape;
    meta.data_type = DataType::fixed(g.dtype);
    meta.chunk_shape = g.chunk;
    meta.fill_value = zero_fill(meta.data_type);
    if (g.dtype == DType::I32) meta.fill_value.element = {std::byte{7}, {}, {}, {}};
    meta.codecs = CodecChain{BytesCodec{dtype_size(g.dtype) == 1 ? std::nullopt : std::optional(g.endian)}, g.tail};
    if (g.inner) meta.sharding = ShardingSpec{*g.inner, IndexCodecs{g.endian, g.crc}, g.location};
    SCOPED_TRACE(encode(meta));
    io::MemoryStore mem;
    ArrayWriter writer(mem, "grp/arr", meta);
    writer.write_metadata();
    const Array& array = writer.array();
    const std::size_t item = meta.data_type.item_size();
    std::uint64_t n = 1;
    for (const auto s : g.shape) n *= s;
    // Sparse values so some read chunks are all fill and left absent.
    std::vector<std::byte> all(n * item);
    for (std::size_t i = 0; i < all.size(); i += item)
      if (rng() % 3 == 0) all[i] = static_cast<std::byte>(g.dtype == DType::Bool ? 1 : 1 + rng() % 200);
      else if (g.dtype == DType::I32) all[i] = std::byte{7};
    for (const Coords& object : all_objects(array))
      writer.write_dense_object(object, object_elements(array, all, object, item));

    io::CountingStore store(mem);
    const Array reader = Array::open(store, "grp/arr");
    store.reset();
    EXPECT_EQ(reader.read_all(), all);
    EXPECT_LE(store.gets(), all_objects(array).size());
    for (int trial = 0; trial < 25; ++trial) {
      Box box(g.shape.size());
      for (std::size_t d = 0; d < box.size(); ++d) {
        const std::uint64_t a = rng() % (g.shape[d] + 1), b = rng() % (g.shape[d] + 1);
        box[d] = {std::min(a, b), std::max(a, b)};
      }
      const auto got = reader.read_box(box);
      // Reference: slice `all`.
      std::vector<std::byte> want;
      Coords idx(box.size());
      std::uint64_t count = 1;
      for (const auto& iv : box) count *= iv.end - iv.begin;
      for (std::uint64_t k = 0; k < count; ++k) {
        std::uint64_t rest = k, flat = 0;
        for (std::size_t d = box.size(); d-- > 0;) {
          const std::uint64_t ext = box[d].end - box[d].begin;
          idx[d] = box[d].begin + rest % ext;
          rest /= ext;
        }
        for (std::size_t d = 0; d < box.size(); ++d) flat = flat * g.shape[d] + idx[d];
        want.insert(want.end(), all.begin() + flat * item, all.begin() + (flat + 1) * item);
      }
      EXPECT_EQ(got, want);
      // The same into a caller's buffer holding other bytes (every element is written, fill included).
      std::vector<std::byte> reused(reader.box_bytes(box), std::byte{0xAB});
      reader.read_box_into(box, reused);
      EXPECT_EQ(reused, want);
    }
    // Single read chunks: 2 GETs at most when sharded, 1 otherwise.
    for (std::uint64_t trial = 0; trial < 10; ++trial) {
      Coords rc(g.shape.size());
      for (std::size_t d = 0; d < rc.size(); ++d) rc[d] = rng() % array.read_chunk_grid()[d];
      store.reset();
      reader.read_chunk(rc);
      EXPECT_LE(store.gets(), array.sharded() ? 2u : 1u);
      EXPECT_GE(store.gets(), 1u);
    }
  }
}

TEST(ZarrWriter, VlenShardWithIndexAtTheStartReadsBack) {
  ArrayMeta meta;
  meta.shape = {11};
  meta.data_type = DataType::vlen_bytes("bytes");
  meta.chunk_shape = {8};
  meta.fill_value = {};
  meta.codecs = CodecChain{VlenBytesCodec{}, {ZstdCodec{}}};
  meta.sharding = ShardingSpec{{2}, IndexCodecs{Endian::Little, true}, IndexLocation::Start};
  io::MemoryStore mem;
  ArrayWriter writer(mem, "v", meta);
  writer.write_metadata();
  std::vector<std::string> text = {"a", "", "", "", "bcd", "", "", "", "e", "fg", "", "", "", "", "", ""};
  for (std::uint64_t o = 0; o < 2; ++o) {
    std::vector<std::span<const std::byte>> views;
    for (std::size_t i = 0; i < 8; ++i) views.push_back(test::as_bytes(text[o * 8 + i]));
    writer.write_vlen_object({o}, views);
  }
  io::CountingStore store(mem);
  const Array array = Array::open(store, "v");
  EXPECT_EQ(array.read_chunk_grid(), (Coords{6}));
  store.reset();
  const VlenChunk c2 = array.read_vlen_chunk({2});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c2[0].data()), c2[0].size()), "bcd");
  ASSERT_EQ(store.gets(), 2u);
  EXPECT_EQ(store.log()[0].kind, io::CountingStore::GetKind::Range);  // the index prefix
  EXPECT_EQ(store.log()[0].offset, 0u);
  EXPECT_EQ(store.log()[0].length, 16u * 4 + 4);
  store.reset();
  EXPECT_TRUE(array.read_vlen_chunk({1}).all_empty());  // absent
  EXPECT_EQ(store.gets(), 1u);
  const VlenChunk c4 = array.read_vlen_chunk({4});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c4[1].data()), c4[1].size()), "fg");
  EXPECT_EQ(array.read_vlen_chunk({5}).size(), 2u);  // inside the grid, past the data: absent
}

}  // namespace
}  // namespace tessera::zarr
