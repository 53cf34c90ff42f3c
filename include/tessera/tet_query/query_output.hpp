// Output formats of `tessera tet query` (spec tet.md §5): `full` (pretty JSON), `json`
// (compact), `stats` and `plan` (reduced pretty JSON), `quiet` (one line) and `table`. Every
// renderer returns the text without the final newline the CLI adds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tessera/tet_query/query_engine.hpp"

namespace tessera::tet {

enum class QueryOutputFormat : std::uint8_t { Full, Json, Stats, Plan, Quiet, Table };

std::optional<QueryOutputFormat> query_output_format_from_name(std::string_view name) noexcept;

// Renders the response. Throws UsageError for the table format's unsupported results
// (`table format: …`).
std::string render_query_response(const QueryResponse& response, QueryOutputFormat format);

// The response tree as JSON text (f32 previews with f32 digits, NaN/±inf as null).
std::string dump_query_json(const codec::json::Json& tree, bool pretty);

// §5.4 number forms: fixed 6 decimals with trailing zeros removed; `NaN`, `inf`, `-inf`.
std::string quiet_number(double v);

}  // namespace tessera::tet
