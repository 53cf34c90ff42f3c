// `tessera ragged build --input PATH... --out STORE [options]` (spec zagg-ragged.md §8.4): point
// observations → t-digests → a morton-hive store, one committed leaf per shard. The JSON report
// goes to stdout; a progress bar goes to stderr only when stderr is a terminal. Option conflicts
// are rejected before any data is touched (exit 2).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cmath>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "remote_output.hpp"
#include "tessera/core/error.hpp"
#include "ragged_common.hpp"
#include "ragged_granule_isolated.hpp"
#include "tessera/interop/detect.hpp"
#include "tessera/ragged/build.hpp"
#include "tessera/ragged/zagg_config.hpp"
#include "tessera/version.hpp"

namespace tessera::cli {
namespace {

struct BuildArgs {
  ragged::build::BuildOptions o;
  std::string out;
  std::optional<std::string> time_format;
  std::optional<std::string> gain_name, gain_version;
  std::optional<int> chunk_order;
  std::string latitude = "authalic";
  std::string layout = "hive";
  std::string field = "h_tdigest";
  double delta = 8192;
  bool located = false, timed = false, stats = false, unsharded = false;
  // From a config with `build_tdigest_where` strata or a composition array (zagg's strata products).
  bool plain_field = true;
  bool delta_given = false;  // --delta on the command line: it overrides the strata's deltas too
  std::vector<ragged::FieldSpec> strata;
  std::optional<ragged::CompositionSpec> composition;
  std::optional<std::string> per_cell_time;
  std::string stats_prefix = "h";
  std::optional<std::string> valid_range;
  std::optional<std::string> config;
  std::optional<std::string> commit_leaves;  // the task reports of a distributed build
};

// `--input` values as given, except a glob (`granules/ATL06_*.h5`, quoted so the shell leaves
// it) that names no existing path: its matches in natural order (UsageError when none).
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input.find_first_of("*?[") == std::string::npos || std::filesystem::exists(input, ec)) {
      out.push_back(input);
      continue;
    }
    for (auto& match : resolve_patterns({input}, false)) out.push_back(std::move(match));
  }
  return out;
}

// Settings from a zagg config (`--config`), each unless its flag was given: flags override the
// config. HDF5 granules are read as its data_source says; other inputs by the columns it names.
void apply_config(const CLI::App& cmd, BuildArgs& a, const ragged::zagg::Config& c) {
  const auto unset = [&](const char* flag) { return cmd.count(flag) == 0; };
  if (unset("--cell-order")) a.o.leaf.geometry.cell_order = c.cell_order;
  if (unset("--shard-order")) a.o.leaf.geometry.shard_order = c.shard_order;
  if (unset("--chunk-order") && c.chunk_order) a.chunk_order = c.chunk_order;
  if (unset("--unsharded")) a.unsharded = c.unsharded;
  if (unset("--stats")) a.stats = c.stats;
  if (unset("--stats-prefix")) a.stats_prefix = c.stats_prefix;
  if (unset("--field")) a.field = c.field;
  if (unset("--delta")) a.delta = c.delta;
  a.delta_given = !unset("--delta");
  if (unset("--located")) a.located = c.located;
  if (unset("--value-col")) a.o.value_col = c.value_variable;
  a.plain_field = c.plain_field;
  a.strata = c.strata;
  a.composition = c.composition;
  if (unset("--sigma-col") && c.sigma_variable) a.o.sigma_col = c.sigma_variable;
  if (unset("--time-col") && c.time_variable) {
    a.o.time_col = c.time_variable;  // granules give toc words; other inputs GPS nanoseconds
    if (unset("--time-format")) a.time_format = "gps-ns";
  }
  // HDF5 granules are read by reader processes forked now, while the process is small (see
  // GranuleReader): one per thread, at most one per granule.
  const auto granules = static_cast<unsigned>(std::count_if(
      a.o.inputs.begin(), a.o.inputs.end(), [](const std::string& path) { return interop::is_hdf5_file(path); }));
  if (granules == 0) return;
  const unsigned threads = a.o.threads ? a.o.threads : std::max(1u, std::thread::hardware_concurrency());
  auto reader = std::make_shared<GranuleReader>(c.plan, a.o.inputs, std::min({threads, granules, 8u}));
  a.o.input_reader = [reader](const std::string& path, std::size_t file, std::size_t rows,
                              const ragged::build::PointSink& sink) { return reader->read(path, file, rows, sink); };
}

