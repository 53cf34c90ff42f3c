// morton-hive pieces (spec §4) and toc words (spec §3.8) against the conformance data.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support.hpp"
#include "support/testing.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged {
namespace {

using codec::json::Json;
namespace fs = std::filesystem;

std::string hex(std::span<const std::byte> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (auto x : b) s += d[std::to_integer<int>(x) >> 4], s += d[std::to_integer<int>(x) & 15];
  return s;
}

TEST(Hive, ManifestsOfEveryFixture) {
  for (const char* fx : {"minimal", "kitchen_sink", "flux", "column", "temporal", "raster_toc", "pyramid"}) {
    io::DirectoryStore store((test::zagg_dir() / "tests/data/spec" / fx).string());
    const auto m = hive::Manifest::read(store);
    ASSERT_TRUE(m) << fx;
    EXPECT_EQ(m->spec, "morton-hive/1");
    EXPECT_EQ(m->cell_order, 6);
    EXPECT_EQ(m->shard_order, std::string(fx) == "pyramid" ? 3 : 4);
    EXPECT_EQ(m->path_grouping, 1);
    EXPECT_TRUE(m->document.contains("pyramid"));  // carried opaquely
  }
  io::DirectoryStore strata((test::zagg_dir() / "moczarr/tests/data/strata_hive").string());
  EXPECT_EQ(hive::Manifest::read(strata)->cell_order, 6);
  EXPECT_THROW(hive::Manifest::parse(R"({"spec": "morton-hive/9", "cell_order": 6, "shard_order": 4})"),
               UnsupportedError);
  EXPECT_THROW(hive::Manifest::parse(R"({"spec": "morton-hive/1", "shard_order": 4})"), FormatError);
  EXPECT_THROW(hive::Manifest::parse(R"({"spec": "morton-hive/1", "cell_order": 3, "shard_order": 4})"), FormatError);
  EXPECT_THROW(hive::Manifest::parse("[1]"), FormatError);
}

TEST(Hive, LeafPaths) {
  EXPECT_EQ(hive::leaf_path("11213"), "1/1/2/1/3/11213.zarr");
  EXPECT_EQ(hive::leaf_path("-5112333"), "-5/1/1/2/3/3/3/-5112333.zarr");
  EXPECT_EQ(hive::leaf_path("433142241", 3), "4/331/422/41/433142241.zarr");
  EXPECT_EQ(hive::leaf_path("11213", 1, "2019"), "1/1/2/1/3/11213_2019.zarr");
  EXPECT_EQ(hive::leaf_path(morton::parse_decimal("43314")), "4/3/3/1/4/43314.zarr");
  EXPECT_THROW(hive::leaf_path("1121x"), UsageError);
  EXPECT_EQ(hive::shard_of_basename("11213.zarr"), morton::parse_decimal("11213"));
  EXPECT_EQ(hive::shard_of_basename("11213_2019-07.zarr"), morton::parse_decimal("11213"));
  EXPECT_FALSE(hive::shard_of_basename("all.pyramid.zarr"));
  EXPECT_FALSE(hive::shard_of_basename("all.zarr"));
  // every fixture leaf sits at its computed path
  for (const char* fx : {"minimal", "temporal", "raster_toc"})
    EXPECT_TRUE(fs::exists(test::zagg_dir() / "tests/data/spec" / fx / hive::leaf_path("11213") / "zarr.json"));
}

TEST(Hive, CommitStampsAndEnvelopes) {
  io::DirectoryStore leaf(test::fixture_leaf("minimal").string());
  const auto s = hive::read_commit_stamp(leaf);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->spec, "morton-hive/1");
  EXPECT_TRUE(s->complete);
  EXPECT_EQ(s->cells_with_data, 4u);
  EXPECT_EQ(s->granule_count, 1u);
  ASSERT_TRUE(s->coverage.present);
  EXPECT_EQ(s->coverage.encoding, hive::CoverageEnvelope::Encoding::Bitmap);
  EXPECT_EQ(s->coverage.sidecar, "coverage.moc");
  EXPECT_EQ(s->coverage.nbytes, 11u);
  EXPECT_EQ(s->coverage.raw_nbytes, 2u);
  ASSERT_EQ(s->coverage.box.size(), 4u);
  EXPECT_EQ(s->coverage.box[0], "112131");
  EXPECT_EQ(s->coverage.box[2], "1121344");
  EXPECT_FALSE(s->coverage.box[3]);
  // the column's stamp has no envelope
  io::DirectoryStore column((test::fixture_leaf("column").parent_path() / "all.pyramid.zarr").string());
  const auto cs = hive::read_commit_stamp(column);
  ASSERT_TRUE(cs);
  EXPECT_FALSE(cs->coverage.present);
  EXPECT_EQ(cs->cells_with_data, 3u);
  // gates: wrong envelope spec reads as absent; unknown encoding degrades to box-only;
  // an unknown stamp spec is refused
  Json stamp = Json::parse(
      R"({"spec": "morton-hive/1", "complete": true, "coverage": {"spec": "morton-moc/2", "encoding": "bitmap"}})");
  EXPECT_FALSE(hive::parse_commit_stamp(stamp, "k").coverage.present);
  stamp["coverage"]["spec"] = "morton-moc/1";
  stamp["coverage"]["encoding"] = "rle";
  EXPECT_EQ(hive::parse_commit_stamp(stamp, "k").coverage.encoding, hive::CoverageEnvelope::Encoding::BoxOnly);
  stamp["coverage"]["sidecar"] = "../x";
  EXPECT_THROW(hive::parse_commit_stamp(stamp, "k"), FormatError);
  stamp["spec"] = "morton-hive/7";
  EXPECT_THROW(hive::parse_commit_stamp(stamp, "k"), UnsupportedError);
}

