#include "tessera/ragged/zagg_config.hpp"

#include <map>
#include <regex>
#include <set>

#include "tessera/codec/yaml.hpp"
#include "tessera/core/civil_date.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/ragged/leaf_meta.hpp"
#include "tessera/ragged/row_predicate.hpp"

namespace tessera::ragged::zagg {
namespace {

using codec::json::Json;

// Keys zagg reads to run its cloud pipeline; they change nothing tessera writes.
const std::set<std::string> kRunnerKeys = {"driver",    "reader",     "worker",          "index",
                                           "streaming", "handoff",    "granule_workers", "levels",
                                           "read_plan", "base_level", "pyramid"};

class ConfigReader {
 public:
  ConfigReader(const Json& doc, std::string name) : doc_(doc), name_(std::move(name)) {}

  Config read() {
    if (!doc_.is_object()) fail("(document)", "a config is a mapping with data_source, aggregation and output");
    allow(doc_, "", {"data_source", "aggregation", "output"});
    // The grid first: a config for another kind of store is refused for that, not for a detail.
    read_output(member(doc_, "output", "", true));
    read_data_source(member(doc_, "data_source", "", true));
    if (time_source_) read_time_source(*time_source_);  // names one of data_source.variables
    read_aggregation(member(doc_, "aggregation", "", true));
    check_times();
    return config_;
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw UsageError(name_ + ": " + key + ": " + message);
  }

  static std::string join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  }

