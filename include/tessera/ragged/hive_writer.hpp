// Writing the store-level and leaf-level structures of a morton-hive store (spec §4): the
// manifest (or checking a new run against an existing one), the morton box of an occupied cell
// set, the coverage sidecar bytes, the commit stamp, the root coverage MOC with its tier-1 time
// words, and the UTC timestamps they carry. The readers of the same structures are in hive.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"

namespace tessera::ragged::hive {

// ISO-8601 UTC with seconds and `+00:00` (`2026-08-10T11:57:30+00:00`) of output_time(): now, or
// SOURCE_DATE_EPOCH when set, so a build with the same inputs gives the same bytes.
std::string utc_now_iso();

// What tessera writes into `morton_hive.json` (spec §4.1, §6.1 step 8).
struct ManifestSpec {
  std::string short_name = "TESSERA";
  std::string version = "1";
  std::string semantic_hash;
  int cell_order = 19;
  int shard_order = 9;
};
// The manifest document in zagg's key order (no pyramids: `zagg-pyramid/1`, no overview orders).
codec::json::Json manifest_document(const ManifestSpec& spec, const std::string& generated_at);
// Writes the manifest when the store has none; otherwise checks the frozen keys (`spec`,
// `dataset`, `semantic_hash` when both sides have it, `cell_order`, `shard_order`,
// `split_schedule`, `path_grouping`, `temporal`) and leaves the object alone. UsageError naming
// the first key that differs.
void write_or_check_manifest(io::Store& store, const ManifestSpec& spec);
// The check alone, writing nothing: false when the store has no manifest, true when it has one
// that agrees; UsageError as above when it does not. A build checks first and writes the
// manifest only when its first leaf is about to commit, so a build that fails earlier leaves
// nothing that steers (or refuses) the next one.
[[nodiscard]] bool check_manifest(const io::Store& store, const ManifestSpec& spec);

// The morton box of occupied cells of one shard (spec §4.4): ranks are subtree ranks at depth
// `depth` below `shard`; ≤ 4 decimal ids, padded with nullopt to four slots.
std::vector<std::optional<std::string>> morton_box(std::uint64_t shard, int depth,
                                                   std::span<const std::uint64_t> ranks);

// The `coverage.moc` object of occupied ranks (one zstd frame of the raw bitmap, level 3).
struct CoverageSidecar {
  std::vector<std::byte> object;
  std::uint64_t raw_nbytes = 0;
};
CoverageSidecar encode_sidecar(std::span<const std::uint64_t> ranks, int depth);

// `attributes.morton_hive_commit` (spec §4.3, §6.1 step 6) in zagg's key order; `sidecar` absent
// writes a box-only envelope.
struct StampSpec {
  std::uint64_t cells_with_data = 0;
  std::uint64_t granule_count = 0;
  std::string written_at;
  std::vector<std::optional<std::string>> box;
  int cell_order = 0;
  std::optional<CoverageSidecar> sidecar;  // only nbytes/raw_nbytes are used
};
codec::json::Json stamp_document(const StampSpec& spec);

// Merges this run's shards (and, when any field is timed, their tier-1 toc words) into
// `{root}/coverage.moc` by the rules of spec §4.6: union with a compatible existing object,
// overwrite an incompatible or unparsable one, preserve an existing temporal section this run
// does not contribute to. `temporal_fields` empty = no temporal contribution.
void update_root_moc(io::Store& store, int shard_order, std::span<const std::uint64_t> shards,
                     const std::map<std::uint64_t, std::uint64_t>& shard_times,
                     const std::vector<std::string>& temporal_fields, const std::string& generated_at);

}  // namespace tessera::ragged::hive