TEST(Hive, CoverageBitmapGoldens) {
  const Json g = test::read_json(test::zagg_dir() / "golden_vectors.json")["coverage_bitmap"];
  for (const Json& v : g["vectors"]) {
    const int depth = v["depth"].get<int>();
    std::vector<std::uint64_t> ranks;
    for (const Json& t : v["tails"]) {
      std::uint64_t r = 0;
      for (const char c : t.get<std::string>()) r = r * 4 + static_cast<std::uint64_t>(c - '1');
      ranks.push_back(r);
    }
    const auto raw = hive::encode_bitmap(ranks, depth);
    EXPECT_EQ(hex(raw), v["raw_hex"].get<std::string>());
    EXPECT_EQ(hive::decode_bitmap(raw, depth), ranks);
  }
  // the fixture sidecars
  const auto sidecar = [](const fs::path& leaf) { return testing::read_file_bytes(leaf / "coverage.moc"); };
  for (const auto& fx : test::digest_fixtures())
    EXPECT_EQ(hive::decode_sidecar(sidecar(test::fixture_leaf(fx)), 2, fx), (std::vector<std::uint64_t>{0, 2, 5, 15}))
        << fx;
  EXPECT_EQ(hive::decode_sidecar(sidecar(test::strata_leaf()), 2, "strata"),
            (std::vector<std::uint64_t>{0, 2, 5, 13, 15}));
  EXPECT_EQ(hive::decode_sidecar(sidecar(test::fixture_leaf("raster_toc")), 2, "raster").size(), 16u);
  EXPECT_EQ(hex(sidecar(test::fixture_leaf("minimal"))), "28b52ffd2002110000a401");
  // wrong decoded size raises (never pads or truncates); pad bits are ignored but reported
  EXPECT_THROW(hive::decode_sidecar(codec::zstd_compress(std::vector<std::byte>(3)), 2, "x"), FormatError);
  EXPECT_THROW(hive::decode_sidecar(codec::zstd_compress(std::vector<std::byte>(1)), 2, "x"), FormatError);
  EXPECT_THROW(hive::decode_sidecar(std::vector<std::byte>(5, std::byte{7}), 2, "x"), FormatError);
  const std::vector<std::byte> padded{std::byte{0x80}};
  EXPECT_EQ(hive::decode_bitmap(padded, 1), std::vector<std::uint64_t>{0});
  EXPECT_TRUE(hive::bitmap_pad_bits_set(std::vector<std::byte>{std::byte{0x81}}, 1));
  EXPECT_FALSE(hive::bitmap_pad_bits_set(padded, 1));
}

