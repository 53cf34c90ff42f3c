// Query documents (spec tet.md §3.1–3.4): JSON and TOML give the same document, every reserved key
// and op parameter is checked with the reference's message, limits hold, and the flat form that
// history stores parses back to the same document.
#include <gtest/gtest.h>

#include <string>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet_query/query_document.hpp"

namespace tessera {
namespace {

using tet::parse_query_json;
using tet::parse_query_text;
using tet::parse_query_toml;
using tet::QueryOp;
using tet::QuerySyntax;

std::string error_of(const std::string& text, QuerySyntax syntax = QuerySyntax::Json) {
  try {
    parse_query_text(text, syntax);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(QueryDocument, ConformanceJsonAndTomlPairsAgree) {
  const auto dir = testing::tet_fixture("queries");
  for (const char* name : {"mean_a", "mean_strided_temperature", "mean_temperature", "quantile_axis0_a",
                           "slice_2x2_temperature", "slice_full_temperature", "sum_a", "sum_axis0_a", "var_a"}) {
    const auto json_text = testing::read_file_text(dir / (std::string(name) + ".json"));
    const auto toml_text = testing::read_file_text(dir / (std::string(name) + ".toml"));
    const auto a = parse_query_json(json_text);
    const auto b = parse_query_toml(toml_text);
    EXPECT_EQ(tet::query_document_json(a), tet::query_document_json(b)) << name;
  }
}

TEST(QueryDocument, FormatDetection) {
  EXPECT_EQ(tet::detect_query_syntax("q.json", "dataset = 'x'"), QuerySyntax::Json);
  EXPECT_EQ(tet::detect_query_syntax("q.toml", "{}"), QuerySyntax::Toml);
  EXPECT_EQ(tet::detect_query_syntax("q.txt", "  {\"dataset\":1}"), QuerySyntax::Json);
  EXPECT_EQ(tet::detect_query_syntax(std::nullopt, "dataset = \"a\""), QuerySyntax::Toml);
}

TEST(QueryDocument, TomlTablesArraysAndValues) {
  const auto doc = parse_query_toml(
      "dataset = \"t\"\nlayout_version = 1\n[quantile]\nq = 0.25\naxis = 1\n[[selection]]\nstart = 0\nstop = 2\n"
      "[[selection]]\nstep = 2\n[execution]\nfold_parallel = false\nmemory_budget_percent = 12.5\n");
  ASSERT_TRUE(doc.operation);
  EXPECT_EQ(doc.operation->op, QueryOp::Quantile);
  EXPECT_DOUBLE_EQ(doc.operation->q, 0.25);
  EXPECT_EQ(doc.operation->axes, std::vector<std::string>{"1"});
  ASSERT_TRUE(doc.selection);
  ASSERT_EQ(doc.selection->size(), 2u);
  EXPECT_EQ(*(*doc.selection)[1].step, 2u);
  EXPECT_EQ(*doc.layout_version, 1u);
  EXPECT_EQ(*doc.execution->memory_budget_percent_bps, 1250);
  EXPECT_FALSE(*doc.execution->fold_parallel);
  EXPECT_EQ(parse_query_toml("dataset = \"t\"\nmean = []").operation->axes.size(), 0u);
  EXPECT_EQ(parse_query_toml("dataset = \"t\"\nmean = 0").operation->axes, std::vector<std::string>{"0"});
  EXPECT_EQ(error_of("dataset = \"t\"\nmean = ", QuerySyntax::Toml).rfind("invalid query TOML: ", 0), 0u);
}

TEST(QueryDocument, TopLevelChecksInOrder) {
  EXPECT_EQ(error_of("[1]"), "validation: query document must be a JSON object");
  EXPECT_EQ(error_of(R"({"dataset":"a","operation":{},"zzz":1})"),
            "validation: nested `operation` is not supported; use a top-level op key (e.g. `\"mean\": 0`)");
  EXPECT_EQ(error_of(R"({"dataset":"a","output":{}})"),
            "validation: nested `output` is not supported; use top-level `\"spill\": \"path\"`");
  EXPECT_EQ(error_of(R"({"zeta":1,"dataset":"a","beta":1})"), "validation: unknown field `beta`");
  EXPECT_EQ(error_of(R"({"dataset":3})"), "validation: `dataset` must be a string");
  EXPECT_EQ(error_of(R"({"mean":[]})"), "validation: `dataset` must be a string");
  EXPECT_EQ(error_of(R"({"dataset":" ","mean":[]})"), "validation: `dataset` must be a non-empty string");
  EXPECT_EQ(error_of("{\"dataset\":\"" + std::string(1025, 'a') + "\"}"),
            "validation: `dataset` name exceeds maximum length (1025 > 1024)");
  EXPECT_EQ(error_of(R"({"dataset":"a","sum":[],"mean":[]})"),
            "validation: query document must include at most one reduction key");
  EXPECT_EQ(error_of(R"({"dataset":"a","layout_version":-1})"),
            "validation: `layout_version` must be a non-negative integer");
  EXPECT_EQ(error_of(R"({"dataset":"a","layout_version":"1"})"), "validation: `layout_version` must be a number");
  EXPECT_EQ(error_of(R"({"dataset":)").rfind("invalid query JSON: ", 0), 0u);
  // Duplicate keys: the last one wins.
  EXPECT_EQ(parse_query_json(R"({"dataset":"a","dataset":"b"})").dataset, "b");
}

TEST(QueryDocument, Limits) {
  std::string big = "{\"dataset\":\"a\",\"spill\":\"" + std::string(1048576, 'x') + "\"}";
  EXPECT_EQ(error_of(big), "validation: query document exceeds maximum size (" + std::to_string(big.size()) +
                               " bytes, limit 1048576)");
  std::string deep = "{\"dataset\":\"a\",\"mean\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_EQ(error_of(deep), "validation: query document nesting depth 65 exceeds maximum 64");
  std::string very_deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_EQ(error_of(very_deep), "validation: query document nesting depth 200000 exceeds maximum 64");
}

TEST(QueryDocument, ReservedKeys) {
  EXPECT_EQ(error_of(R"({"dataset":"a","spill":3})"),
            "validation: `spill` must be a string path (relative to the `.tet` parent or absolute)");
  EXPECT_EQ(error_of(R"({"dataset":"a","spill":""})"), "validation: `spill` path must not be empty");
  EXPECT_EQ(error_of(R"({"dataset":"a","transform":{"method":"l1"},"write":{"bogus":1}})"),
            "validation: unknown field `write.bogus`");
  EXPECT_EQ(error_of(R"({"dataset":"a","transform":{"method":"l1"},"write":{"target":"ram","path":"x"}})"),
            "validation: `write.path` is only valid with `spill` or `sidecar` targets");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":[],"write":"ram"})"),
            "validation: `write` is only valid with `transform`");
  EXPECT_EQ(error_of(R"({"dataset":"a","write":"ram"})"), "validation: `write` requires a transform operation");
  EXPECT_EQ(error_of(R"({"dataset":"a","transform":{"method":"l1"},"spill":"x"})"),
            "validation: transform operations use top-level `write`, not `spill`");
  EXPECT_EQ(error_of(R"({"dataset":"a","execution":{"nope":1}})"), "validation: unknown field `execution.nope`");
  EXPECT_EQ(
      error_of(R"({"dataset":"a","execution":{"memory_budget_percent":10,"memory_budget_percent_bps":1}})"),
      "validation: use either `execution.memory_budget_percent` or `execution.memory_budget_percent_bps`, not both");
  EXPECT_EQ(error_of(R"({"dataset":"a","execution":{"device":"tpu"}})"),
            "validation: unknown device `tpu` (expected cpu, auto, metal, cuda[:N| :multi], or rocm[:N| :multi])");
  EXPECT_EQ(error_of(R"({"dataset":"a","execution":{"device":"cuda:x"}})"),
            "validation: invalid device `cuda:x` (expected cuda:N with non-negative N)");
  EXPECT_EQ(*parse_query_json(R"({"dataset":"a","execution":{"device":"CUDA:3"}})").execution->device, "cuda:3");
  const auto w = parse_query_json(
      R"({"dataset":"a","transform":{"method":"zscore"},"write":{"target":"sidecar","path":"o.tet","timestamp":false}})");
  EXPECT_EQ(w.write->target, tet::WriteTarget::Sidecar);
  EXPECT_FALSE(*w.write->timestamp);
}

TEST(QueryDocument, SelectionChecks) {
  EXPECT_EQ(error_of(R"({"dataset":"a","selection":[{"step":0}]})"),
            "validation: selection[0].step must be >= 1, got 0");
  EXPECT_EQ(error_of(R"({"dataset":"a","selection":[{"start":3,"stop":3}]})"),
            "validation: selection[0]: start must be < stop when both set (got 3 >= 3)");
  EXPECT_EQ(error_of(R"({"dataset":"a","selection":[{"start":1,"start_label":"x"}]})"),
            "validation: selection[0]: use either `start` or `start_label`, not both");
}

TEST(QueryDocument, AxisSpecs) {
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":"1+1"})"),
            "validation: invalid axis label \"1+1\" (use a non-negative decimal index or a dimension name)");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":null})"), "validation: axis spec must not be null");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":true})"), "validation: axis spec must be a number, string, or array");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":-1})"), "validation: axis index must be a non-negative integer");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":[{}]})"), "validation: axis list entries must be numbers or strings");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":{"x":1}})"), "validation: axis object must include `axis` or `axes`");
  EXPECT_EQ(error_of("{\"dataset\":\"a\",\"mean\":\"" + std::string(33, 'a') + "\"}"),
            "validation: axis label exceeds maximum length (32)");
  EXPECT_EQ(error_of(R"({"dataset":"a","mean":[0,1,2,3,4,5,6,7,8]})"),
            "validation: operation has 9 axes; maximum is 8");
  const auto doc = parse_query_json(R"({"dataset":"a","sum":{"axes":[1,"time","x_y-2"]}})");
  EXPECT_EQ(doc.operation->axes, (std::vector<std::string>{"1", "time", "x_y-2"}));
}

