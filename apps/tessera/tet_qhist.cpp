// `tessera tet qhist` (alias `hist`, spec tet.md §6.5): list, replay (`run N`) and clear the local
// query history. Replays go through the same code path as `tessera tet query`.
#include <algorithm>
#include <filesystem>

#include "commands.hpp"
#include "tet_query_command.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet_query/query_history.hpp"
#include "tessera/tet_query/query_output.hpp"

namespace tessera::cli {

namespace {

struct FilterArgs {
  std::string dataset, tet, mode, grep;
  tet::HistoryFilter build() const {
    tet::HistoryFilter f;
    if (!dataset.empty()) f.dataset = dataset;
    if (!tet.empty()) f.tet = tet;
    if (!mode.empty()) f.execute = tet::parse_history_mode(mode);
    if (!grep.empty()) f.grep = grep;
    return f;
  }
};

struct ListArgs {
  std::optional<std::size_t> limit;
  bool all = false;
  bool json = false;
  FilterArgs filter;
};

struct RunArgs {
  long long index = 0;
  std::string tet;
  bool execute = false, plan = false, quiet = false;
  std::string format;
  std::optional<std::uint64_t> preview;
  std::vector<std::string> spill_allow;
  FilterArgs filter;
};

void run_list(const ListArgs& a) {
  const tet::HistorySettings s = tet::history_settings();
  const auto rows = s.path ? tet::load_history(*s.path) : std::vector<tet::HistoryEntry>{};
  const tet::HistoryFilter filter = a.filter.build();
  auto shown = tet::filtered_history(rows, filter);
  const std::size_t limit = a.limit.value_or(s.max);
  if (!a.all && shown.size() > limit) shown.resize(limit);
  if (a.json) write_stream(stdout, tet::history_list_json(shown, s, filter));
  else write_stream(stdout, tet::history_list_text(shown, s, filter, !rows.empty()));
}

int run_replay(const RunArgs& a) {
  if (a.index < 1) throw UsageError("history index must be >= 1 (1 = newest)");
  const tet::HistorySettings s = tet::history_settings();
  const auto rows = s.path ? tet::load_history(*s.path) : std::vector<tet::HistoryEntry>{};
  const auto matching = tet::filtered_history(rows, a.filter.build());
  if (static_cast<std::size_t>(a.index) > matching.size())
    throw UsageError("history entry " + std::to_string(a.index) + " not found (have " +
                     std::to_string(matching.size()) +
                     (matching.size() == 1 ? " matching entry)" : " matching entries)"));
  const tet::HistoryEntry& e = matching[static_cast<std::size_t>(a.index - 1)];
  auto format = tet::QueryOutputFormat::Full;
  if (!a.format.empty()) {
    auto f = tet::query_output_format_from_name(a.format);
    if (!f) throw CLI::ValidationError("--format", "invalid value `" + a.format + "`");
    format = *f;
  }
  if (a.quiet) format = tet::QueryOutputFormat::Quiet;
  const auto tet_path = a.tet.empty() ? e.tet : std::optional<std::string>(a.tet);
  const bool execute = a.plan ? false : (a.execute || e.execute);
  return run_query_command(tet::history_document(e), tet_path, execute, format, a.preview, a.spill_allow);
}

void add_filter_options(CLI::App* cmd, FilterArgs& f, const char* tet_flag) {
  cmd->add_option("--dataset", f.dataset, "Keep rows whose dataset contains this text");
  cmd->add_option(tet_flag, f.tet, "Keep rows whose .tet path contains this text");
  cmd->add_option("--mode", f.mode, "x|execute or p|plan");
  cmd->add_option("--grep", f.grep, "Match dataset, .tet path or op key");
}

}  // namespace

void register_tet_qhist(CLI::App& tet, int& rc) {
  auto list = std::make_shared<ListArgs>();
  auto run = std::make_shared<RunArgs>();
  auto clear = std::make_shared<bool>(false);
  CLI::App* cmd = tet.add_subcommand("qhist", "Local query history: list, replay, clear");
  cmd->alias("hist");
  cmd->add_flag("--clear", *clear, "Delete the history file");

  CLI::App* ls = cmd->add_subcommand("list", "List recorded queries (newest first)");
  ls->add_option("-n", list->limit, "Rows to show (default: the keep limit)")->check(integer_at_least(0));
  ls->add_flag("--all", list->all, "Show every row");
  ls->add_flag("--json", list->json, "JSON output");
  add_filter_options(ls, list->filter, "--tet");
  ls->callback([list, &rc] {
    run_list(*list);
    rc = 0;
  });

  CLI::App* rn = cmd->add_subcommand("run", "Replay entry N (1 = newest) through `tessera tet query`");
  rn->add_option("N", run->index, "Entry number (1 = newest)")->required();
  rn->add_option("-t,--tet", run->tet, "Override the recorded .tet path");
  auto* x = rn->add_flag("-x,--execute", run->execute, "Execute");
  auto* plan = rn->add_flag("--plan", run->plan, "Plan only (no -x)");
  x->excludes(plan);
  auto* fmt = rn->add_option("--format", run->format, "Output format");
  auto* q = rn->add_flag("-q,--quiet", run->quiet, "Same as --format quiet");
  q->excludes(fmt);
  rn->add_option("--preview", run->preview, "Preview cap");
  rn->add_option("--spill-allow", run->spill_allow, "Extra allowed spill root");
  add_filter_options(rn, run->filter, "--tet-filter");
  rn->callback([run, &rc] { rc = run_replay(*run); });

  cmd->callback([cmd, clear, list, &rc] {
    if (*clear) {
      const tet::HistorySettings s = tet::history_settings();
      if (s.path) {
        std::error_code ec;
        std::filesystem::remove(*s.path, ec);
      }
      write_stream(stderr, "query history cleared\n");
      rc = 0;
      return;
    }
    if (cmd->get_subcommands().empty()) {
      run_list(ListArgs{});
      rc = 0;
    }
  });
}

}  // namespace tessera::cli
