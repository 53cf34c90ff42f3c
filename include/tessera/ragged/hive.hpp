// morton-hive stores (spec §4): the manifest, leaf path arithmetic, the leaf commit stamp and its
// coverage envelope, the `coverage.moc` occupancy bitmap, and the root coverage MOC.
//
// Parsing only: the readers of ragged_field.hpp are store-scoped (they take a Store rooted at one
// leaf) and never walk the hive; these pieces let a caller find and judge a leaf.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"

namespace tessera::ragged::hive {

inline constexpr std::string_view kManifestKey = "morton_hive.json";
inline constexpr std::string_view kRootCoverageKey = "coverage.moc";

// `morton_hive.json`. Unknown `spec` → UnsupportedError; missing or mistyped required keys →
// FormatError. The whole document is kept (`pyramid` and other blocks are carried opaquely).
struct Manifest {
  std::string spec;  // "morton-hive/1", "/2" or "/3"
  int cell_order = 0;
  int shard_order = 0;
  int path_grouping = 1;
  codec::json::Json document;

  static Manifest parse(std::string_view text, std::string_view key = kManifestKey);
  // nullopt when the store has no manifest at its root.
  static std::optional<Manifest> read(const io::Store& store);
};

// The store key of a shard's leaf (spec §4.2): `1/1/2/1/3/11213.zarr`; with a window
// (morton-hive/2) the basename is `{id}_{window}.zarr`. UsageError for an invalid id or grouping.
std::string leaf_path(std::string_view shard_decimal, int path_grouping = 1, std::string_view window = {});
std::string leaf_path(std::uint64_t shard_word, int path_grouping = 1, std::string_view window = {});
// The shard word a leaf basename names (`11213.zarr`, `11213_2019.zarr`), nullopt when it names
// none (`all.zarr`, `all.pyramid.zarr`).
std::optional<std::uint64_t> shard_of_basename(std::string_view basename);

// The coverage envelope of a stamp (spec §4.4). `present` is false when the envelope is absent
// or fails the `morton-moc/1` gate; an unknown `encoding` degrades to box-only.
struct CoverageEnvelope {
  enum class Encoding : std::uint8_t { BoxOnly, Bitmap, Full };
  bool present = false;
  Encoding encoding = Encoding::BoxOnly;
  std::vector<std::optional<std::string>> box;  // the four slots
  std::optional<std::int64_t> cell_order;
  std::optional<std::string> sidecar;  // validated key component
  std::optional<std::uint64_t> nbytes;
  std::optional<std::uint64_t> raw_nbytes;
  std::optional<std::string> source;
};

// `attributes.morton_hive_commit` of a leaf root (spec §4.3).
struct CommitStamp {
  std::string spec;
  bool complete = false;
  std::optional<std::uint64_t> cells_with_data;
  std::optional<std::uint64_t> granule_count;
  std::optional<std::string> written_at;
  std::optional<std::string> window;
  CoverageEnvelope coverage;
  codec::json::Json document;
};

// The stamp of the store's root group, nullopt when the store has no root `zarr.json`, it is not
// a group, or it carries no stamp object. A stamp with an unknown `spec` → UnsupportedError.
// (A stamp without `complete: true` is returned; `is_committed` says whether it counts.)
std::optional<CommitStamp> read_commit_stamp(const io::Store& store);
CommitStamp parse_commit_stamp(const codec::json::Json& stamp, std::string_view key);
inline bool is_committed(const std::optional<CommitStamp>& s) { return s && s->complete; }

// ---- coverage.moc bitmap (spec §4.5) ----
// Raw bitmap bytes of occupied ranks of a depth-`depth` subtree (MSB-first, ceil(4^depth/8) bytes).
std::vector<std::byte> encode_bitmap(std::span<const std::uint64_t> ranks, int depth);
// Ranks of the set bits (pad bits ignored). FormatError when the size is not ceil(4^depth/8).
std::vector<std::uint64_t> decode_bitmap(std::span<const std::byte> raw, int depth,
                                         std::string_view key = "coverage.moc");
// Decompresses a sidecar object (all frames, output capped at raw size + 1) and decodes it.
std::vector<std::uint64_t> decode_sidecar(std::span<const std::byte> object, int depth, std::string_view key);
// Whether nonzero pad bits follow the last rank (what `verify` reports).
bool bitmap_pad_bits_set(std::span<const std::byte> raw, int depth) noexcept;

// ---- root coverage MOC (spec §4.6) ----
struct RootMoc {
  int order = 0;
  std::vector<std::uint64_t> shards;  // expanded ranges, ascending words
  std::optional<std::string> source;
  std::optional<std::string> generated_at;
  // Tier 1 of a `zagg-coverage-toc/1` temporal section: shard word → toc word.
  std::map<std::uint64_t, std::uint64_t> shard_times;
  std::vector<std::string> temporal_fields;
  // The tier-2 time digest block, carried as it is (spec §4.6 defines only its presence).
  std::optional<codec::json::Json> temporal_digest;
  codec::json::Json document;
};
// nullopt when the text is not JSON or has an unknown spec/encoding (readers then walk); a
// malformed range (crossing base cells, wrong order, reversed) is a FormatError.
std::optional<RootMoc> parse_root_moc(std::string_view text, std::string_view key = kRootCoverageKey);
std::optional<RootMoc> read_root_moc(const io::Store& store);

}  // namespace tessera::ragged::hive