// `--valid-range MIN,MAX` (either side may be empty: `0,` keeps non-negative values) into the
// options' bounds; CLI::ValidationError for anything else.
void parse_valid_range(const std::string& text, ragged::build::BuildOptions& o) {
  const auto comma = text.find(',');
  const auto bound = [&](std::string_view part) -> std::optional<double> {
    if (part.empty()) return std::nullopt;
    double v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || !std::isfinite(v))
      throw CLI::ValidationError("--valid-range", "'" + text + "': MIN and MAX must be finite numbers (MIN,MAX)");
    return v;
  };
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
    throw CLI::ValidationError("--valid-range", "'" + text + "': give MIN,MAX (one side may be empty)");
  o.valid_min = bound(std::string_view(text).substr(0, comma));
  o.valid_max = bound(std::string_view(text).substr(comma + 1));
}

void draw_progress(const ragged::build::BuildProgress& p) {
  constexpr int kWidth = 30;
  const bool reading = p.phase == ragged::build::BuildProgress::Phase::Reading;
  const int filled = p.total == 0 ? 0 : static_cast<int>(kWidth * std::min(p.done, p.total) / p.total);
  const std::string bar =
      std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(kWidth - filled), '.');
  const std::string of = p.total ? fmt::format("{}/{}", p.done, p.total) : fmt::format("{}", p.done);
  write_stream(stderr, fmt::format("\r\033[Kbuild [{}] {} {}", bar, of, reading ? "rows read" : "shards written"));
}

// Turns the parsed flags into build options; CLI::ValidationError (exit 2) for conflicts.
ragged::build::BuildOptions options_of(BuildArgs& a) {
  ragged::build::BuildOptions o = a.o;
  if (a.o.weight_col && !(a.gain_name && a.gain_version))
    throw CLI::ValidationError("--weight-col", "a flux field needs --gain-name and --gain-version");
  if (!a.o.weight_col && (a.gain_name || a.gain_version))
    throw CLI::ValidationError("--gain-name", "applies to --weight-col only");
  if (a.o.sigma_col && !a.stats) throw CLI::ValidationError("--sigma-col", "needs --stats");
  if ((a.timed || a.per_cell_time || a.time_format) && !a.o.time_col)
    throw CLI::ValidationError("--time-col", "--timed, --per-cell-time and --time-format need --time-col");
  if (a.time_format) o.time_format = ragged::build::parse_time_format(*a.time_format);
  if (a.valid_range) parse_valid_range(*a.valid_range, o);
  ragged::LeafGeometry& g = o.leaf.geometry;
  g.chunk_order = a.chunk_order ? *a.chunk_order : std::min(g.cell_order, g.shard_order + 4);
  g.unsharded = a.unsharded;
  g.flat = a.layout == "flat";
  ragged::FieldSpec field;
  field.name = a.field;
  field.delta = a.delta;
  field.flux = a.o.weight_col.has_value();
  if (field.flux) field.gain = codec::json::Json{{"name", *a.gain_name}, {"version", *a.gain_version}};
  field.located = a.located;
  field.timed = a.o.time_col.has_value();
  o.leaf.fields.clear();
  if (a.plain_field) o.leaf.fields.push_back(field);
  // A config's strata share the flags that shape every field; --delta and --located override theirs.
  for (ragged::FieldSpec stratum : a.strata) {
    stratum.flux = field.flux;
    stratum.gain = field.gain;
    stratum.timed = field.timed;
    if (a.delta_given) stratum.delta = a.delta;
    stratum.located = stratum.located || a.located;
    o.leaf.fields.push_back(std::move(stratum));
  }
  o.leaf.composition = a.composition;
  o.leaf.stats.enabled = a.stats;
  o.leaf.stats.prefix = a.stats_prefix;
  o.leaf.stats.sigma = a.o.sigma_col.has_value();
  o.leaf.per_cell_time = a.per_cell_time;
  o.leaf.latitude = ragged::geo::parse_latitude(a.latitude);
  o.writer = std::string("tessera ") + kVersion;
  try {
    o.leaf.validate();
  } catch (const UsageError& e) {
    throw CLI::ValidationError("ragged build", e.what());
  }
  return o;
}

