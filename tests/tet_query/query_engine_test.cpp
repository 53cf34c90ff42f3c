// The query engine on the conformance files (spec tet.md §4, §5.6, §8.4): values, strategies,
// out-of-core paths driven by TESSERA_TET_AVAILABLE_RAM_BYTES, spills, transforms and sidecars.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet_query/query_engine.hpp"
#include "tessera/tet_query/query_output.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;

// Runs a document against a conformance file with -x; returns the response tree.
Json run(const std::string& file, const std::string& doc, std::uint64_t preview = 64, bool execute = true) {
  tet::QueryOptions o;
  o.tet_path = testing::tet_fixture(file).string();
  o.execute = execute;
  o.preview = preview;
  return tet::run_query(tet::parse_query_json(doc), o).tree;
}

std::string quiet(const std::string& file, const std::string& doc) {
  tet::QueryOptions o;
  o.tet_path = testing::tet_fixture(file).string();
  o.execute = true;
  o.preview = 0;
  return tet::render_query_response(tet::run_query(tet::parse_query_json(doc), o), tet::QueryOutputFormat::Quiet);
}

std::string error_of(const std::string& file, const std::string& doc) {
  try {
    run(file, doc);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

using testing::ScopedEnv;

TEST(QueryEngine, SampleExpectedResults) {
  // §5.6, scalar and over axis 1.
  EXPECT_EQ(quiet("sample.tet", R"({"dataset":"temperature","var":[]})"),
            "dataset=temperature status=ok op=var var=2.916667 elements=6 memory_strategy=streaming_fold");
  auto ex = run("sample.tet", R"({"dataset":"temperature","product":1})")["execution"];
  EXPECT_EQ(ex["operation_reduced_product"], Json::parse("[6.0,120.0]"));
  ex = run("sample.tet", R"({"dataset":"temperature","quantile":{"q":0.95}})")["execution"];
  EXPECT_EQ(ex["operation_quantile"].get<double>(), 5.75);
  ex = run("sample.tet", R"({"dataset":"temperature","histogram":{"bins":2,"axis":0}})")["execution"];
  EXPECT_EQ(ex["operation_reduced_histogram_counts"], Json::parse("[1.0,1.0,1.0,1.0,1.0,1.0]"));
  ex = run("sample.tet", R"({"dataset":"temperature","correlation":{"axis":1}})")["execution"];
  EXPECT_EQ(ex["operation_correlation"], Json::parse("[1.0,1.0,1.0,1.0]"));
  EXPECT_EQ(ex["operation_correlation_order"], 2);
  ex = run("sample.tet",
           R"({"dataset":"temperature","selection":[{"start":0,"stop":2},{"start":0,"stop":3,"step":2}],"mean":[]})")
      ["execution"];
  EXPECT_EQ(ex["f32_preview"], Json::parse("[1.0,3.0,4.0,6.0]"));
  EXPECT_EQ(ex["operation_mean"].get<double>(), 3.5);
}

TEST(QueryEngine, QcFileNanSemantics) {
  // §8.4 qc_f32: 1, NaN, 3, +inf, −2, −inf, NaN, 8 as [2,4].
  auto ex = run("generated/qc_f32.tet", R"({"dataset":"qc","arg_min":[]})")["execution"];
  EXPECT_EQ(ex["operation_argmin_index"], 1);
  EXPECT_NE(tet::dump_query_json(ex, false).find(R"("f32_preview":[1.0,null,3.0,null,-2.0,null,null,8.0])"),
            std::string::npos);
  ex = run("generated/qc_f32.tet", R"({"dataset":"qc","inf_count":1})")["execution"];
  EXPECT_EQ(ex["operation_reduced_inf_count"], Json::parse("[1.0,1.0]"));
  ex = run("generated/qc_f32.tet", R"({"dataset":"qc","arg_min":1})")["execution"];
  EXPECT_EQ(ex["operation_reduced_argmin"], Json::parse("[1,2]"));
  ex = run("generated/qc_f32.tet", R"({"dataset":"qc","histogram":{"bins":2}})")["execution"];
  EXPECT_EQ(ex["operation_histogram_edges"], Json::parse("[-2.0,3.0,8.0]"));
  EXPECT_EQ(ex["operation_histogram_counts"], Json::parse("[2.0,2.0]"));
  EXPECT_EQ(ex["operation_histogram_excluded"].get<double>(), 4.0);
  EXPECT_EQ(tet::dump_query_json(
                run("generated/qc_f32.tet", R"({"dataset":"qc","median":[]})")["execution"]["operation_median"], false),
            "null");
  EXPECT_EQ(error_of("generated/qc_f32.tet", R"({"dataset":"qc","covariance":0})"),
            "validation: covariance/correlation require finite values in the logical selection");
}

TEST(QueryEngine, LabeledFileNamesLabelsAndFill) {
  auto t = run("generated/labeled.tet", R"({"dataset":"temperature","mean":"time"})");
  EXPECT_EQ(t["operation"].dump(), R"({"mean":{"axes":["0"]}})");
  EXPECT_EQ(t["execution"]["operation_reduced_mean"], Json::parse("[4.5,5.5,6.5]"));
  t = run(
      "generated/labeled.tet",
      R"({"dataset":"temperature","selection":[{"start_label":"2024-01-02","stop_label":"2024-01-04"},{"start_label":"B"}]})");
  EXPECT_EQ(t["execution"]["f32_preview"], Json::parse("[4.0,5.0,7.0,8.0]"));
  t = run("generated/labeled.tet", R"({"dataset":"temperature","null_count":[]})");
  EXPECT_EQ(t["operation"].dump(), R"({"null_count":{"axes":[],"fill":5.0}})");
  EXPECT_EQ(t["execution"]["operation_null_count"].get<double>(), 1.0);
  EXPECT_EQ(error_of("generated/labeled.tet", R"({"dataset":"temperature","mean":"depth"})"),
            "validation: unknown dimension name `depth` (dim_names: time, station)");
  EXPECT_EQ(error_of("generated/labeled.tet", R"({"dataset":"temperature","mean":[0,"time"]})"),
            "validation: duplicate operation axis index 0");
  EXPECT_EQ(error_of("generated/labeled.tet", R"({"dataset":"temperature","mean":[0,1]})"),
            "validation: operation axes list reduces every dimension; use \"axes\": [] for a scalar reduction");
  EXPECT_EQ(error_of("generated/labeled.tet", R"({"dataset":"temperature","selection":[{"start_label":"x"},{}]})"),
            "validation: unknown coordinate label \"x\" (axis has 4 labels)");
}

TEST(QueryEngine, MultiDatasetBudgetAndExactU64) {
  auto t = run("generated/multi_dataset.tet", R"({"dataset":"u64_vec","sum":[]})");
  EXPECT_EQ(t["execution"]["memory_budget_bytes"], 1048576);
  EXPECT_EQ(tet::dump_query_json(t["execution"]["u64_preview"], false), "[1,9223372036854775807,42]");
  EXPECT_EQ(tet::dump_query_json(t["execution"]["operation_sum"], false), "9.223372036854776e18");
  EXPECT_EQ(run("generated/multi_dataset.tet", R"({"dataset":"i16_sq","sum":[]})")["execution"]["operation_sum"]
                .get<double>(),
            -120000.0);
  EXPECT_EQ(t["catalog"]["dataset_u64_bytes"], 24);
}

TEST(QueryEngine, ZstdCube) {
  auto ex = run("generated/zstd_f64_3d.tet", R"({"dataset":"cube","sum":[0,1]})")["execution"];
  EXPECT_EQ(ex["operation_reduced_sum"], Json::parse("[285.0,295.0,305.0]"));
  EXPECT_EQ(
      run("generated/zstd_f64_3d.tet", R"({"dataset":"cube","sum":[]})")["execution"]["operation_sum"].get<double>(),
      885.0);
}

TEST(QueryEngine, LargeStridedPlan) {
  auto t =
      run("large.tet",
          R"({"dataset":"a","selection":[{"start":1,"stop":33,"step":4},{"start":3,"stop":60,"step":7}],"sum":[]})", 8);
  EXPECT_EQ(t["read_plan"]["chunk_count"], 72);
  EXPECT_EQ(t["read_plan"]["total_stored_bytes"], 4608);
  EXPECT_EQ(t["read_plan"]["chunk_touch_policy"], "strided_half_open_per_axis_json_step_applied_to_chunk_touch_list");
  EXPECT_EQ(t["execution"]["operation_sum"].get<double>(), 71352.0);
  EXPECT_EQ(t["execution"]["f32_preview"], Json::parse("[67.0,74.0,81.0,88.0,95.0,102.0,109.0,116.0]"));
}

TEST(QueryEngine, SequentialAndParallelFoldsAgree) {
  ScopedEnv ram("TESSERA_TET_AVAILABLE_RAM_BYTES", "1000000000000");  // a stable budget between runs
  for (const char* op : {"sum", "mean", "var", "std", "norm_l2", "product", "arg_max", "min"}) {
    for (const char* axes : {"[]", "0", "1"}) {
      const std::string a = std::string(R"({"dataset":"a",")") + op + "\":" + axes + "}";
      const std::string b =
          std::string(R"({"dataset":"a",")") + op + "\":" + axes + R"(,"execution":{"fold_parallel":false}})";
      auto x = run("large.tet", a, 5)["execution"], y = run("large.tet", b, 5)["execution"];
      EXPECT_TRUE(x["fold_parallel"].get<bool>());
      EXPECT_FALSE(y["fold_parallel"].get<bool>());
      x.erase("fold_parallel");
      y.erase("fold_parallel");
      EXPECT_EQ(x, y) << op << " " << axes;
    }
  }
}

TEST(QueryEngine, OutOfCoreLinearScanOnASmallFile) {
  // With 4 KiB of "available RAM", large.tet (8704 bytes) is out of core: a full dense raw
  // selection scans linearly, its preview and arg indices in logical order (TD-10).
  ScopedEnv ram("TESSERA_TET_AVAILABLE_RAM_BYTES", "4096");
  auto ex = run("large.tet", R"({"dataset":"a","arg_max":[]})", 4)["execution"];
  EXPECT_EQ(ex["io_regime"], "out_of_core");
  EXPECT_TRUE(ex["fold_linear_scan"].get<bool>());
  EXPECT_FALSE(ex["fold_parallel"].get<bool>());
  EXPECT_EQ(ex["operation_argmax_index"], 2175);
  EXPECT_EQ(ex["host_available_ram_bytes"], 4096);
  EXPECT_EQ(ex["memory_budget_bytes"], 1024);  // 25 % of the stated RAM
  EXPECT_EQ(ex["f32_preview"], Json::parse("[0.0,1.0,2.0,3.0]"));
  // fold_parallel:true overrides the linear scan.
  ex = run("large.tet", R"({"dataset":"a","mean":[],"execution":{"fold_parallel":true}})")["execution"];
  EXPECT_FALSE(ex["fold_linear_scan"].get<bool>());
  EXPECT_EQ(ex["operation_mean"].get<double>(), 1087.5);
  // Tier C over the budget spills to a temporary file.
  ex = run("large.tet", R"({"dataset":"a","quantile":{"q":0.5,"axis":1}})", 0)["execution"];
  EXPECT_EQ(ex["memory_strategy"], "temp_spill_materialize");
  EXPECT_EQ(ex["operation_reduced_quantile"][0].get<double>(), 31.5);
}

TEST(QueryEngine, TempSpillMedianLeavesNoFile) {
  testing::TempDir cache("query-cache");
  ScopedEnv xdg("XDG_CACHE_HOME", cache.path().string());
  auto ex = run("large.tet", R"({"dataset":"a","median":[],"execution":{"memory_budget_bytes":16}})", 0)["execution"];
  EXPECT_EQ(ex["memory_strategy"], "temp_spill_materialize");
  EXPECT_EQ(ex["operation_median"].get<double>(), 1087.5);
  for (const auto& e : fs::recursive_directory_iterator(cache.path())) EXPECT_FALSE(e.is_regular_file()) << e.path();
}

TEST(QueryEngine, MmapSpillWritesTheSelection) {
  testing::TempDir dir("query-spill");
  fs::copy_file(testing::tet_fixture("large.tet"), dir / "large.tet");
  tet::QueryOptions o;
  o.tet_path = (dir / "large.tet").string();
  o.execute = true;
  o.preview = 3;
  auto t = tet::run_query(
      tet::parse_query_json(
          R"({"dataset":"a","selection":[{"start":2,"stop":4},{"start":1,"stop":64,"step":30}],"spill":"out/sel.bin"})"),
      o);
  const Json& ex = t.tree["execution"];
  EXPECT_EQ(ex["memory_strategy"], "mmap_spill");
  EXPECT_EQ(ex["spill_f32_bytes"], 24);
  const auto bytes = testing::read_file_bytes(dir / "out/sel.bin");
  std::vector<float> v(6);
  std::memcpy(v.data(), bytes.data(), 24);
  EXPECT_EQ(v, (std::vector<float>{129, 159, 189, 193, 223, 253}));
  EXPECT_EQ(ex["f32_preview"], Json::parse("[129.0,159.0,189.0]"));
  // Outside every allowed root.
  try {
    tet::run_query(tet::parse_query_json(R"({"dataset":"a","spill":"/proc/nope/x.bin"})"), o);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is not under an allowed root"), std::string::npos) << e.what();
  }
}

TEST(QueryEngine, TransformsMatchTheReference) {
  auto ex =
      run("sample.tet", R"({"dataset":"temperature","transform":{"method":"zscore"},"write":"ram"})", 6)["execution"];
  EXPECT_NE(tet::dump_query_json(ex, false).find(
                R"("f32_preview":[-1.4638501,-0.8783101,-0.29277003,0.29277003,0.8783101,1.4638501])"),
            std::string::npos);
  EXPECT_EQ(ex["total_bytes_read_from_disk"], 72);
  ex = run("sample.tet", R"({"dataset":"temperature","transform":{"method":"minmax","axis":1},"write":"ram"})",
           6)["execution"];
  EXPECT_EQ(ex["f32_preview"], Json::parse("[0.0,0.5,1.0,0.0,0.5,1.0]"));
  EXPECT_EQ(ex["operation_reduced_min"], Json::parse("[1.0,4.0]"));
  EXPECT_EQ(ex["operation_reduced_mean"], Json::array());
  EXPECT_EQ(error_of("multichunk_u8.tet", R"({"dataset":"a","transform":{"method":"l1"}})"),
            "validation: transform requires f32 or f64 datasets");
  // A zero denominator: every element of a constant row becomes NaN and is recorded.
  ex = run(
      "sample.tet",
      R"({"dataset":"temperature","selection":[{"start":0,"stop":1},{"start":0,"stop":1}],"transform":{"method":"zscore"},"write":"ram"})",
      4)["execution"];
  EXPECT_EQ(ex["transform_div_by_zero_count"], 1);
  EXPECT_EQ(ex["transform_div_by_zero_indices"], Json::parse("[0]"));
  EXPECT_EQ(
      error_of(
          "large.tet",
          R"({"dataset":"a","transform":{"method":"center"},"write":"ram","execution":{"memory_budget_bytes":100}})"),
      "validation: logical selection (2176 elements, 8704 bytes) exceeds memory_budget_bytes (100); use `write`: "
      "`switch` or `spill`, or raise execution.memory_budget_bytes");
}

TEST(QueryEngine, TransformSpillAndSidecar) {
  testing::TempDir dir("query-transform");
  fs::copy_file(testing::tet_fixture("generated/labeled.tet"), dir / "labeled.tet");
  tet::QueryOptions o;
  o.tet_path = (dir / "labeled.tet").string();
  o.execute = true;
  o.preview = 3;
  auto t = tet::run_query(
      tet::parse_query_json(
          R"({"dataset":"temperature","transform":{"method":"center"},"write":{"target":"spill","path":"c.bin"}})"),
      o);
  EXPECT_EQ(t.tree["execution"]["memory_strategy"], "transform_spill");
  EXPECT_EQ(fs::file_size(dir / "c.bin"), 48u);
  t = tet::run_query(
      tet::parse_query_json(
          R"({"dataset":"temperature","selection":[{"start":1,"stop":3},{}],"transform":{"method":"l2"},"write":{"target":"sidecar","timestamp":false}})"),
      o);
  EXPECT_EQ(t.tree["execution"]["memory_strategy"], "transform_sidecar");
  const auto side = tet::TetFile::open((dir / "labeled.l2.tet").string());
  const tet::Dataset* ds = side.find("temperature-l2");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->shape, (std::vector<std::uint64_t>{2, 3}));
  std::vector<float> v(6);
  side.read_box(*ds, ds->full_box(), std::as_writable_bytes(std::span(v)));
  double norm = 0;
  for (int x = 3; x < 9; ++x) norm += double(x) * x;
  EXPECT_FLOAT_EQ(v[0], static_cast<float>(3 / std::sqrt(norm)));
  const auto* md = side.metadata_of("temperature-l2");
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->attrs.at("derived_from"), "temperature");
  EXPECT_EQ(md->attrs.at("units"), "K");
  const auto& row = side.layout().footer->history.at(0);
  EXPECT_EQ(row.op, "transform");
  EXPECT_EQ(row.params.at("logical_selection_shape"), "2x3");
  EXPECT_EQ(row.params.at("selection_box_start"), "1x0");
}

