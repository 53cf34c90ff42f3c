// Fuzz target for ragged cell payloads: the input is (1) decoded as a t-digest payload and run
// through the cast kernels (quantiles, CDF rasterization), whose outputs must stay finite and
// non-negative, and (2) stored as the shard object of the payload array of a 16-cell in-memory
// leaf, which every reader then sweeps (read_cell, read_tensors, per-cell sweeps, cell_index,
// content hashes). A clean tessera::Error is an accepted outcome; any other exception, a crash, a
// sanitizer report or a broken invariant is a finding.
//
// fuzz_ragged_gates.cpp and the corruption sweep (tests/ragged/corruption_test.cpp) include this
// file for `ragged_leaf_template` and `exercise_ragged_reads`.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/zarr/array_writer.hpp"

namespace tessera::fuzzing {

struct RaggedInconsistency {
  const char* what;
};

// Runs every reader of `field` on `store`, each on its own so one refusal does not hide the
// others (content hashes of the whole store too, unless `hashes` is false). Only tessera::Error
// is caught.
inline void exercise_ragged_reads(const io::Store& store, const std::string& field, bool hashes = true) {
  std::optional<ragged::RaggedField> f;
  try {
    f.emplace(ragged::RaggedField::open(store, field));
  } catch (const Error&) {
    return;
  }
  const auto attempt = [](auto&& fn) {
    try {
      fn();
    } catch (const Error&) {
    }
  };
  const std::uint64_t n = std::min<std::uint64_t>(f->payload().size(), 64);
  for (std::uint64_t i = 0; i < n; ++i) attempt([&] { f->read_cell(static_cast<std::int64_t>(i)); });
  attempt([&] {
    for (const auto& b : f->read_tensors()) {
      if (b.mask.size() != std::uint64_t{b.side} * b.side) throw RaggedInconsistency{"mask size"};
      if (!(b.weight_in_window >= 0)) throw RaggedInconsistency{"negative or NaN weight in window"};
    }
  });
  attempt([&] {
    ragged::TensorOptions o;
    o.block_order = f->axis().chunk_order - 1;
    o.fit = ragged::FitPolicy::DegradeResolution;
    o.dtype = ragged::TensorDType::F32;
    o.max_block_bytes = std::uint64_t{1} << 24;
    f->read_tensors(o);
  });
  attempt([&] { f->read_raw_values(); });
  attempt([&] {
    for (const auto& c : f->read_locations())
      if (f->cell_index(c.chunk_id, c.row, c.col) != c.index)
        throw RaggedInconsistency{"cell_index disagrees with the sweep"};
  });
  attempt([&] { f->read_times(); });
  attempt([&] { ragged::has_exact_occupancy(store); });
  if (hashes) attempt([&] { ragged::hash_tree(store); });
}

// A 16-cell leaf of shard 11213 (cell order 6, 4 inner chunks of 4 cells) with a bitmap stamp,
// `6/morton` written for chunks 0, 1, 3, and the metadata of `6/h_tdigest` (located) and
// `6/h_tdigest_locations`; payload objects are the caller's.
inline io::MemoryStore& ragged_leaf_template() {
  static io::MemoryStore* store = [] {
    auto* s = new io::MemoryStore("fuzz-leaf/1/1/2/1/3/11213.zarr");
    const auto text = [](std::string_view t) {
      return std::span<const std::byte>(reinterpret_cast<const std::byte*>(t.data()), t.size());
    };
    s->put(
        "zarr.json",
        text(R"({"attributes": {"morton_hive_commit": {"spec": "morton-hive/1", "complete": true, "cells_with_data": 4,
      "coverage": {"spec": "morton-moc/1", "box": ["112131", "1121322", "1121344", null], "cell_order": 6, "source": "worker",
      "encoding": "bitmap", "sidecar": "coverage.moc", "nbytes": 11, "raw_nbytes": 2}}}, "zarr_format": 3, "node_type": "group"})"));
    const std::vector<std::byte> bitmap{std::byte{0xa4}, std::byte{0x01}};
    s->put("coverage.moc", codec::zstd_compress(bitmap));
    zarr::write_group(*s, "6", {});
    zarr::ArrayMeta dense;
    dense.shape = {16};
    dense.data_type = zarr::DataType::fixed(DType::U64);
    dense.chunk_shape = {16};
    dense.fill_value = zarr::zero_fill(dense.data_type);
    dense.codecs = {zarr::BytesCodec{zarr::Endian::Little}, {}};
    dense.sharding = zarr::ShardingSpec{{4}, {zarr::Endian::Little, true}, zarr::IndexLocation::End};
    dense.dimension_names = std::vector<std::optional<std::string>>{"cells"};
    zarr::ArrayWriter morton(*s, "6/morton", dense);
    morton.write_metadata();
    std::vector<std::uint64_t> words(16);
    const std::uint64_t shard = ragged::morton::parse_decimal("11213");
    for (std::uint64_t i = 0; i < 16; ++i) words[i] = i / 4 == 2 ? 0 : ragged::morton::descendant(shard, 2, i);
    morton.write_dense_object({0}, std::span<const std::byte>(reinterpret_cast<const std::byte*>(words.data()), 128));
    zarr::ArrayMeta vlen = dense;
    vlen.data_type = zarr::DataType::vlen_bytes();
    vlen.fill_value = zarr::zero_fill(vlen.data_type);
    vlen.codecs = {zarr::VlenBytesCodec{}, {zarr::ZstdCodec{}}};
    vlen.attributes = codec::json::Json::parse(
        R"({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "float32", "shape": [-1, 2]}, "locations": "h_tdigest_locations"}})");
    zarr::ArrayWriter(*s, "6/h_tdigest", vlen).write_metadata();
    vlen.attributes = codec::json::Json::parse(
        R"({"ragged": {"spec": "zagg-ragged/1", "element": {"dtype": "uint64", "shape": [-1]}}})");
    zarr::ArrayWriter(*s, "6/h_tdigest_locations", vlen).write_metadata();
    return s;
  }();
  return *store;
}