// The leaves the `--leaves-only` reports in FILE (one report, or a JSON array of them) committed.
// UsageError when a report was built with other options than this commit's (`semantic_hash`).
std::vector<ragged::build::CommittedLeaf> committed_leaves(const std::string& file, const std::string& semantic_hash) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(file + ": cannot read the task reports", file);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  codec::json::Json doc = codec::json::parse_strict(text, file);
  if (!doc.is_array()) doc = codec::json::Json::array({doc});
  std::vector<ragged::build::CommittedLeaf> leaves;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const codec::json::Json& report = doc[i];
    const auto bad = [&](const std::string& what) {
      return UsageError(file + ": task report " + std::to_string(i) + ": " + what, file, "task report");
    };
    if (!report.is_object() || !report.contains("leaves") || !report["leaves"].is_array() ||
        !report.contains("semantic_hash") || !report["semantic_hash"].is_string())
      throw bad("not a `ragged build --leaves-only` report (no semantic_hash and leaves)");
    if (report["semantic_hash"].get<std::string>() != semantic_hash)
      throw bad("built with other options (semantic hash " + report["semantic_hash"].get<std::string>() +
                ", this commit's " + semantic_hash + ")");
    for (const auto& leaf : report["leaves"]) {
      if (!leaf.is_object() || !leaf.contains("shard") || !leaf["shard"].is_string())
        throw bad("a leaf without its decimal shard");
      ragged::build::CommittedLeaf c;
      c.shard = ragged::morton::parse_decimal(leaf["shard"].get<std::string>());
      if (leaf.contains("time_join") && leaf["time_join"].is_number_unsigned())
        c.time_join = leaf["time_join"].get<std::uint64_t>();
      leaves.push_back(c);
    }
  }
  return leaves;
}

// `--commit-leaves FILE`: the last step of a distributed build (docs/distributed.md).
void commit_distributed(const BuildArgs& a, const ragged::build::BuildOptions& o) {
  io::OutputTarget target(a.out, io::OutputTarget::Shape::Directory);
  target.check_writable({});
  const auto leaves = committed_leaves(*a.commit_leaves, ragged::build::semantic_hash(o.leaf));
  const std::optional<std::string> hive_manifest = stage_existing_hive_manifest(target);
  std::unique_ptr<io::Store> local;
  if (!target.remote()) local = std::make_unique<io::DirectoryStore>(a.out);
  ragged::build::commit_leaves(target.local_path(), o, leaves, target.remote() ? target.store() : *local);
  drop_unchanged(target, "morton_hive.json", hive_manifest);
  std::optional<io::PublishReport> upload;
  if (target.remote()) upload = publish_output(target, zarr_commit_plan(target.local_path(), false));
  ragged_cli::print_json([&](codec::json::JsonWriter& w) {
    w.begin_object();
    w.key("store").value(a.out);
    w.key("semantic_hash").value(ragged::build::semantic_hash(o.leaf));
    w.key("leaves_committed").value(static_cast<std::uint64_t>(leaves.size()));
    w.end_object();
  });
}