TEST(Hive, RootCoverageMoc) {
  io::DirectoryStore root((test::zagg_dir() / "tests/data/spec/temporal").string());
  const auto moc = hive::read_root_moc(root);
  ASSERT_TRUE(moc);
  EXPECT_EQ(moc->order, 4);
  EXPECT_EQ(moc->shards, std::vector<std::uint64_t>{morton::parse_decimal("11213")});
  ASSERT_EQ(moc->shard_times.size(), 1u);
  EXPECT_EQ(moc->shard_times.at(morton::parse_decimal("11213")), 10689250968998768172ull);
  EXPECT_EQ(moc->temporal_fields, std::vector<std::string>{"h_tdigest"});
  ASSERT_TRUE(moc->temporal_digest);  // tier 2 carried as it is
  EXPECT_EQ((*moc->temporal_digest)["centroids"].get<int>(), 35);
  // ranges expand; unknown spec/encoding or bad JSON read as absent; bad ranges are errors
  const auto two = hive::parse_root_moc(
      R"({"spec": "morton-moc/1", "encoding": "ranges", "order": 2, "ranges": [["111", "114"], ["-612", "-613"]]})");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->shards.size(), 6u);
  EXPECT_FALSE(hive::parse_root_moc("{not json"));
  EXPECT_FALSE(hive::parse_root_moc(R"({"spec": "morton-moc/2", "encoding": "ranges", "order": 2, "ranges": []})"));
  EXPECT_FALSE(hive::parse_root_moc(R"({"spec": "morton-moc/1", "encoding": "bits", "order": 2, "ranges": []})"));
  EXPECT_THROW(
      hive::parse_root_moc(R"({"spec": "morton-moc/1", "encoding": "ranges", "order": 2, "ranges": [["114", "111"]]})"),
      FormatError);
  EXPECT_THROW(
      hive::parse_root_moc(R"({"spec": "morton-moc/1", "encoding": "ranges", "order": 2, "ranges": [["144", "211"]]})"),
      FormatError);
  EXPECT_THROW(
      hive::parse_root_moc(R"({"spec": "morton-moc/1", "encoding": "ranges", "order": 2, "ranges": [["11", "12"]]})"),
      FormatError);
}