// The kernels on one payload: whatever validates must rasterize to finite, non-negative counts
// that never exceed the digest's total weight.
inline void exercise_tdigest_kernels(std::span<const std::byte> payload) {
  ragged::tdigest::Digest d;
  try {
    ragged::tdigest::decode_into(payload, "fuzz", d);
    ragged::tdigest::validate(d, "fuzz");
  } catch (const Error&) {
    return;
  }
  if (d.empty()) return;
  const double lo = ragged::tdigest::quantile(d, 0.05), hi = ragged::tdigest::quantile(d, 0.95);
  if (!std::isfinite(lo) || !std::isfinite(hi)) return;
  const double total = ragged::tdigest::pairwise_sum(d.weights);
  std::vector<double> counts(64), scratch;
  const double z = std::floor(lo), res = std::max((std::ceil(hi) - z) / 64, 1e-3);
  ragged::tdigest::rasterize(d, z, res, 64, counts, scratch);
  double sum = 0;
  for (const double c : counts) {
    if (!(c >= 0) || !std::isfinite(c)) throw RaggedInconsistency{"a bin count is negative or not finite"};
    sum += c;
  }
  if (std::isfinite(total) && sum > total * (1 + 1e-9) + 1e-9)
    throw RaggedInconsistency{"bins hold more weight than the digest"};
}

inline void exercise_ragged_payload(std::span<const std::byte> bytes) {
  exercise_tdigest_kernels(bytes);
  io::MemoryStore& store = ragged_leaf_template();
  store.put("6/h_tdigest/c/0", bytes);
  // The same bytes as the location sibling's object too: row alignment and word checks.
  store.put("6/h_tdigest_locations/c/0", bytes);
  exercise_ragged_reads(store, "6/h_tdigest");
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_ragged_payload({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
#endif
