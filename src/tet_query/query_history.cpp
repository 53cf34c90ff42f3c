// Query history storage and listing (spec tet.md §6.5): the JSONL file, its environment
// settings, deduplication of the newest row, the keep limit, filters and the `qhist list` forms.
#include "tessera/tet_query/query_history.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/file_lock.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;
namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Json entry_json(const HistoryEntry& e) {
  Json o = Json::object();
  o["at"] = e.at;
  o["tet"] = e.tet ? Json(*e.tet) : Json(nullptr);
  o["execute"] = e.execute;
  o["query"] = e.query;
  return o;
}

std::string op_key_of(const Json& query) {
  for (auto it = query.begin(); it != query.end(); ++it)
    if (query_op_from_key(it.key())) return it.key();
  return "";
}

std::string select_of(const Json& query) {
  if (!query.contains("selection")) return "full";
  for (const auto& axis : query["selection"])
    if (axis.contains("step") && axis["step"].is_number() && axis["step"].get<double>() > 1) return "strided";
  return "subset";
}

}  // namespace

HistorySettings history_settings() {
  HistorySettings s;
  const std::string off = env("TET_NO_QUERY_HISTORY");
  s.disabled = off == "1" || off == "true" || off == "TRUE" || off == "yes" || off == "YES";
  const std::string max = env("TET_QUERY_HISTORY_MAX");
  std::size_t v = 0;
  const auto [ptr, ec] = std::from_chars(max.data(), max.data() + max.size(), v);
  if (!max.empty() && ec == std::errc() && ptr == max.data() + max.size() && v >= 1)
    s.max = std::min(v, kHistoryMaxCap);
  const std::string file = env("TET_QUERY_HISTORY_FILE");
  if (!file.empty()) {
    s.path = file;
  } else {
    const auto roots = cache_roots();
    if (!roots.empty()) s.path = (fs::path(roots.front()) / kHistoryFileName).string();
  }
  return s;
}

std::vector<HistoryEntry> load_history(const std::string& path) {
  std::vector<HistoryEntry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      const Json j = Json::parse(line);
      HistoryEntry e;
      e.at = j.at("at").get<std::int64_t>();
      if (j.contains("tet") && j["tet"].is_string()) e.tet = j["tet"].get<std::string>();
      e.execute = j.value("execute", false);
      e.query = j.at("query");
      if (!e.query.is_object()) continue;
      out.push_back(std::move(e));
    } catch (const std::exception&) {
      continue;  // a damaged line does not lose the rest of the history
    }
  }
  return out;
}

void record_query_history(const QueryDocument& doc, const std::optional<std::string>& tet, bool execute) {
  const HistorySettings s = history_settings();
  if (s.disabled) return;
  if (!s.path) throw IoError("no cache directory for query history (set TET_QUERY_HISTORY_FILE)");
  const fs::path parent = fs::path(*s.path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
  }
  // Read, append and replace under one lock: concurrent queries each add their row, none is lost
  // to another's replacement.
  const io::FileLock lock(*s.path + ".lock", "query history lock");
  std::vector<HistoryEntry> rows = load_history(*s.path);
  HistoryEntry e;
  e.at = static_cast<std::int64_t>(std::time(nullptr));
  e.tet = tet;
  e.execute = execute;
  e.query = query_document_json(doc);
  if (!rows.empty() && rows.back().tet == e.tet && rows.back().execute == e.execute && rows.back().query == e.query)
    rows.back().at = e.at;
  else rows.push_back(std::move(e));
  if (rows.size() > s.max) rows.erase(rows.begin(), rows.end() - static_cast<std::ptrdiff_t>(s.max));
  std::string text;
  for (const auto& r : rows) text += codec::json::dump(entry_json(r)) + "\n";
  io::write_file_atomic(*s.path, std::as_bytes(std::span(text)), io::StaleTemporaries::Remove);
}

std::string HistoryFilter::describe() const {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (dataset) add("dataset~" + *dataset);
  if (tet) add("tet~" + *tet);
  if (execute) add(std::string("mode=") + (*execute ? "x" : "p"));
  if (grep) add("grep~" + *grep);
  return out;
}