  // Refuses keys outside `known` and the runner's own keys.
  void allow(const Json& object, const std::string& where, const std::set<std::string>& known) const {
    for (const auto& [key, value] : object.items())
      if (!known.contains(key) && !kRunnerKeys.contains(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(join(where, key), "not a key tessera reads here (it reads " + list + ")");
      }
  }

  const Json& member(const Json& object, const std::string& key, const std::string& where, bool required,
                     Json::value_t type = Json::value_t::object) const {
    static const Json absent;
    if (!object.contains(key)) {
      if (required) fail(join(where, key), "missing");
      return absent;
    }
    const Json& value = object.at(key);
    const bool ok = type == Json::value_t::number_float ? value.is_number() : value.type() == type;
    if (!ok)
      fail(join(where, key), "expected " + std::string(type == Json::value_t::object   ? "a mapping"
                                                       : type == Json::value_t::array  ? "a list"
                                                       : type == Json::value_t::string ? "a string"
                                                                                       : "a number"));
    return value;
  }

  std::string text(const Json& object, const std::string& key, const std::string& where) const {
    return member(object, key, where, true, Json::value_t::string).get<std::string>();
  }

  void read_data_source(const Json& ds) {
    const std::string where = "data_source";
    allow(ds, where, {"groups", "coordinates", "variables", "quality_filter", "filters"});
    for (const auto& group : member(ds, "groups", where, true, Json::value_t::array)) {
      if (!group.is_string()) fail(where + ".groups", "expected a list of group names");
      config_.plan.groups.push_back(group.get<std::string>());
    }
    const Json& coordinates = member(ds, "coordinates", where, true);
    allow(coordinates, where + ".coordinates", {"latitude", "longitude"});
    config_.plan.latitude = text(coordinates, "latitude", where + ".coordinates");
    config_.plan.longitude = text(coordinates, "longitude", where + ".coordinates");
    for (const auto& [name, spec] : member(ds, "variables", where, true).items()) {
      const std::string key = where + ".variables." + name;
      if (spec.is_string()) {
        variables_[name] = NamedColumn{name, spec.get<std::string>(), std::nullopt};
        continue;
      }
      // {path, column}: one column of a 2-D dataset (ATL03's signal_conf_ph per surface).
      if (!spec.is_object()) fail(key, "expected a dataset path or {path, column}");
      allow(spec, key, {"path", "column"});
      NamedColumn column{name, text(spec, "path", key), std::nullopt};
      if (spec.contains("column")) {
        if (!spec.at("column").is_number_integer() || spec.at("column").get<std::int64_t>() < 0)
          fail(key + ".column", "expected a column index (0, 1, …)");
        column.column = spec.at("column").get<std::uint64_t>();
      }
      variables_[name] = std::move(column);
    }
    if (ds.contains("quality_filter")) {
      const Json& q = member(ds, "quality_filter", where, true);
      allow(q, where + ".quality_filter", {"dataset", "value"});
      config_.plan.filters.push_back(
          {text(q, "dataset", where + ".quality_filter"), std::nullopt, RowFilter::Op::Eq,
           member(q, "value", where + ".quality_filter", true, Json::value_t::number_float).get<double>(),
           where + ".quality_filter"});
    }
    if (ds.contains("filters")) {
      std::size_t i = 0;
      for (const auto& f : member(ds, "filters", where, true, Json::value_t::array)) {
        const std::string key = where + ".filters[" + std::to_string(i++) + "]";
        if (!f.is_object()) fail(key, "expected a mapping {dataset, column, op, value}");
        allow(f, key, {"dataset", "column", "op", "value"});
        RowFilter filter{text(f, "dataset", key), std::nullopt, RowFilter::Op::Eq,
                         member(f, "value", key, true, Json::value_t::number_float).get<double>(), key};
        if (f.contains("column")) {
          if (!f.at("column").is_number_integer() || f.at("column").get<std::int64_t>() < 0)
            fail(key + ".column", "expected a column index (0, 1, …)");
          filter.column = f.at("column").get<std::uint64_t>();
        }
        static const std::map<std::string, RowFilter::Op> ops = {{"eq", RowFilter::Op::Eq}, {"ne", RowFilter::Op::Ne},
                                                                 {"lt", RowFilter::Op::Lt}, {"le", RowFilter::Op::Le},
                                                                 {"gt", RowFilter::Op::Gt}, {"ge", RowFilter::Op::Ge}};
        const std::string op = text(f, "op", key);
        if (!ops.contains(op)) fail(key + ".op", "'" + op + "' is not one of eq, ne, lt, le, gt, ge");
        filter.op = ops.at(op);
        config_.plan.filters.push_back(std::move(filter));
      }
    }
  }

  // The dataset of a variable the aggregation names.
  std::string dataset_of(const std::string& variable, const std::string& key) const {
    const auto it = variables_.find(variable);
    if (it == variables_.end() || it->second.column)
      fail(key, "'" + variable + "' is not one of data_source.variables (as a dataset path)");
    return it->second.dataset;
  }

  // A variable read as a row column by a `where` or the composition.
  void need_column(const std::string& variable, const std::string& key) {
    const auto it = variables_.find(variable);
    if (it == variables_.end()) fail(key, "'" + variable + "' is not one of data_source.variables");
    for (const NamedColumn& c : config_.plan.columns)
      if (c.name == variable) return;
    config_.plan.columns.push_back(it->second);
  }

  // `attrs` of an aggregation variable: a mapping written as given.
  codec::json::Json attributes_of(const Json& spec, const std::string& key) const {
    if (!spec.contains("attrs")) return Json::object();
    return member(spec, "attrs", key, true);
  }

  // A `build_tdigest_where` field: one stratum of the rows.
  void read_stratum(const std::string& name, const Json& spec, const Json& params, const std::string& key) {
    FieldSpec field;
    field.name = name;
    if (params.contains("delta"))
      field.delta = member(params, "delta", key + ".params", true, Json::value_t::number_float).get<double>();
    else field.delta = 8192;
    if (spec.contains("location")) {
      if (spec.at("location") != "leaf_id") fail(key + ".location", "tessera writes point locations as 'leaf_id' only");
      field.located = true;
    }
    if (spec.contains("temporal")) fail(key + ".temporal", "tessera does not time stratified fields");
    field.where = text(params, "where", key + ".params");
    const RowPredicate predicate = RowPredicate::parse(field.where, name_ + ": " + key + ".params.where");
    for (const std::string& column : predicate.columns()) need_column(column, key + ".params.where");
    field.extra_attributes = attributes_of(spec, key);
    config_.strata.push_back(std::move(field));
  }

  // `zagg.stats.composition.pack_composition` (spec §2.7).
  void read_composition(const std::string& name, const Json& spec, const Json& params, const std::string& key) {
    if (config_.composition) fail(key, "a second composition array");
    CompositionSpec c;
    c.name = name;
    for (const char* surface : {"conf_land", "conf_ocean", "conf_sea_ice", "conf_land_ice", "conf_inland_water"}) {
      const std::string variable = text(params, surface, key + ".params");
      need_column(variable, key + ".params." + surface);
      c.surfaces.push_back(variable);
    }
    const Json& threshold = member(params, "threshold", key + ".params", true, Json::value_t::number_float);
    if (!threshold.is_number_integer()) fail(key + ".params.threshold", "expected an integer");
    c.threshold = threshold.get<std::int64_t>();
    const Json attrs = attributes_of(spec, key);
    const auto block = attrs.find("composition");
    if (block == attrs.end() || !block->is_object() || !block->contains("of") || !block->at("of").is_string())
      fail(key + ".attrs.composition.of", "missing: the t-digest field whose rows the fractions are of");
    c.of = block->at("of").get<std::string>();
    const Json expected = leaf::composition_declaration(c.of, c.threshold);
    for (const auto& [k, v] : block->items())
      if (!expected.contains(k) || expected.at(k) != v)
        fail(key + ".attrs.composition." + k, "differs from what tessera writes (" + codec::json::dump(expected) + ")");
    config_.composition = std::move(c);
  }

  void note_source(const std::string& source, const std::string& key) {
    if (!source_.empty() && source != source_)
      fail(key, "aggregates '" + source + "', another variable than '" + source_ +
                    "'; tessera aggregates one variable per build");
    source_ = source;
  }

  void note_sigma(const std::string& variable, const std::string& key) {
    if (sigma_ && *sigma_ != variable) fail(key, "weights by '" + variable + "', another σ than '" + *sigma_ + "'");
    sigma_ = variable;
  }

  // `{prefix}_{suffix}`: the name tessera's statistics arrays carry.
  void note_stat(const std::string& name, const std::string& suffix, const std::string& key) {
    if (!name.ends_with("_" + suffix) || name.size() == suffix.size() + 1)
      fail(key, "tessera writes this statistic as PREFIX_" + suffix + " (e.g. h_" + suffix + "); rename the variable");
    const std::string prefix = name.substr(0, name.size() - suffix.size() - 1);
    if (stats_prefix_ && *stats_prefix_ != prefix)
      fail(key, "prefix '" + prefix + "' differs from '" + *stats_prefix_ + "'");
    stats_prefix_ = prefix;
  }

  void read_aggregation(const Json& agg) {
    const std::string where = "aggregation";
    allow(agg, where, {"variables", "coordinates"});
    static const std::regex sigma_expression(
        R"(1(\.0*)?\s*/\s*np\.sqrt\(\s*np\.sum\(\s*1(\.0*)?\s*/\s*(\w+)\s*\*\*\s*2\s*\)\s*\))");
    static const std::regex inverse_variance(R"(1(\.0*)?\s*/\s*(\w+)\s*\*\*\s*2)");
    static const std::string kSupported =
        "len, min, max, mean, average (optionally weighted by 1.0 / s**2), var, quantile with q 0.25, 0.5 or 0.75, "
        "zagg.stats.tdigest.build_tdigest, zagg.stats.tdigest.build_tdigest_where, "
        "zagg.stats.composition.pack_composition, and the expression 1.0 / np.sqrt(np.sum(1.0 / s**2))";
    bool any_tdigest = false;
    for (const auto& [name, spec] : member(agg, "variables", where, true).items()) {
      const std::string key = where + ".variables." + name;
      if (!spec.is_object()) fail(key, "expected a mapping");
      std::smatch m;
      if (spec.contains("expression")) {
        const std::string expression = text(spec, "expression", key);
        if (!std::regex_match(expression, m, sigma_expression))
          fail(key + ".expression",
               "'" + expression + "' is not an expression tessera implements (" + kSupported + ")");
        note_sigma(m[3].str(), key);
        note_stat(name, "sigma", key);
        continue;
      }
      const std::string function = text(spec, "function", key);
      const std::string source = text(spec, "source", key);
      note_source(source, key + ".source");
      const Json& params = spec.contains("params") ? member(spec, "params", key, true) : Json::object();
      if (function == "len") {
        if (name != "count") fail(key, "tessera writes the cell counts as 'count'");
      } else if (function == "min" || function == "max" || function == "var" || function == "mean") {
        note_stat(name, function == "var" ? "variance" : function, key);
      } else if (function == "average") {
        if (params.contains("weights")) {
          const std::string weights = text(params, "weights", key + ".params");
          if (!std::regex_match(weights, m, inverse_variance))
            fail(key + ".params.weights", "'" + weights + "': tessera weights an average by 1.0 / s**2 only");
          note_sigma(m[2].str(), key);
        }
        note_stat(name, "mean", key);
      } else if (function == "quantile") {
        const double q = member(params, "q", key + ".params", true, Json::value_t::number_float).get<double>();
        const char* suffix = q == 0.25 ? "q25" : q == 0.5 ? "q50" : q == 0.75 ? "q75" : nullptr;
        if (!suffix) fail(key + ".params.q", "tessera computes the quartiles 0.25, 0.5 and 0.75 only");
        note_stat(name, suffix, key);
      } else if (function == "zagg.stats.tdigest.build_tdigest_where") {
        read_stratum(name, spec, params, key);
      } else if (function == "zagg.stats.composition.pack_composition") {
        read_composition(name, spec, params, key);
      } else if (function == "zagg.stats.tdigest.build_tdigest") {
        if (any_tdigest) fail(key, "a second t-digest field; tessera builds one per store");
        any_tdigest = true;
        config_.field = name;
        if (params.contains("delta"))
          config_.delta = member(params, "delta", key + ".params", true, Json::value_t::number_float).get<double>();
        if (spec.contains("location")) {
          if (spec.at("location") != "leaf_id")
            fail(key + ".location", "tessera writes point locations as 'leaf_id' only");
          config_.located = true;
        }
        if (spec.contains("temporal")) {
          if (spec.at("temporal") != "per-centroid") fail(key + ".temporal", "tessera writes per-centroid times only");
          temporal_ = key;
        }
      } else {
        fail(key + ".function", "'" + function + "' is not a function tessera implements (" + kSupported + ")");
      }
    }
    if (source_.empty()) fail(where + ".variables", "no variable names a source to aggregate");
    config_.plain_field = any_tdigest || config_.strata.empty();
    if (config_.composition) {
      const std::string& of = config_.composition->of;
      const bool known =
          std::any_of(config_.strata.begin(), config_.strata.end(), [&](const FieldSpec& f) { return f.name == of; }) ||
          (config_.plain_field && of == config_.field);
      if (!known)
        fail(where + ".variables." + config_.composition->name + ".attrs.composition.of",
             "'" + of + "' is not a t-digest field of this config");
    }
    config_.plan.value = dataset_of(source_, where + ".variables");
    config_.value_variable = source_;
    config_.sigma_variable = sigma_;
    config_.stats = stats_prefix_.has_value();
    if (stats_prefix_) config_.stats_prefix = *stats_prefix_;
    if (sigma_) config_.plan.sigma = dataset_of(*sigma_, where + ".variables");
  }

  // A temporal field needs the times, and times need a temporal field.
  void check_times() const {
    if (temporal_ && !config_.time_variable)
      fail(*temporal_ + ".temporal", "needs output.time_source naming the time variable");
    if (config_.time_variable && !temporal_)
      fail("output.time_source", "the t-digest field does not declare temporal: per-centroid");
  }

  void read_output(const Json& output) {
    const std::string where = "output";
    const Json& grid = member(output, "grid", where, true);
    const std::string key = where + ".grid";
    if (text(grid, "type", key) != "healpix")
      fail(key + ".type", "'" + grid.at("type").get<std::string>() + "': tessera builds HEALPix morton hives only");
    if (output.contains("time_source")) time_source_ = &member(output, "time_source", where, true);
    allow(output, where, {"grid", "store_layout", "time_source"});
    allow(grid, key, {"type", "indexing_scheme", "parent_order", "child_order", "chunk_inner", "sharded"});
    if (grid.contains("indexing_scheme") && grid.at("indexing_scheme") != "nested")
      fail(key + ".indexing_scheme", "tessera indexes cells in the nested scheme only");
    const auto order = [&](const char* name) {
      const Json& v = member(grid, name, key, true, Json::value_t::number_float);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 29)
        fail(key + "." + name, "expected an order 0…29");
      return static_cast<int>(v.get<std::int64_t>());
    };
    config_.shard_order = order("parent_order");
    config_.cell_order = order("child_order");
    if (grid.contains("chunk_inner")) config_.chunk_order = order("chunk_inner");
    if (grid.contains("sharded")) {
      if (!grid.at("sharded").is_boolean()) fail(key + ".sharded", "expected true or false");
      config_.unsharded = !grid.at("sharded").get<bool>();
    }
    if (output.contains("store_layout") && output.at("store_layout") != "hive")
      fail(where + ".store_layout", "tessera builds the hive layout from a config (use --layout flat without one)");
  }

