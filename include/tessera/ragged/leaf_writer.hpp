// The morton-hive leaf writer (spec §6.1, §6.1a, §6.2): one shard's cells → a committed leaf.
//
// A writer is fed one read chunk at a time (`ChunkData`: counts, digests, dense statistics,
// per-cell times of the chunk's C cells). `encode` turns a chunk into the stored bytes of every
// leaf array and is thread-safe, so chunks encode in parallel; `add` (serial) keeps the encoded
// inner chunks for the shard objects or, in the per-inner-chunk geometry, writes the chunk's
// objects at once and lets the chunk go (§6.2). `commit` writes, in order: every `zarr.json`,
// the shard objects, the `coverage.moc` bitmap, then the commit stamp as the leaf's last write;
// all of it under the temporary prefix `{leaf}.tmp-{pid}`, which then replaces the leaf in one
// atomic exchange (`renameat2(RENAME_EXCHANGE)` on a directory store), so an interrupted write
// or rewrite never leaves a stamped leaf with missing arrays and never loses the committed leaf.
// The stats sidecar (content hashes, §7) follows, fail-open.
//
// Nothing is written for a shard without observations. A writer that is destroyed without
// committing removes its temporary prefix; a killed one leaves it behind (readers ignore
// `*.tmp-*`, the next writer of that leaf removes it).
//
// In a flat store (LeafGeometry::flat) there is no leaf and no temporary prefix: the writer
// writes the root group, the `{c}` group and every array's `zarr.json` when it is made (the same
// documents for every shard), then each chunk's objects as they are added, each object atomically
// (§6.2); `commit` removes the objects of the shard's chunks that received nothing (stale ones
// from an earlier build). A flat store has no commit protocol: an interrupted build leaves the
// chunks written so far.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/tdigest_build.hpp"
#include "tessera/zarr/array_writer.hpp"

namespace tessera::ragged {

// Orders of a leaf: cells of order `cell_order` below a shard of `shard_order`, read chunks of
// 4^(cell_order − chunk_order) cells.
struct LeafGeometry {
  int cell_order = 19;
  int chunk_order = 13;
  int shard_order = 9;
  bool unsharded = false;  // per-inner-chunk objects even when a shard would bundle several
  // A flat store (§6.2, `--layout flat`): arrays span the sphere (12·4^cell_order cells) at the
  // store root, one object per read chunk keyed by the chunk's NESTED id; no manifest, leaf
  // prefix, stamp, coverage or stats sidecar. Every shard's writer adds its chunks to them.
  bool flat = false;

  int depth() const noexcept { return cell_order - shard_order; }
  std::uint64_t cells() const noexcept { return morton::pow4(depth()); }
  std::uint64_t chunk_cells() const noexcept { return morton::pow4(cell_order - chunk_order); }
  std::uint64_t chunks() const noexcept { return morton::pow4(chunk_order - shard_order); }
  // K > 1 and not forced unsharded (spec §6.1 step 3); never in a flat store.
  bool sharded() const noexcept { return chunks() > 1 && !unsharded && !flat; }
  // UsageError unless shard ≤ chunk ≤ cell ≤ 29, depth ≤ 13 (a leaf of at most 4^13 cells) and
  // a read chunk of at most 4^10 cells.
  void validate() const;
};

// One t-digest field and its declarations.
struct FieldSpec {
  std::string name = "h_tdigest";
  double delta = tdigest::kDefaultDelta;
  bool flux = false;  // weights "flux"; needs gain {name, version}
  std::optional<codec::json::Json> gain;
  bool located = false;  // writes `{name}_locations` (declared `located`)
  bool timed = false;    // writes `{name}_times` (declared `temporal`)
  // The rows the field aggregates: every row when empty, else those this row predicate selects
  // (ragged/row_predicate.hpp; zagg's `build_tdigest_where` strata).
  std::string where;
  // Attributes written beside the `ragged` block as given (a stratum's `stratum` and
  // `signal_threshold`); readers ignore them (spec §2.2 rule 8).
  codec::json::Json extra_attributes = codec::json::Json::object();