bool parse_history_mode(const std::string& mode) {
  if (mode == "x" || mode == "execute") return true;
  if (mode == "p" || mode == "plan") return false;
  throw UsageError("unknown history mode \"" + mode + "\"; expected x, execute, p, or plan");
}

std::vector<HistoryEntry> filtered_history(const std::vector<HistoryEntry>& rows, const HistoryFilter& f) {
  std::vector<HistoryEntry> out;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const std::string dataset = it->query.value("dataset", "");
    const std::string tet = it->tet.value_or("");
    if (f.dataset && !contains_ascii_ci(dataset, *f.dataset)) continue;
    if (f.tet && !contains_ascii_ci(tet, *f.tet)) continue;
    if (f.execute && it->execute != *f.execute) continue;
    if (f.grep && !contains_ascii_ci(dataset, *f.grep) && !contains_ascii_ci(tet, *f.grep) &&
        !contains_ascii_ci(op_key_of(it->query), *f.grep))
      continue;
    out.push_back(*it);
  }
  return out;
}

std::string history_list_text(const std::vector<HistoryEntry>& shown, const HistorySettings& s,
                              const HistoryFilter& filter, bool any_rows) {
  std::string out = "file: " + s.path.value_or("(none)") + "\n";
  out += "shown: " + std::to_string(shown.size()) + "  keep: " + std::to_string(s.max) + " on disk\n";
  if (!filter.empty()) out += "filter: " + filter.describe() + "\n";
  out += "\n";
  if (shown.empty()) {
    out += any_rows && !filter.empty() ? "(no rows match filter)\n"
                                       : "(empty — run `tessera tet query … -t file.tet -x` to record)\n";
    return out;
  }
  out += "  #  mode  dataset             op          select    tet\n";
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const HistoryEntry& e = shown[i];
    std::string idx = std::to_string(i + 1);
    if (idx.size() < 3) idx = std::string(3 - idx.size(), ' ') + idx;
    const std::string mode = e.execute ? " x  " : " p  ";
    const std::string op = op_key_of(e.query);
    const std::string tet = e.tet ? fs::path(*e.tet).filename().string() : "-";
    out += idx + "  " + mode + "  " + pad_right(truncate_utf8(e.query.value("dataset", ""), 18), 18) + "  " +
           pad_right(op.empty() ? "-" : op, 10) + "  " + pad_right(select_of(e.query), 8) + "  " + tet + "\n";
  }
  out += "\nmode: x = had -x (execute), p = plan only (no -x)\n";
  out += "replay: tessera tet qhist run <#>  (1 = newest)\n";
  return out;
}

std::string history_list_json(const std::vector<HistoryEntry>& shown, const HistorySettings& s,
                              const HistoryFilter& filter) {
  Json entries = Json::array();
  for (const auto& e : shown) {
    Json o = Json::object();
    o["at"] = e.at;
    o["mode"] = e.execute ? "x" : "p";
    o["query"] = e.query;
    o["tet"] = e.tet ? Json(*e.tet) : Json(nullptr);
    entries.push_back(std::move(o));
  }
  Json out = Json::object();
  out["entries"] = std::move(entries);
  out["filter"] = filter.empty() ? Json(nullptr) : Json(filter.describe());
  out["mode_key"] = Json{{"p", "plan only (no -x)"}, {"x", "execute (-x was set)"}};
  out["path"] = s.path ? Json(*s.path) : Json(nullptr);
  out["settings"] =
      Json{{"cli_query_max", s.max}, {"history_file_name", kHistoryFileName}, {"history_max_cap", kHistoryMaxCap}};
  out["shown"] = shown.size();
  codec::json::DumpOptions opts = codec::json::DumpOptions::tet_pretty();
  opts.sort_keys = true;
  return codec::json::dump(out, opts);
}

QueryDocument parse_query_tree(const Json& doc);  // query_document.cpp

QueryDocument history_document(const HistoryEntry& entry) { return parse_query_tree(entry.query); }

}  // namespace tessera::tet
