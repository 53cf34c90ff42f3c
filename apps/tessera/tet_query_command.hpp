// The one entry point that runs, prints and records a query: `tessera tet query` and
// `tessera tet qhist run N` both go through it, so a replay behaves exactly like the original.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/tet_query/query_output.hpp"

namespace tessera::cli {

// Runs `doc` (against `tet_path` when given, else the document's own path), prints it in
// `format` and records it in the history; returns the exit code.
int run_query_command(const tet::QueryDocument& doc, const std::optional<std::string>& tet_path, bool execute,
                      tet::QueryOutputFormat format, std::optional<std::uint64_t> preview,
                      const std::vector<std::string>& spill_allow);

}  // namespace tessera::cli
