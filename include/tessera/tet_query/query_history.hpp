// Local query history (spec tet.md §6.5): one JSON object per line in
// `$TET_QUERY_HISTORY_FILE`, else `query_history.jsonl` in the first platform cache root
// (`…/tessera/tet/`); never inside a `.tet` file. The newest TET_QUERY_HISTORY_MAX rows are kept
// (1…10000, default 50); TET_NO_QUERY_HISTORY disables recording. Rewrites are atomic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/tet_query/query_document.hpp"

namespace tessera::tet {

inline constexpr std::size_t kHistoryDefaultMax = 50;
inline constexpr std::size_t kHistoryMaxCap = 10000;
inline constexpr const char* kHistoryFileName = "query_history.jsonl";

struct HistoryEntry {
  std::int64_t at = 0;             // Unix seconds
  std::optional<std::string> tet;  // -t path as given
  bool execute = false;
  codec::json::Json query;  // flat document (query_document_json)
};

struct HistorySettings {
  std::optional<std::string> path;  // nullopt when no cache root exists
  bool disabled = false;
  std::size_t max = kHistoryDefaultMax;
};
HistorySettings history_settings();

// Rows of the file, oldest first. A missing file is empty; malformed lines are skipped.
std::vector<HistoryEntry> load_history(const std::string& path);

// Appends (or refreshes the newest identical row's `at`) and trims to the keep limit. Does
// nothing when history is disabled. Throws IoError when the file cannot be written.
void record_query_history(const QueryDocument& doc, const std::optional<std::string>& tet, bool execute);

struct HistoryFilter {
  std::optional<std::string> dataset;  // substring of the dataset (ASCII case-insensitive)
  std::optional<std::string> tet;      // substring of the tet path
  std::optional<bool> execute;         // mode x / p
  std::optional<std::string> grep;     // dataset, tet path or op key
  bool empty() const noexcept { return !dataset && !tet && !execute && !grep; }
  std::string describe() const;  // `dataset~x tet~y mode=x grep~z`
};
// Parses `x|execute|p|plan`; throws UsageError otherwise.
bool parse_history_mode(const std::string& mode);

// Newest first, filtered.
std::vector<HistoryEntry> filtered_history(const std::vector<HistoryEntry>& rows, const HistoryFilter& filter);

// `qhist list` text and JSON (§6.5) for `shown` (newest first, already limited).
std::string history_list_text(const std::vector<HistoryEntry>& shown, const HistorySettings& settings,
                              const HistoryFilter& filter, bool any_rows);
std::string history_list_json(const std::vector<HistoryEntry>& shown, const HistorySettings& settings,
                              const HistoryFilter& filter);

// Reads an entry's document back (the flat form parses like any query document).
QueryDocument history_document(const HistoryEntry& entry);

}  // namespace tessera::tet