TEST(QueryEngine, DeviceFields) {
  auto ex = run("sample.tet", R"({"dataset":"temperature","mean":[],"execution":{"device":"AUTO"}})")["execution"];
  EXPECT_EQ(ex["device_requested"], "auto");
  EXPECT_EQ(ex["device_fallback_reason"], "auto_below_size_threshold");
  ex = run("sample.tet", R"({"dataset":"temperature","median":[],"execution":{"device":"cuda:2"}})")["execution"];
  EXPECT_EQ(ex["device_fallback_reason"], "tier_c_materialize");
  ex = run("sample.tet", R"({"dataset":"temperature","mean":[],"execution":{"device":"cpu"}})")["execution"];
  EXPECT_FALSE(ex.contains("device_fallback_reason"));
}

TEST(QueryEngine, BudgetResolution) {
  tet::ExecutionHints h;
  EXPECT_EQ(tet::resolve_memory_budget(nullptr, 0, 0, std::nullopt), 268435456u);
  EXPECT_EQ(tet::resolve_memory_budget(nullptr, 0, 0, 1000), 250u);
  EXPECT_EQ(tet::resolve_memory_budget(nullptr, 4000, 0, 1000), 400u);
  EXPECT_EQ(tet::resolve_memory_budget(nullptr, 4000, 77, 1000), 77u);
  h.memory_budget_percent_bps = 100;
  EXPECT_EQ(tet::resolve_memory_budget(&h, 4000, 0, 1000), 10u);
  h.memory_budget_bytes = 0;
  EXPECT_EQ(tet::resolve_memory_budget(&h, 4000, 77, 1000), 1u);
  EXPECT_EQ(tet::resolve_memory_budget(nullptr, 1, 0, 10), 1u);
}

}  // namespace
}  // namespace tessera
