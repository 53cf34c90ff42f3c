#include "tessera/ragged/synth.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_writer.hpp"
#include "tessera/ragged/leaf_meta.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/zarr/array_writer.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged {
namespace {

using codec::json::Json;

// splitmix64: a fixed, platform-independent stream of 64-bit values.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

void check_options(const SynthLeafOptions& o) {
  if (!(0 <= o.shard_order && o.shard_order < o.chunk_order && o.chunk_order <= o.cell_order &&
        o.cell_order <= morton::kMaxOrder))
    throw UsageError("synthetic leaf: orders must satisfy shard < chunk <= cell <= 29");
  if (o.cell_order - o.shard_order > 13) throw UsageError("synthetic leaf: at most 4^13 cells per leaf");
  if (!(o.populated_fraction >= 0 && o.populated_fraction <= 0.5))
    throw UsageError("synthetic leaf: the populated fraction must lie in [0, 0.5]");
  if (o.min_centroids < 1 || o.min_centroids > o.max_centroids)
    throw UsageError("synthetic leaf: need 1 <= min_centroids <= max_centroids");
}

}  // namespace

SynthLeafReport synth_hive(io::Store& hive_root, const SynthLeafOptions& o) {
  check_options(o);
  const std::uint64_t shard = morton::parse_decimal(o.shard_decimal);
  if (morton::order_of(shard) != o.shard_order)
    throw UsageError("synthetic leaf: shard " + o.shard_decimal + " is not of order " + std::to_string(o.shard_order));
  const int depth = o.cell_order - o.shard_order;
  SynthLeafReport report;
  report.shard = shard;
  report.cells = morton::pow4(depth);
  report.leaf_key = hive::leaf_path(shard);
  const std::uint64_t chunk_cells = morton::pow4(o.cell_order - o.chunk_order);
  const double side = std::ldexp(1.0, depth);

  Json manifest = {{"spec", "morton-hive/1"},
                   {"dataset", {{"short_name", "TESSERA_SYNTH"}, {"version", "1"}}},
                   {"cell_order", o.cell_order},
                   {"shard_order", o.shard_order},
                   {"split_schedule", std::vector<int>(static_cast<std::size_t>(o.shard_order), 1)},
                   {"path_grouping", 1},
                   {"pyramid", {{"spec", "zagg-pyramid/1"}, {"overview", {{"orders", Json::array()}}}}}};
  const std::string manifest_text = codec::json::dump(manifest, {1, false, codec::json::FloatStyle::Python, true});
  hive_root.put(std::string(hive::kManifestKey), std::as_bytes(std::span(manifest_text)));

  const std::string group = report.leaf_key + "/" + std::to_string(o.cell_order);
  zarr::write_group(hive_root, report.leaf_key, {});
  zarr::write_group(hive_root, group, {leaf::dggs_attributes(o.cell_order, geo::Latitude::Authalic)});

  // Three round swaths where observations fall; the digest values follow a smooth field.
  Rng rng{o.seed};
  struct Swath {
    double x, y, r;
  };
  std::vector<Swath> swaths;
  swaths.reserve(3);
  for (int i = 0; i < 3; ++i)
    swaths.push_back({rng.uniform() * side, rng.uniform() * side, side * (0.25 + 0.2 * rng.uniform())});
  // Closeness to the nearest swath centre (0 outside every swath, 1 at a centre); the population
  // probability is proportional to it, scaled so that its mean over the leaf is the requested
  // fraction.
  std::vector<double> closeness(report.cells, 0.0);
  double closeness_sum = 0;
  for (std::uint64_t rank = 0; rank < report.cells; ++rank) {
    const auto xy = morton::rank_to_xy(rank);
    for (const auto& s : swaths)
      closeness[rank] = std::max(closeness[rank], 1.0 - std::hypot(xy.x - s.x, xy.y - s.y) / s.r);
    closeness_sum += closeness[rank];
  }
  const double scale = closeness_sum > 0 ? o.populated_fraction * static_cast<double>(report.cells) / closeness_sum : 0;
  std::vector<std::vector<std::byte>> payloads(report.cells);
  std::vector<float> means;
  for (std::uint64_t rank = 0; rank < report.cells; ++rank) {
    const auto xy = morton::rank_to_xy(rank);
    if (rng.uniform() >= scale * closeness[rank]) continue;
    const double centre =
        20.0 + 8.0 * std::sin(2 * std::numbers::pi * xy.x / side) * std::cos(2 * std::numbers::pi * xy.y / side);
    const std::uint32_t k =
        o.min_centroids + static_cast<std::uint32_t>(rng.next() % (o.max_centroids - o.min_centroids + 1));
    means.resize(k);
    for (auto& m : means) m = static_cast<float>(centre + 10.0 * (2.0 * rng.uniform() - 1.0) * rng.uniform());
    std::sort(means.begin(), means.end());
    auto& out = payloads[rank];
    out.reserve(std::size_t{k} * 8);
    for (float m : means) {
      append_le<float>(out, m);
      append_le<float>(out, static_cast<float>(1 + rng.next() % 8));
    }
    ++report.populated;
    report.centroids += k;
  }
  const std::vector<std::span<const std::byte>> views(payloads.begin(), payloads.end());
  const leaf::CellsAxis axis{report.cells, chunk_cells, true};
  zarr::ArrayWriter digests(hive_root, group + "/" + o.field,
                            leaf::ragged_array(axis, Json{{"ragged", leaf::ragged_block("float32", {2})}}));
  digests.write_metadata();
  digests.write_vlen_object({0}, views);

  // `morton` holds the word of every cell of every written chunk (spec §2.1): all of them here
  // whenever a chunk has a digest; chunks without any stay absent.
  std::vector<std::byte> words(report.cells * 8, std::byte{0});
  for (std::uint64_t chunk = 0; chunk < report.cells / chunk_cells; ++chunk) {
    bool written = false;
    for (std::uint64_t i = 0; i < chunk_cells && !written; ++i) written = !views[chunk * chunk_cells + i].empty();
    if (!written) continue;
    for (std::uint64_t i = 0; i < chunk_cells; ++i) {
      const std::uint64_t rank = chunk * chunk_cells + i;
      store_le<std::uint64_t>(words.data() + 8 * rank, morton::descendant(shard, depth, rank));
    }
  }
  zarr::ArrayWriter morton_writer(hive_root, group + "/morton", leaf::dense_array(axis, "uint64", Json(0)));
  morton_writer.write_metadata();
  morton_writer.write_dense_object({0}, words);

  if (o.stamp) {
    std::vector<std::uint64_t> occupied;
    for (std::uint64_t rank = 0; rank < report.cells; ++rank)
      if (!views[rank].empty()) occupied.push_back(rank);
    hive::StampSpec stamp;
    stamp.cells_with_data = report.populated;
    stamp.written_at = "2026-01-01T00:00:00+00:00";  // fixed: the same seed gives the same bytes
    stamp.cell_order = o.cell_order;
    stamp.box = hive::morton_box(shard, depth, occupied);
    stamp.sidecar = hive::encode_sidecar(occupied, depth);
    hive_root.put(report.leaf_key + "/coverage.moc", stamp.sidecar->object);
    zarr::write_group(hive_root, report.leaf_key, {Json{{"morton_hive_commit", hive::stamp_document(stamp)}}});
  }
  return report;
}

}  // namespace tessera::ragged
