// Building a morton-hive store from point observations (spec §6.1, §6.4, §8.4): the library side
// of `tessera ragged build`.
//
// Two passes keep memory bounded by one shard's rows:
//   1. read every input (CSV files with a header row, Parquet files, or directories of `.npy` columns) in
//      blocks, geocode each row (in parallel), reject bad rows (counted by reason; `strict`
//      stops at the first, naming its file and row, before any leaf is written), and spill the
//      accepted rows to one file per shard below a hidden working directory of the store;
//   2. for each shard in ascending word order: load its rows, counting-sort them by cell
//      (stable: a cell's rows keep their input order), aggregate and encode the read chunks in
//      parallel (digests §6.3, counts, dense statistics §6.1a, per-cell times), and commit the
//      leaf (leaf_writer.hpp).
// The manifest is written (or checked) before the first leaf and the root coverage MOC after the
// last one. A distributed build (docs/distributed.md) splits this: each task runs with
// `leaves_only` on its shards' rows and commits their leaves, then one `commit_leaves` writes the
// manifest and merges every task's shards into the coverage MOC. A flat store (`leaf.geometry.flat`, §6.2) has neither:
// every shard's chunks go into the same sphere-wide arrays at the store root. No content hashes are computed: §7 hashes
// a fixed-width array whole, fill included, and a flat array spans 12·4^cell_order cells.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ragged/leaf_writer.hpp"

namespace tessera::ragged::build {

enum class TimeFormat : std::uint8_t { Iso, UnixNs, GpsNs, TocNs };
// "iso" | "unix-ns" | "gps-ns" | "toc-ns" (UsageError otherwise).
TimeFormat parse_time_format(std::string_view name);

// The lock file a build holds in its output store for its whole run (io::FileLock).
inline constexpr const char* kBuildLockName = ".tessera-build.lock";

// One block of point rows as an input reader delivers them: columns of one length, widened to
// float64 (a value that did not parse is NaN and the row is refused with its column's reason);
// times as toc words (0 = unparsable). `dropped` counts rows the reader left out itself (a
// granule's quality filter or fill values), by reason; they count as read and rejected.
struct PointBlock {
  std::size_t file = 0;         // index of the input
  std::uint64_t first_row = 0;  // 1-based row (CSV: header excluded) of element 0
  std::vector<double> lat, lon, value;
  std::vector<double> weight, sigma;  // empty when the column is not read
  std::vector<std::uint64_t> time;    // empty when not read
  // Further columns by name (those a field's `where` or the composition reads), one value per row.
  std::map<std::string, std::vector<double>> extra;
  std::map<std::string, std::uint64_t> dropped;
  std::size_t size() const noexcept { return lat.size(); }
  void clear();
};
using PointSink = std::function<void(PointBlock&)>;
// Reads input `path` (the `file`-th) in blocks of at most `block_rows` rows; returns false, before
// reading anything, when `path` is not an input it reads (the built-in CSV, Parquet and .npy
// readers then take it). How a caller adds input kinds the library does not link (HDF5
// granules, read by the interop module).
using InputReader =
    std::function<bool(const std::string& path, std::size_t file, std::size_t block_rows, const PointSink& sink)>;

struct BuildOptions {
  std::vector<std::string> inputs;  // CSV files, Parquet files or directories of .npy columns
  std::string lat_col = "lat";
  std::string lon_col = "lon";
  std::string value_col;  // required
  std::optional<std::string> time_col;
  TimeFormat time_format = TimeFormat::Iso;
  std::optional<std::string> weight_col;  // makes the field flux
  std::optional<std::string> sigma_col;   // §6.1a weighted mean and sigma (needs stats)
  bool strict = false;
  // Values dropped and counted before aggregation, like the other bad rows: one equal to a drop
  // value (a product's fill value; also matched after rounding to float32, so 3.4028235e38 names
  // float32's largest value) → `fill_value`; one outside [valid_min, valid_max] (inclusive, as
  // CF's valid_min/valid_max) → `outside_valid_range`.
  std::vector<double> drop_values;
  std::optional<double> valid_min, valid_max;
  InputReader input_reader;  // tried first for every input when set

  // The leaf layout: geometry, the one field, statistics, per-cell time, latitude convention,
  // metadata flavour. `granule_count` and `semantic_hash` are filled in by `run`.
  LeafSpec leaf;
  std::string dataset_name = "TESSERA";
  std::string dataset_version = "1";
  bool overwrite = false;
  // A task of a distributed build: commit the leaves only. The manifest is checked, not written,
  // the coverage MOC is left alone, and the store's build lock is taken shared, so the other
  // tasks run alongside while a whole-store build is kept out. A flat store cannot be built so.
  bool leaves_only = false;
  unsigned threads = 0;            // 0: all hardware threads
  std::string writer = "tessera";  // the stats record's `writer`
};

// A row refused before aggregation, by reason: non_finite_coordinate, latitude_out_of_range,
// non_finite_value, fill_value, outside_valid_range, bad_weight, bad_sigma, bad_time.
struct LeafSummary {
  std::uint64_t shard = 0;
  std::string leaf;
  std::uint64_t cells_with_data = 0;
  std::uint64_t observations = 0;
  std::string combined_hash;
  std::uint64_t time_join = 0;  // join of the leaf's time words (0 unless the field is timed)
};

struct BuildReport {
  std::string semantic_hash;
  std::vector<LeafSummary> leaves;
  std::uint64_t rows_read = 0;
  std::uint64_t rows_accepted = 0;
  std::map<std::string, std::uint64_t> rejected;  // reason → rows
  std::uint64_t cells_with_data = 0;
  bool flat = false;         // a flat store: `leaves` name no leaf and carry no content hashes
  bool leaves_only = false;  // a task of a distributed build (BuildOptions::leaves_only)
  double elapsed_seconds = 0;
  std::vector<std::string> warnings;
};

struct BuildProgress {
  enum class Phase : std::uint8_t { Reading, Writing } phase = Phase::Reading;
  std::uint64_t done = 0;   // rows read, or shards written
  std::uint64_t total = 0;  // rows to read (0 when unknown), or shards to write
};
using ProgressSink = std::function<void(const BuildProgress&)>;

// The manifest's semantic hash (spec §6.1 step 8, RD-8): sha256 of the canonical JSON of the
// build parameters that decide what a leaf means.
std::string semantic_hash(const LeafSpec& leaf);

// Runs the build into the directory `out` (created when missing). UsageError: bad options, a
// column missing from an input, a frozen manifest key that differs, a committed leaf without
// `overwrite`; FormatError: an unreadable input, or the first bad row under `strict`.
BuildReport run(const std::string& out, BuildOptions options, const ProgressSink& progress = {});

// A leaf a task of a distributed build committed, as its report names it.
struct CommittedLeaf {
  std::uint64_t shard = 0;      // the leaf's morton word (the report's decimal `shard`)
  std::uint64_t time_join = 0;  // 0 unless timed
};
// The last step of a distributed build: with the store's build lock held exclusively, checks
// that every leaf in `leaves` is committed in `committed_in` (the hive's store: `out` itself, or
// the bucket a staged `out` is published to), then writes or checks the manifest in `out` and
// merges the leaves' shards into its coverage MOC, exactly as `run` does after its last leaf.
// `options` are the build's (the inputs are not read). UsageError: a leaf that is not committed,
// a manifest that disagrees, a flat layout.
void commit_leaves(const std::string& out, BuildOptions options, const std::vector<CommittedLeaf>& leaves,
                   const io::Store& committed_in);

}  // namespace tessera::ragged::build
