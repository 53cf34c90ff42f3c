// The `.tet` query engine (spec tet.md §4–§5): plans a query document against a file (catalog
// match, axis and label resolution, chunk touch list, read plan) and, when asked to execute,
// runs it with the strategy §4.2 names — capped preview, `mmap_spill`, streaming folds,
// materializing tier-C ops (in memory or through a temporary spill file) and transforms. The
// result is the response tree of §5.2, which query_output.hpp renders in every output format.
//
// Errors: document and planning errors throw UsageError `validation: …`; file errors are the
// reader's FormatError / IoError texts. A dataset missing from the catalog is not an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/tet_query/query_document.hpp"

namespace tessera::tet {

struct QueryOptions {
  std::optional<std::string> tet_path;   // `-t PATH` as the caller wrote it
  bool execute = false;                  // `-x`: decode and execute (requires tet_path)
  std::uint64_t preview = 64;            // preview cap P (§4.5)
  std::optional<std::string> device;     // `--device` (overrides execution.device)
  std::vector<std::string> spill_allow;  // extra allowed spill roots (`--spill-allow`)
  // Threads for parallel folds and decoding (0 = all available).
  unsigned threads = 0;
};

struct QueryResponse {
  codec::json::Json tree;  // the §5.2 response, keys in their output order
  bool dataset_matched = false;
  std::vector<std::string> available_datasets;  // filled when the dataset is missing

  QueryResponse() = default;
  QueryResponse(const QueryResponse&) = default;
  QueryResponse(QueryResponse&&) noexcept = default;
  QueryResponse& operator=(const QueryResponse&) = default;
  QueryResponse& operator=(QueryResponse&&) noexcept = default;
  // A partial result can hold millions of numbers; codec::json::release frees them without the
  // copy nlohmann's destructor would make first.
  ~QueryResponse() { codec::json::release(tree); }
};

// Validates the document against the file (if any), plans and, with options.execute, executes.
QueryResponse run_query(const QueryDocument& doc, const QueryOptions& options);

// Host facts the budget rules use (§4.3, §4.4): $TESSERA_TET_AVAILABLE_RAM_BYTES when set, else
// Linux MemAvailable; nullopt when unknown.
std::optional<std::uint64_t> available_ram_bytes();

// Memory budget resolution (§4.3): query bytes → file bytes → available × bps / 10000 (query
// percent, file percent, default 2500) → 256 MiB when RAM is unknown; at least 1.
std::uint64_t resolve_memory_budget(const ExecutionHints* hints, std::uint16_t file_percent_bps,
                                    std::uint32_t file_budget_bytes, std::optional<std::uint64_t> available);

// The platform cache roots of §4.6, each suffixed with `tessera/tet`, in priority order.
std::vector<std::string> cache_roots();

}  // namespace tessera::tet
