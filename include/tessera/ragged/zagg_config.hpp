// zagg's pipeline configs (the YAML files zagg ships: `atl06.yaml`,
// `atl03_tdigest_healpix_hive.yaml`, …) read into what `ragged build` needs: where a granule's
// points are (per-beam groups, coordinate and variable paths, the quality filter and row filters)
// and what each cell holds on which grid. Keys that only steer zagg's cloud runner (`driver`,
// `reader`, `worker`, `index`, `streaming`, `handoff`, `granule_workers`, `levels`, `read_plan`,
// `base_level`, `pyramid`, `coordinates.morton`) are accepted and ignored; a function,
// expression, grid or key outside the set tessera implements is a UsageError naming the config,
// the key and what is supported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/ragged/leaf_writer.hpp"

namespace tessera::ragged::zagg {

// A row filter on a granule dataset (one column of a 2-D dataset when `column` is set): rows
// for which `dataset[row] OP value` is false are dropped. `quality_filter: {dataset, value}` is
// the filter `dataset == value`.
struct RowFilter {
  enum class Op : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
  std::string dataset;  // path with `{group}`
  std::optional<std::uint64_t> column;
  Op op = Op::Eq;
  double value = 0;
  std::string key;  // where it came from, for messages (`data_source.filters[0]`)
};

// A variable a field's `where` or the composition reads: a 1-D dataset, or one column of a 2-D one.
struct NamedColumn {
  std::string name;
  std::string dataset;  // path with `{group}`
  std::optional<std::uint64_t> column;
};

// Where the points of one granule are.
struct GranulePlan {
  std::vector<std::string> groups;   // substituted for `{group}`: gt1l … gt3r
  std::string latitude, longitude;   // dataset paths with `{group}`
  std::string value;                 // the aggregated variable's dataset
  std::optional<std::string> sigma;  // the σ of inverse-variance weights (`1.0 / s**2`)
  std::vector<RowFilter> filters;
  std::vector<NamedColumn> columns;  // read into PointBlock::extra
  // Per-row times (`output.time_source`): seconds in `time` since a GPS epoch, the granule's
  // `ancillary_data/atlas_sdp_gps_epoch` when it has one, else `time_epoch_gps_seconds`.
  std::optional<std::string> time;
  double time_epoch_gps_seconds = 0;
};

// What the config asks the build to write.
struct Config {
  GranulePlan plan;
  std::string value_variable;                 // the aggregated variable's name (`h_li`): the column
  std::optional<std::string> sigma_variable;  // name of a CSV / Parquet / .npy input with a config
  int cell_order = 19;                        // output.grid.child_order
  int shard_order = 9;                        // output.grid.parent_order
  std::optional<int> chunk_order;             // output.grid.chunk_inner
  bool unsharded = false;                     // output.grid.sharded: false
  bool stats = false;                         // dense min/max/mean/variance/quartiles (+ sigma)
  std::string stats_prefix = "h";
  std::string field = "h_tdigest";  // the t-digest field
  double delta = 8192;
  bool located = false;                      // `location: leaf_id`
  std::optional<std::string> time_variable;  // `output.time_source.field`: the field is timed
  // Whether the build writes `field`: when the config has `build_tdigest`, or no t-digest at all.
  bool plain_field = true;
  // `build_tdigest_where` fields, in config order: name, delta, located, `where` and `attrs`.
  std::vector<FieldSpec> strata;
  std::optional<CompositionSpec> composition;  // `zagg.stats.composition.pack_composition`
};

// `doc` is the config as JSON (codec/yaml.hpp reads the YAML); `name` its file for messages.
Config read_config(const codec::json::Json& doc, const std::string& name);
// Reads and interprets a YAML config file.
Config load_config(const std::string& path);

}  // namespace tessera::ragged::zagg
