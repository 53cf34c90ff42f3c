// Query documents of the `.tet` query engine (spec tet.md §3): the flat JSON wire form and its
// TOML front-end, parsed into a `QueryDocument` with every reserved key, axis spec and operation
// parameter checked with the reference's messages. Nothing here touches a file: dimension names,
// labels and fills resolve later, at plan time (query_engine.hpp).
//
// Errors: syntax errors throw FormatError `invalid query JSON: …` / `invalid query TOML: …`;
// every other document error throws UsageError `validation: …`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/tet_query/selection.hpp"

namespace tessera::tet {

// The operation keys, in the order of the §3.4 table (also the order documents are scanned in).
enum class QueryOp : std::uint8_t {
  Sum,
  Mean,
  Min,
  Max,
  Var,
  Std,
  Product,
  NormL1,
  NormL2,
  Count,
  AllFinite,
  AnyNan,
  AnyInf,
  ArgMin,
  ArgMax,
  Median,
  Quantile,
  Histogram,
  NanCount,
  InfCount,
  NullCount,
  Covariance,
  Correlation,
  NanMean,
  NanStd,
  Transform
};
inline constexpr std::size_t kQueryOpCount = 26;

// The wire key of an op (`sum`, `arg_min`, `transform`, …).
std::string_view query_op_key(QueryOp op) noexcept;
std::optional<QueryOp> query_op_from_key(std::string_view key) noexcept;
// Tier C (§4.2): median, quantile, histogram, covariance, correlation.
bool is_materializing_op(QueryOp op) noexcept;

enum class TransformMethod : std::uint8_t { Zscore, Minmax, L1, L2, Center, Scale, Log1p, Sqrt, Softmax };
std::string_view transform_method_name(TransformMethod m) noexcept;

struct QueryOperation {
  QueryOp op = QueryOp::Sum;
  // Axis tokens as written (decimal indices or dimension names); empty = scalar reduction.
  // After planning they are the resolved decimal strings.
  std::vector<std::string> axes;
  double q = 0;                    // quantile
  std::uint32_t bins = 0;          // histogram
  std::optional<double> min, max;  // histogram range
  std::optional<double> fill;      // null_count (query value, or the resolved attr at plan time)
  TransformMethod method = TransformMethod::Zscore;
};

enum class WriteTarget : std::uint8_t { Switch, Spill, Sidecar, Ram };
std::string_view write_target_name(WriteTarget t) noexcept;

struct WriteSpec {
  WriteTarget target = WriteTarget::Switch;
  bool target_given = false;  // an object without `target` means switch but echoes no target
  bool as_object = false;     // written as an object (echoed the same way in history)
  std::optional<std::string> path;
  std::optional<bool> timestamp;
};

struct ExecutionHints {
  std::optional<std::uint64_t> memory_budget_bytes;
  std::optional<std::uint16_t> memory_budget_percent_bps;
  std::optional<double> memory_budget_percent;  // as written (history echo); bps holds the value
  std::optional<bool> fold_parallel;
  std::optional<std::string> device;  // normalized token (normalize_device)
};

struct QueryDocument {
  std::optional<std::uint32_t> layout_version;
  std::string dataset;
  std::optional<std::vector<SelectionEntry>> selection;
  std::optional<std::string> spill;
  std::optional<WriteSpec> write;
  std::optional<ExecutionHints> execution;
  std::optional<QueryOperation> operation;
};

inline constexpr std::size_t kMaxQueryBytes = 1048576;
inline constexpr std::size_t kMaxQueryDepth = 64;

enum class QuerySyntax : std::uint8_t { Json, Toml };

// §3.1 format detection: a `.json` / `.toml` path hint decides; otherwise the trimmed text
// starting with `{` is JSON and anything else TOML.
QuerySyntax detect_query_syntax(std::optional<std::string_view> path_hint, std::string_view text);

QueryDocument parse_query_json(std::string_view text);
QueryDocument parse_query_toml(std::string_view text);
QueryDocument parse_query_text(std::string_view text, QuerySyntax syntax);

// A TOML document converted to the JSON tree the JSON rules then read (§3.1). Throws
// FormatError `invalid query TOML: …`. toml++ bounds bracket nesting itself (256) but not dotted
// keys (`a.a.a… = 1`), whose tables it builds and destroys recursively: bound the text with
// toml_nesting_depth first (parse_query_toml does).
codec::json::Json toml_to_json(std::string_view text);

// An upper bound on the table/array nesting of a TOML text, counted over the bytes outside
// strings and comments without parsing: header and dotted-key components plus open brackets.
std::size_t toml_nesting_depth(std::string_view text) noexcept;

// Device tokens (§4.7), ASCII case-insensitive; returns the normalized token or throws
// UsageError `validation: unknown device …` / `validation: invalid device …`.
std::string normalize_device(std::string_view token);

// The externally tagged operation echo of responses (§5.2), e.g. {"mean":{"axes":["1"]}}.
codec::json::Json operation_echo(const QueryOperation& op);
// The document in flat wire form (layout_version, dataset, selection, op key, spill, write,
// execution; absent parts omitted): what query history stores and replays (§6.5).
codec::json::Json query_document_json(const QueryDocument& doc);

}  // namespace tessera::tet