  // `{field, epoch, scale: gps, units: seconds}`: the time of a row is epoch + field seconds on
  // the GPS scale (ICESat-2's delta_time).
  void read_time_source(const Json& source) {
    const std::string key = "output.time_source";
    allow(source, key, {"field", "epoch", "scale", "units"});
    const std::string field = text(source, "field", key);
    if (source.contains("scale") && source.at("scale") != "gps")
      fail(key + ".scale", "tessera reads GPS-scale times only");
    if (source.contains("units") && source.at("units") != "seconds")
      fail(key + ".units", "tessera reads times in seconds only");
    const std::string epoch = text(source, "epoch", key);
    // YYYY-MM-DDTHH:MM:SS on the GPS scale: seconds since the GPS epoch 1980-01-06T00:00:00.
    static const std::regex iso(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2}))");
    std::smatch m;
    if (!std::regex_match(epoch, m, iso)) fail(key + ".epoch", "'" + epoch + "': expected YYYY-MM-DDTHH:MM:SS");
    const auto number = [&](int i) { return std::int64_t{std::stoi(m[i].str())}; };
    const std::int64_t days =
        days_from_civil(number(1), static_cast<unsigned>(number(2)), static_cast<unsigned>(number(3))) -
        days_from_civil(1980, 1, 6);
    config_.plan.time_epoch_gps_seconds =
        static_cast<double>(days * 86400 + number(4) * 3600 + number(5) * 60 + number(6));
    config_.plan.time = dataset_of(field, key + ".field");
    config_.time_variable = field;
  }

  const Json& doc_;
  std::string name_;
  Config config_;
  std::map<std::string, NamedColumn> variables_;
  std::string source_;
  std::optional<std::string> sigma_, stats_prefix_;
  std::optional<std::string> temporal_;  // the key of the field declaring temporal: per-centroid
  const Json* time_source_ = nullptr;    // output.time_source, read once the variables are known
};

}  // namespace

Config read_config(const Json& doc, const std::string& name) { return ConfigReader(doc, name).read(); }

Config load_config(const std::string& path) {
  const auto source = io::open_file(path, io::OpenMode::Pread);
  std::string text(static_cast<std::size_t>(source->size()), '\0');
  source->read_at(0, std::as_writable_bytes(std::span(text)));
  return read_config(codec::yaml::parse(text, path), path);
}

}  // namespace tessera::ragged::zagg