TEST(Toc, SpecWorkedExampleAndFixtureWords) {
  // spec §3.8: temporal cell 2
  const std::uint64_t internal = toc::from_unix_ns(1557800158250000000);
  EXPECT_EQ(internal, 5344625776250000000ull);
  EXPECT_EQ(toc::encode_timestamp(internal), 10689251554332447360ull);
  const auto i = toc::decode(10689251554332447360ull);
  EXPECT_EQ(i.kind, toc::Kind::Timestamp);
  EXPECT_EQ(i.start_ns, internal);
  // the join of the four observed words is the shard word of the root coverage
  const Json e = test::expected("temporal");
  std::uint64_t joined = 0;
  bool first = true;
  for (const Json& c : e["cells"]) {
    const std::uint64_t w = test::word_of(c["observed"]);
    joined = first ? w : toc::join(joined, w);
    first = false;
    // every per-centroid word contains its recorded real span (converted to the toc scale)
    for (std::size_t r = 0; r < c["h_tdigest_times"].size(); ++r) {
      const auto& span = c["centroid_spans_ns"][r];
      const std::uint64_t lo = toc::from_unix_ns(static_cast<std::int64_t>(test::word_of(span[0])));
      const std::uint64_t hi = toc::from_unix_ns(static_cast<std::int64_t>(test::word_of(span[1])));
      const std::uint64_t w = test::word_of(c["h_tdigest_times"][r]);
      EXPECT_TRUE(toc::contains(w, lo, hi)) << w;
      EXPECT_EQ(toc::kind_of(w) == toc::Kind::Timestamp, lo == hi);
    }
    const std::uint64_t olo = toc::from_unix_ns(static_cast<std::int64_t>(test::word_of(c["obs_span_ns"][0])));
    const std::uint64_t ohi = toc::from_unix_ns(static_cast<std::int64_t>(test::word_of(c["obs_span_ns"][1])));
    EXPECT_TRUE(toc::contains(test::word_of(c["observed"]), olo, ohi));
  }
  EXPECT_EQ(joined, 10689250968998768172ull);
  // the join is commutative, associative and idempotent
  const std::uint64_t a = toc::encode_timestamp(1ull << 40), b = toc::encode_range(1ull << 41, 1ull << 42),
                      c = toc::encode_timestamp(5ull << 39);
  EXPECT_EQ(toc::join(a, b), toc::join(b, a));
  EXPECT_EQ(toc::join(toc::join(a, b), c), toc::join(a, toc::join(b, c)));
  EXPECT_EQ(toc::join(a, a), a);
  EXPECT_EQ(toc::decode(0).end_ns, 0u);
  EXPECT_THROW(toc::encode_range(5, 4), UsageError);
  EXPECT_THROW(toc::encode_timestamp(toc::kTocMaxNs), UsageError);
  EXPECT_THROW(toc::from_unix_ns(-4000000000000000000), UsageError);
  EXPECT_EQ(toc::from_gps_ns(0), toc::kGpsEpochNs);
  EXPECT_TRUE(toc::overlaps(a, 1ull << 40, (1ull << 40) + 1));
  EXPECT_FALSE(toc::overlaps(a, 0, 1ull << 40));
}

// A cursor answers as membership in the occupied words does, whatever order the words come in:
// ascending (a block's words, one gallop per word), descending and shuffled (each word before the
// last found is searched from the start), repeated, unwritten (0), and past either end.
TEST(RaggedOccupancy, CursorAnswersAsMembershipInAnyOrder) {
  Occupancy bitmap;
  bitmap.kind = Occupancy::Kind::Bitmap;
  for (std::uint64_t w = 5; w < 5000; w += 3 + w % 7) bitmap.occupied.push_back(w);
  const auto member = [&](std::uint64_t w) {
    return w != 0 && std::binary_search(bitmap.occupied.begin(), bitmap.occupied.end(), w);
  };
  std::vector<std::uint64_t> words;
  for (std::uint64_t w = 0; w < 5100; ++w) words.push_back(w);
  std::vector<std::vector<std::uint64_t>> orders{words, {words.rbegin(), words.rend()}, words, {7, 7, 7, 0, 8, 5}};
  std::shuffle(orders[2].begin(), orders[2].end(), std::mt19937(4));
  std::size_t observed = 0;
  for (const auto& order : orders) {
    OccupancyCursor cursor(bitmap);
    for (const std::uint64_t w : order) {
      ASSERT_EQ(cursor.observed(w), member(w)) << "word " << w;
      observed += member(w);
    }
  }
  EXPECT_EQ(observed, 3 * bitmap.occupied.size() + 1);
  Occupancy empty;
  empty.kind = Occupancy::Kind::Bitmap;
  OccupancyCursor none_occupied(empty);
  EXPECT_FALSE(none_occupied.observed(5));
  Occupancy full;
  full.kind = Occupancy::Kind::Full;
  OccupancyCursor every(full);
  EXPECT_TRUE(every.observed(0));
  EXPECT_TRUE(every.observed(12345));
  const Occupancy no_occupancy;  // Kind::None: the 2-state mask
  OccupancyCursor unknown(no_occupancy);
  EXPECT_FALSE(unknown.observed(5));
}

}  // namespace
}  // namespace tessera::ragged