void print_report(const ragged::build::BuildReport& r, const std::string& out,
                  const std::optional<io::PublishReport>& upload) {
  ragged_cli::print_json([&](codec::json::JsonWriter& w) {
    w.begin_object();
    w.key("store").value(out);
    w.key("layout").value(r.flat ? "flat" : "hive");
    w.key("semantic_hash").value(r.semantic_hash);
    w.key("shards_written").value(static_cast<std::uint64_t>(r.leaves.size()));
    w.key("cells_with_data").value(r.cells_with_data);
    w.key("rows").begin_object();
    w.key("read").value(r.rows_read);
    w.key("accepted").value(r.rows_accepted);
    std::uint64_t rejected = 0;
    for (const auto& [reason, n] : r.rejected) rejected += n;
    w.key("rejected").value(rejected);
    w.key("rejected_by_reason").begin_object();
    for (const auto& [reason, n] : r.rejected) w.key(reason).value(n);
    w.end_object();
    w.end_object();
    w.key("leaves").begin_array();
    for (const auto& leaf : r.leaves) {
      w.begin_object();
      w.key("shard").value(ragged::morton::to_decimal(leaf.shard));
      if (!r.flat) w.key("leaf").value(leaf.leaf);
      w.key("cells_with_data").value(leaf.cells_with_data);
      w.key("observations").value(leaf.observations);
      if (!r.flat) w.key("combined_hash").value(leaf.combined_hash);
      if (r.leaves_only && leaf.time_join) w.key("time_join").value(leaf.time_join);  // for --commit-leaves
      w.end_object();
    }
    w.end_array();
    w.key("warnings").begin_array();
    for (const auto& warning : r.warnings) w.value(warning);
    w.end_array();
    w.key("elapsed_seconds").value(r.elapsed_seconds);
    if (upload) {
      w.key("upload").begin_object();
      w.key("objects").value(upload->objects);
      w.key("bytes").value(upload->bytes);
      w.key("removed").value(upload->removed);
      w.key("seconds").value(upload->seconds);
      w.end_object();
    }
    w.end_object();
  });
}

}  // namespace

