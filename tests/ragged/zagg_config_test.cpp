// zagg's shipped pipeline configs read into build settings (ragged/zagg_config.hpp): the HEALPix
// configs are taken with the datasets, statistics and grid they name; the rest are refused with
// the key and the reason. Truncated and bit-flipped configs go through the fuzz target's check.
#include "tessera/ragged/zagg_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_zagg_config.cpp"
#undef TESSERA_FUZZ_NO_ENTRY_POINT

namespace tessera::ragged::zagg {
namespace {

namespace fs = std::filesystem;

fs::path config(const std::string& name) { return tessera::testing::conformance_dir() / "zagg" / "configs" / name; }

std::string refusal(const std::string& name) {
  try {
    (void)load_config(config(name).string());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ZaggConfig, Atl06) {
  const Config c = load_config(config("atl06.yaml").string());
  EXPECT_EQ(c.plan.groups, (std::vector<std::string>{"gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r"}));
  EXPECT_EQ(c.plan.latitude, "/{group}/land_ice_segments/latitude");
  EXPECT_EQ(c.plan.value, "/{group}/land_ice_segments/h_li");
  EXPECT_EQ(c.plan.sigma, "/{group}/land_ice_segments/h_li_sigma");
  ASSERT_EQ(c.plan.filters.size(), 1u);
  EXPECT_EQ(c.plan.filters[0].dataset, "/{group}/land_ice_segments/atl06_quality_summary");
  EXPECT_EQ(c.plan.filters[0].op, RowFilter::Op::Eq);
  EXPECT_EQ(c.plan.filters[0].value, 0.0);
  EXPECT_EQ(c.value_variable, "h_li");
  EXPECT_EQ(c.sigma_variable, "s_li");
  EXPECT_TRUE(c.stats);
  EXPECT_EQ(c.stats_prefix, "h");
  EXPECT_EQ(c.cell_order, 12);
  EXPECT_EQ(c.shard_order, 6);
  EXPECT_FALSE(c.chunk_order);
}

TEST(ZaggConfig, Atl03TdigestHive) {
  const Config c = load_config(config("atl03_tdigest_healpix_hive.yaml").string());
  EXPECT_EQ(c.plan.value, "/{group}/heights/h_ph");
  ASSERT_EQ(c.plan.filters.size(), 1u);
  EXPECT_EQ(c.plan.filters[0].dataset, "/{group}/heights/signal_conf_ph");
  EXPECT_EQ(c.plan.filters[0].column, 0u);
  EXPECT_EQ(c.plan.filters[0].op, RowFilter::Op::Ne);
  EXPECT_EQ(c.plan.filters[0].value, -2.0);
  EXPECT_FALSE(c.stats);
  EXPECT_FALSE(c.plan.sigma);
  EXPECT_EQ(c.field, "h_tdigest");
  EXPECT_EQ(c.delta, 8192.0);
  EXPECT_EQ(c.cell_order, 19);
  EXPECT_EQ(c.shard_order, 9);
  EXPECT_EQ(c.chunk_order, 13);
  EXPECT_FALSE(c.unsharded);
  EXPECT_EQ(refusal("atl06_nullable.yaml"), "accepted");
  EXPECT_EQ(refusal("atl03_tdigest_healpix.yaml"), "accepted");
}

TEST(ZaggConfig, Atl03LocatedAndTimed) {
  const Config c = load_config(config("atl03_tdigest_located_healpix.yaml").string());
  EXPECT_TRUE(c.located);
  EXPECT_EQ(c.time_variable, "delta_time");
  EXPECT_EQ(c.plan.time, "/{group}/heights/delta_time");
  // 2018-01-01T00:00:00 on the GPS scale: 13,875 days after 1980-01-06.
  EXPECT_EQ(c.plan.time_epoch_gps_seconds, 1198800000.0);
}

TEST(ZaggConfig, Atl03SignalAndNoiseStrataWithComposition) {
  const Config c = load_config(config("atl03_tdigest_strata_healpix.yaml").string());
  EXPECT_FALSE(c.plain_field);  // only the two strata: no unconditional h_tdigest
  ASSERT_EQ(c.strata.size(), 2u);
  const FieldSpec& signal = c.strata[0];
  EXPECT_EQ(signal.name, "h_tdigest_signal");
  EXPECT_EQ(signal.delta, 8192);
  EXPECT_TRUE(signal.located);
  EXPECT_EQ(signal.where,
            "(signal_conf_land >= 2) | (signal_conf_ocean >= 2) | (signal_conf_sea_ice >= 2) | "
            "(signal_conf_land_ice >= 2) | (signal_conf_inland_water >= 2)");
  EXPECT_EQ(signal.extra_attributes, (codec::json::Json{{"stratum", "signal"}, {"signal_threshold", 2}}));
  EXPECT_EQ(c.strata[1].name, "h_tdigest_noise");
  EXPECT_TRUE(c.strata[1].where.starts_with("~((signal_conf_land >= 2)"));
  ASSERT_TRUE(c.composition.has_value());
  EXPECT_EQ(c.composition->name, "composition");
  EXPECT_EQ(c.composition->of, "h_tdigest_signal");
  EXPECT_EQ(c.composition->threshold, 2);
  EXPECT_EQ(c.composition->surfaces,
            (std::vector<std::string>{"signal_conf_land", "signal_conf_ocean", "signal_conf_sea_ice",
                                      "signal_conf_land_ice", "signal_conf_inland_water"}));
  // Each confidence column once, read from column i of the one 2-D dataset.
  ASSERT_EQ(c.plan.columns.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(c.plan.columns[i].name, c.composition->surfaces[i]);
    EXPECT_EQ(c.plan.columns[i].dataset, "/{group}/heights/signal_conf_ph");
    EXPECT_EQ(c.plan.columns[i].column, i);
  }
  EXPECT_EQ(c.plan.value, "/{group}/heights/h_ph");
}

TEST(ZaggConfig, WhatTesseraDoesNotBuildIsRefusedByKey) {
  const std::string dir = config("").string();
  EXPECT_EQ(refusal("atl03.yaml"),
            dir + "atl03.yaml: output.grid.type: 'rectilinear': tessera builds HEALPix morton hives only");
  EXPECT_EQ(refusal("atl06_polar.yaml"),
            dir + "atl06_polar.yaml: output.grid.type: 'rectilinear': tessera builds HEALPix morton hives only");
  const auto refused = [](const std::string& yaml) {
    try {
      (void)read_config(codec::yaml::parse(yaml, "c.yaml"), "c.yaml");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string base =
      "data_source: {groups: [gt1l], coordinates: {latitude: /a, longitude: /b}, variables: {h: /h}}\n"
      "output: {grid: {type: healpix, parent_order: 4, child_order: 8}}\n";
  EXPECT_EQ(refused(base + "aggregation: {variables: {count: {function: len, source: h}}}\n"), "accepted");
  EXPECT_EQ(refused(base + "aggregation: {variables: {h_p90: {function: quantile, source: h, params: {q: 0.9}}}}\n"),
            "c.yaml: aggregation.variables.h_p90.params.q: tessera computes the quartiles 0.25, 0.5 and 0.75 only");
  EXPECT_EQ(refused(base + "aggregation: {variables: {hmean: {function: mean, source: h}}}\n"),
            "c.yaml: aggregation.variables.hmean: tessera writes this statistic as PREFIX_mean (e.g. h_mean); rename "
            "the variable");
  EXPECT_EQ(refused(base + "aggregation: {variables: {count: {function: len, source: x}}}\n"),
            "c.yaml: aggregation.variables: 'x' is not one of data_source.variables (as a dataset path)");
  const std::string strata_base =
      "data_source: {groups: [gt1l], coordinates: {latitude: /a, longitude: /b}, variables: {h: /h, c: {path: /c, "
      "column: 1}}}\n"
      "output: {grid: {type: healpix, parent_order: 4, child_order: 8}}\n";
  EXPECT_EQ(refused(strata_base +
                    "aggregation: {variables: {s: {function: zagg.stats.tdigest.build_tdigest_where, source: h, "
                    "params: {where: '(c >= 2) | (d >= 2)'}}}}\n"),
            "c.yaml: aggregation.variables.s.params.where: 'd' is not one of data_source.variables");
  EXPECT_EQ(refused(strata_base +
                    "aggregation: {variables: {s: {function: zagg.stats.tdigest.build_tdigest_where, source: h, "
                    "params: {where: 'c >= 2'}}, composition: {function: zagg.stats.composition.pack_composition, "
                    "source: h, params: {conf_land: c, conf_ocean: c, conf_sea_ice: c, conf_land_ice: c, "
                    "conf_inland_water: c, threshold: 2}, attrs: {composition: {of: t}}}}}\n"),
            "c.yaml: aggregation.variables.composition.attrs.composition.of: 't' is not a t-digest field of this "
            "config");
  EXPECT_EQ(refused(strata_base +
                    "aggregation: {variables: {s: {function: zagg.stats.tdigest.build_tdigest_where, source: h, "
                    "params: {where: 'c >= 2'}}, composition: {function: zagg.stats.composition.pack_composition, "
                    "source: h, params: {conf_land: c, conf_ocean: c, conf_sea_ice: c, conf_land_ice: c, "
                    "conf_inland_water: c, threshold: 2}, attrs: {composition: {of: s, threshold: 3}}}}}\n")
                .substr(0, 80),
            "c.yaml: aggregation.variables.composition.attrs.composition.threshold: differs f");
  // A 2-D column is a `where` input, not a source.
  EXPECT_EQ(refused(strata_base + "aggregation: {variables: {count: {function: len, source: c}}}\n"),
            "c.yaml: aggregation.variables: 'c' is not one of data_source.variables (as a dataset path)");
  EXPECT_EQ(refused(base + "aggregation: {variables: {count: {function: len, source: h}}}\nbogus: 1\n"),
            "c.yaml: bogus: not a key tessera reads here (it reads aggregation, data_source, output)");
}

TEST(ZaggConfig, CorruptedConfigsEndInAnErrorOrAConfig) {
  const std::string text = tessera::testing::read_file_text(config("atl03_tdigest_healpix_hive.yaml"));
  const std::size_t step = std::max<std::size_t>(1, text.size() / 300);
  for (std::size_t n = 0; n < text.size(); n += step)
    tessera::fuzzing::exercise_zagg_config(std::string_view(text).substr(0, n));
  for (std::size_t i = 0; i < text.size(); i += step)
    for (const unsigned char bit : {0x01, 0x20, 0x80}) {
      std::string flipped = text;
      flipped[i] = static_cast<char>(static_cast<unsigned char>(flipped[i]) ^ bit);
      tessera::fuzzing::exercise_zagg_config(flipped);
    }
  std::string nested(5000, '[');
  nested.append(5000, ']');
  tessera::fuzzing::exercise_zagg_config(nested);
  std::string dashes(5000, '-');
  dashes.append(" x");
  tessera::fuzzing::exercise_zagg_config(dashes);
}

}  // namespace
}  // namespace tessera::ragged::zagg