TEST(QueryDocument, OperationParameters) {
  EXPECT_EQ(error_of(R"({"dataset":"a","quantile":0.5})"),
            "validation: `quantile` must be a JSON object (e.g. { \"q\": 0.95, \"axis\": 0 })");
  EXPECT_EQ(error_of(R"({"dataset":"a","quantile":{}})"), "validation: `quantile.q` is required");
  EXPECT_EQ(error_of(R"({"dataset":"a","quantile":{"q":1.5}})"),
            "validation: quantile q must be in [0.0, 1.0], got 1.5");
  EXPECT_EQ(error_of(R"({"dataset":"a","histogram":{}})"), "validation: `histogram.bins` is required");
  EXPECT_EQ(error_of(R"({"dataset":"a","histogram":{"bins":0}})"), "validation: histogram bins must be >= 1");
  EXPECT_EQ(error_of(R"({"dataset":"a","histogram":{"bins":5000}})"),
            "validation: histogram bins exceeds maximum 4096 (got 5000)");
  EXPECT_EQ(error_of(R"({"dataset":"a","histogram":{"bins":3,"max":1}})"),
            "validation: histogram requires both `min` and `max` when either is set");
  EXPECT_EQ(error_of(R"({"dataset":"a","histogram":{"bins":3,"min":2,"max":1}})"),
            "validation: histogram min must be < max (got 2.0 >= 1.0)");
  EXPECT_EQ(error_of("dataset = 'a'\n[histogram]\nbins = 3\nmin = -inf\nmax = 1", QuerySyntax::Toml),
            "validation: histogram min/max must be finite");
  EXPECT_EQ(error_of(R"({"dataset":"a","covariance":[]})"),
            "validation: covariance/correlation require exactly one observation axis (e.g. `\"axis\": 0`)");
  EXPECT_EQ(error_of(R"({"dataset":"a","transform":{}})"), "validation: `transform.method` is required");
  EXPECT_EQ(error_of(R"({"dataset":"a","transform":{"method":"rank"}})"),
            "validation: unknown transform method `rank` (expected zscore, minmax, l1, l2, center, scale, log1p, "
            "sqrt, or softmax)");
  const auto nc = parse_query_json(R"({"dataset":"a","null_count":{"fill":3,"axis":1}})");
  EXPECT_EQ(*nc.operation->fill, 3.0);
  EXPECT_EQ(tet::operation_echo(*nc.operation).dump(), R"({"null_count":{"axes":["1"],"fill":3.0}})");
}

TEST(QueryDocument, FlatFormRoundTrips) {
  for (
      const char* text :
      {R"({"dataset":"t","selection":[{"start":1,"stop":3,"step":2},{"start_label":"B"}],"quantile":{"q":0.5,"axis":0}})",
       R"({"layout_version":1,"dataset":"t","histogram":{"bins":4,"min":0,"max":8},"execution":{"memory_budget_bytes":16}})",
       R"({"dataset":"t","transform":{"method":"zscore","axes":[1]},"write":{"target":"spill","path":"x.bin"}})",
       R"({"dataset":"t","null_count":{"fill":5,"axes":[]},"execution":{"fold_parallel":true,"device":"cpu"}})",
       R"({"dataset":"t","spill":"out.bin"})"}) {
    const auto doc = parse_query_json(text);
    const auto flat = tet::query_document_json(doc);
    const auto again = parse_query_json(flat.dump());
    EXPECT_EQ(tet::query_document_json(again), flat) << text;
  }
}

}  // namespace
}  // namespace tessera