void register_ragged_build(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<BuildArgs>();
  CLI::App* cmd = ragged.add_subcommand("build",
                                        "Build a morton-hive store of t-digests from point observations (CSV, Parquet, "
                                        ".npy columns, or HDF5 granules with --config)");
  cmd->add_option("--input", a->o.inputs,
                  "CSV file with a header row, Parquet file, directory of .npy columns, or HDF5 granule with --config "
                  "(repeatable; a quoted glob such as 'granules/*.h5' is expanded)");
  cmd->add_option("--out", a->out, "hive store to create or add leaves to")->required();
  cmd->add_option("--lat-col", a->o.lat_col, "latitude column, degrees (default lat)");
  cmd->add_option("--lon-col", a->o.lon_col, "longitude column, degrees (default lon)");
  cmd->add_option("--value-col", a->o.value_col, "value column (required without --config)");
  cmd->add_option("--config", a->config,
                  "a zagg pipeline config (YAML): HDF5 granule datasets, statistics and grid; flags override it")
      ->check(CLI::ExistingFile);
  cmd->add_option("--time-col", a->o.time_col, "time column (writes the _times companion)");
  cmd->add_option("--time-format", a->time_format, "iso | unix-ns | gps-ns | toc-ns (default iso)")
      ->check(CLI::IsMember({"iso", "unix-ns", "gps-ns", "toc-ns"}));
  cmd->add_option("--weight-col", a->o.weight_col, "flux weight column (the field's weights become flux)");
  cmd->add_option("--gain-name", a->gain_name, "gain name of a flux field");
  cmd->add_option("--gain-version", a->gain_version, "gain version of a flux field");
  cmd->add_option("--cell-order", a->o.leaf.geometry.cell_order, "cell order (default 19)")->check(CLI::Range(0, 29));
  cmd->add_option("--shard-order", a->o.leaf.geometry.shard_order, "shard order (default 9)")->check(CLI::Range(0, 29));
  cmd->add_option("--chunk-order", a->chunk_order, "inner chunk order (default min(cell order, shard order + 4))")
      ->check(CLI::Range(0, 29));
  cmd->add_flag("--stats", a->stats, "also write dense per-cell statistics (min, max, mean, variance, quartiles)");
  cmd->add_option("--stats-prefix", a->stats_prefix, "prefix of the statistics arrays (default h)");
  cmd->add_option("--sigma-col", a->o.sigma_col, "per-row sigma: inverse-variance weighted mean and {prefix}_sigma");
  cmd->add_flag("--strict", a->o.strict, "stop at the first bad row instead of counting it");
  cmd->add_option("--drop-value", a->o.drop_values,
                  "drop (and count as fill_value) rows whose value equals V, e.g. a product's fill value (repeatable)");
  cmd->add_option("--valid-range", a->valid_range,
                  "MIN,MAX: drop (and count as outside_valid_range) rows whose value lies outside, bounds included");
  cmd->add_option("--field", a->field, "field name (default h_tdigest)");
  cmd->add_option("--delta", a->delta, "t-digest compression delta (default 8192)")->check(CLI::Range(1.0, 1e9));
  cmd->add_flag("--located", a->located, "write the _locations companion (point words, common ancestors)");
  cmd->add_flag("--timed", a->timed, "write the _times companion (implied by --time-col)");
  cmd->add_option("--per-cell-time", a->per_cell_time, "also write a dense per-cell toc array of this name");
  cmd->add_option("--latitude", a->latitude, "authalic | geodetic-spherical (default authalic)")
      ->check(CLI::IsMember({"authalic", "geodetic-spherical"}));
  cmd->add_option("--dataset-name", a->o.dataset_name, "manifest dataset short name (default TESSERA)");
  cmd->add_option("--dataset-version", a->o.dataset_version, "manifest dataset version (default 1)");
  cmd->add_flag("--unsharded", a->unsharded, "one object per inner chunk instead of one shard object per array");
  cmd->add_option("--layout", a->layout, "hive | flat (default hive)")->check(CLI::IsMember({"hive", "flat"}));
  cmd->add_flag("--overwrite", a->o.overwrite, "replace committed leaves (atomically)");
  cmd->add_flag("--zagg-identical-metadata", a->o.leaf.zagg_identical_metadata,
                "omit dggs.latitude from the leaf groups");
  cmd->add_option("--threads", a->o.threads, "worker threads (default: all cores)")->check(integer_at_least(0));
  cmd->add_flag("--leaves-only", a->o.leaves_only,
                "a task of a distributed build: commit the leaves, leave the hive manifest and coverage to "
                "--commit-leaves");
  cmd->add_option("--commit-leaves", a->commit_leaves,
                  "the last step of a distributed build: commit the hive over the leaves the --leaves-only reports in "
                  "FILE name (reads no input)")
      ->check(CLI::ExistingFile)
      ->excludes("--leaves-only");
  cmd->callback([a, cmd, &rc] {
    if (a->commit_leaves && !a->o.inputs.empty())
      throw CLI::ValidationError("--commit-leaves", "reads no input: leave out --input");
    if (!a->commit_leaves && a->o.inputs.empty()) throw CLI::RequiredError("--input");
    a->o.inputs = expand_inputs(a->o.inputs);
    if (a->config) apply_config(*cmd, *a, ragged::zagg::load_config(*a->config));
    if (a->o.value_col.empty())
      throw CLI::ValidationError("--value-col", "is required (or give --config with a zagg config)");
    ragged::build::BuildOptions o = options_of(*a);
    if (a->commit_leaves) {
      commit_distributed(*a, o);
      rc = 0;
      return;
    }
    const bool overwrite = o.overwrite;
    const bool leaves_only = o.leaves_only;
    io::OutputTarget target(a->out, io::OutputTarget::Shape::Directory);
    target.check_writable({});
    // A flat store grows in place (chunks added to the existing arrays), which a staged copy
    // cannot do without downloading the store: in a bucket, only a new flat store is written.
    if (target.remote() && a->layout == "flat" && target.store().exists("zarr.json"))
      throw UsageError(a->out +
                           ": adding to an existing flat store in a bucket is not supported; build into a new "
                           "prefix or use the hive layout",
                       a->out);
    const std::optional<std::string> hive_manifest = stage_existing_hive_manifest(target);
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    ragged::build::BuildReport report;
    try {
      report = ragged::build::run(target.local_path(), std::move(o),
                                  tty ? ragged::build::ProgressSink(draw_progress) : ragged::build::ProgressSink());
    } catch (...) {
      if (tty) write_stream(stderr, "\r\033[K");
      throw;
    }
    if (tty) write_stream(stderr, "\r\033[K");
    drop_unchanged(target, "morton_hive.json", hive_manifest);
    std::optional<io::PublishReport> upload;
    if (target.remote() && leaves_only) {
      std::vector<std::string> leaf_dirs;  // each leaf's directory: the leaf and its stats.json
      for (const auto& leaf : report.leaves) leaf_dirs.push_back(leaf.leaf.substr(0, leaf.leaf.rfind('/')));
      upload = publish_leaves(target, leaf_dirs, overwrite);
    } else if (target.remote()) {
      upload = publish_output(target, zarr_commit_plan(target.local_path(), overwrite));
    }
    print_report(report, a->out, upload);
    rc = 0;
  });
}

}  // namespace tessera::cli