  std::string locations_name() const { return name + "_locations"; }
  std::string times_name() const { return name + "_times"; }
};

// The dense per-cell statistics of spec §6.1a: `{prefix}_{stat}` float32 arrays, fill NaN.
enum class Stat : std::uint8_t { Min, Max, Mean, Sigma, Variance, Q25, Q50, Q75 };
struct DenseStats {
  bool enabled = false;
  std::string prefix = "h";
  bool sigma = false;  // inverse-variance weighted mean and `{prefix}_sigma`
  // The statistics written, in array order.
  std::vector<Stat> stats() const;
};
std::string_view name_of(Stat stat) noexcept;

// The composition word array (spec §2.7, `zagg-composition/1`): per cell, the quantized fractions
// of the rows of field `of` whose confidence in each surface column reaches `threshold` (lanes
// 0–4, `surfaces` in lane order: land, ocean, sea_ice, land_ice, inland_water) and whose
// strongest confidence is exactly 2, 3 and 4 (lanes 5–7).
struct CompositionSpec {
  std::string name = "composition";
  std::string of;  // a field of the leaf
  std::int64_t threshold = 2;
  std::vector<std::string> surfaces;  // five row columns
};
// The spec §2.7 word of lane counts `counts` among `n` rows (weights): lane i is
// round_half_even(255·c/n) clipped to [0, 255], at least 1 when its count is nonzero, in bits
// 8i … 8i+7; n = 0 packs to 0.
std::uint64_t composition_word(std::span<const double, 8> counts, double n);

struct LeafSpec {
  LeafGeometry geometry;
  std::vector<FieldSpec> fields;
  DenseStats stats;
  std::optional<CompositionSpec> composition;
  std::optional<std::string> per_cell_time;  // dense uint64 per-cell toc join array
  geo::Latitude latitude = geo::Latitude::Authalic;
  bool zagg_identical_metadata = false;  // omit dggs.latitude (spec §2.8, RD-2)
  std::string semantic_hash;             // the manifest's, for the stats record
  std::uint64_t granule_count = 1;       // input files
  // UsageError: invalid geometry, array names that are not one key component, collide, or are
  // reserved; a flux field without gain {name, version}.
  void validate() const;
  // Whether any field carries a time companion.
  bool any_timed() const;
};

// The aggregated cells of one read chunk; every vector has the chunk's C entries (chunk-local
// rank order). `make_chunk` sizes them: counts 0, empty digests, NaN statistics, times 0.
struct ChunkData {
  std::uint64_t chunk = 0;                                  // read chunk ordinal in the leaf
  std::vector<std::int32_t> count;                          // observations per cell
  std::vector<std::vector<tdigest::StoredDigest>> digests;  // [field][cell]
  std::vector<std::vector<float>> stats;                    // [stat][cell]
  std::vector<std::uint64_t> cell_times;                    // per-cell toc join (0 = unobserved)
  std::vector<std::uint64_t> composition;                   // composition words (when the spec has them)
};
ChunkData make_chunk(const LeafSpec& spec, std::uint64_t chunk);

// A chunk's stored bytes for every array of the leaf, and what the stamp needs from it.
struct EncodedChunk {
  std::uint64_t chunk = 0;
  std::vector<std::optional<std::vector<std::byte>>> arrays;  // the writer's array order
  std::vector<std::uint64_t> occupied;                        // leaf ranks with count > 0
  std::uint64_t observations = 0;
  std::uint64_t time_join = 0;  // join of the per-centroid time words
};

struct LeafReport {
  bool written = false;
  std::string leaf_key;
  std::uint64_t shard = 0;
  std::uint64_t cells_with_data = 0;
  std::uint64_t observations = 0;
  std::uint64_t time_join = 0;  // 0 unless a field is timed
  ContentHashes hashes;
  std::vector<std::string> warnings;  // fail-open problems (stats sidecar)
};

// Whether the hive holds a committed leaf (root stamp with `complete: true`) for `shard`. A leaf
// whose root does not parse counts as debris (false).
bool is_leaf_committed(const io::Store& hive, std::uint64_t shard);

// Thread-safety: `encode` may be called concurrently; the other members one thread at a time.
// Lifetime: refers to the hive store, which must outlive it.
class LeafWriter {
 public:
  // `hive` is rooted at the store root. UsageError when the leaf is committed and `overwrite` is
  // false, or the spec is invalid. Stale temporary prefixes of the leaf are removed. A flat
  // writer ignores `overwrite` (whether a flat store may be added to is the caller's decision).
  LeafWriter(io::Store& hive, LeafSpec spec, std::uint64_t shard, bool overwrite);
  ~LeafWriter();
  LeafWriter(const LeafWriter&) = delete;
  LeafWriter& operator=(const LeafWriter&) = delete;

  const std::string& leaf_key() const noexcept { return leaf_key_; }
  const LeafSpec& spec() const noexcept { return spec_; }
  std::uint64_t shard() const noexcept { return shard_; }

  // Thread-safe. UsageError when the chunk's vectors do not match the spec.
  EncodedChunk encode(const ChunkData& chunk) const;
  // Serial. Each chunk at most once.
  void add(EncodedChunk chunk);
  // Writes the leaf (see the file comment). `writer` names the program in the stats record.
  LeafReport commit(const std::string& writer);

 private:
  struct ArrayEntry;
  io::Store& leaf_store();
  std::string where() const;  // the leaf's key, or the shard of a flat store, for messages
  void write_metadata();
  LeafReport commit_flat(LeafReport& report);
  void swap_into_place();

  io::Store* store_;
  std::unique_ptr<io::Store> staging_;  // unsynced writes below the temporary prefix (directory stores)
  // A sharded leaf bound for a directory is assembled here first: its content hashes are read
  // from memory, not back from the files, and the staged directory is written in one go.
  std::unique_ptr<io::MemoryStore> buffer_;
  LeafSpec spec_;
  std::uint64_t shard_;
  std::uint64_t first_cell_nested_ = 0;  // NESTED id of the leaf's cell 0 at the cell order
  std::uint64_t first_chunk_key_ = 0;    // the chunk key of the shard's chunk 0 (flat: its NESTED id)
  std::string leaf_key_;
  std::string tmp_key_;
  std::vector<ArrayEntry> arrays_;
  std::vector<std::vector<std::optional<std::vector<std::byte>>>> encoded_;  // [array][chunk] (sharded)
  std::vector<bool> seen_;
  std::vector<bool> filled_;  // chunks with at least one observation
  std::vector<std::uint64_t> occupied_;
  std::uint64_t observations_ = 0;
  std::uint64_t time_join_ = 0;
  bool touched_ = false;  // something exists under the temporary prefix
  bool committed_ = false;
};

}  // namespace tessera::ragged
