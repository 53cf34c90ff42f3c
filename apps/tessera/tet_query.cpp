// `tessera tet query [QUERY]` (alias `q`, spec tet.md §6.4): reads the query document (file,
// inline text or stdin), runs it through the library engine, prints the chosen output format
// and records the query in the local history (§6.5).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "commands.hpp"
#include "tet_query_command.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet_query/query_history.hpp"
#include "tessera/tet_query/query_output.hpp"

namespace tessera::cli {

// What one query run needs; `qhist run` replays through the same entry point.
struct QueryRun {
  tet::QueryDocument doc;
  std::optional<std::string> tet_path;
  bool execute = false;
  tet::QueryOutputFormat format = tet::QueryOutputFormat::Full;
  std::optional<std::uint64_t> preview;
  std::optional<std::string> device;
  std::vector<std::string> spill_allow;
};

namespace {

struct QueryArgs {
  std::string query;
  std::string tet;
  bool execute = false;
  std::string format;
  bool quiet = false;
  std::optional<std::uint64_t> preview;
  std::string device;
  std::vector<std::string> spill_allow;
};

std::string read_stream(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// §3.1: an existing file → its contents; `-` or nothing → stdin; anything else → inline text.
tet::QueryDocument read_document(const std::string& query) {
  std::optional<std::string> hint;
  std::string text;
  std::error_code ec;
  if (query.empty() || query == "-") {
    text = read_stream(std::cin);
  } else if (std::filesystem::is_regular_file(query, ec)) {
    std::ifstream in(query, std::ios::binary);
    if (!in) throw IoError("cannot read query file " + query, query);
    text = read_stream(in);
    hint = query;
  } else {
    text = query;
  }
  return tet::parse_query_text(text, tet::detect_query_syntax(hint, text));
}

}  // namespace

namespace {

int execute_query_run(const QueryRun& run) {
  tet::QueryOptions options;
  options.tet_path = run.tet_path;
  options.execute = run.execute;
  const bool json_like = run.format == tet::QueryOutputFormat::Full || run.format == tet::QueryOutputFormat::Json;
  options.preview = run.preview.value_or(json_like ? 64 : 0);
  options.device = run.device;
  options.spill_allow = run.spill_allow;
  const tet::QueryResponse response = tet::run_query(run.doc, options);
  write_stream(stdout, tet::render_query_response(response, run.format) + "\n");
  if (run.tet_path && !response.dataset_matched) {
    std::string hint =
        "hint: dataset " + tet::quoted_name(run.doc.dataset) + " not found in this .tet\navailable datasets:\n";
    for (const auto& name : response.available_datasets) hint += "  " + name + "\n";
    hint += "tip: run `tessera tet info " + *run.tet_path + "` to list catalog datasets\n";
    write_stream(stderr, hint);
  }
  try {
    tet::record_query_history(run.doc, run.tet_path, run.execute);
  } catch (const std::exception& e) {
    write_stream(stderr, std::string("warning: query history not saved: ") + e.what() + "\n");
  }
  return 0;
}

}  // namespace

int run_query_command(const tet::QueryDocument& doc, const std::optional<std::string>& tet_path, bool execute,
                      tet::QueryOutputFormat format, std::optional<std::uint64_t> preview,
                      const std::vector<std::string>& spill_allow) {
  QueryRun r;
  r.doc = doc;
  r.tet_path = tet_path;
  r.execute = execute;
  r.format = format;
  r.preview = preview;
  r.spill_allow = spill_allow;
  return execute_query_run(r);
}

void register_tet_query(CLI::App& tet, int& rc) {
  auto args = std::make_shared<QueryArgs>();
  CLI::App* cmd = tet.add_subcommand("query", "Validate, plan and execute a query document against a .tet file");
  cmd->alias("q");
  cmd->add_option("QUERY", args->query, "Query file (.json/.toml), inline JSON/TOML text, or - for stdin");
  cmd->add_option("-t,--tet", args->tet, "The .tet file: catalog + read plan (+ execution with -x)");
  cmd->add_flag("-x,--execute", args->execute, "Decode and execute (requires --tet)");
  cmd->add_option("--format", args->format, "full | json | stats | plan | quiet | table (default full)");
  cmd->add_flag("-q,--quiet", args->quiet, "Same as --format quiet");
  cmd->add_option("--preview,--preview-f32", args->preview,
                  "Preview cap (requires -x; default 64 for full/json, else 0)");
  cmd->add_option("--device", args->device, "Compute device token (cpu, auto, cuda[:N], …; requires -x)");
  cmd->add_option("--spill-allow", args->spill_allow, "Extra allowed spill root (repeatable; requires -x)");
  cmd->callback([args, &rc] {
    QueryRun run;
    if (args->quiet && !args->format.empty()) throw CLI::ValidationError("-q/--quiet conflicts with --format");
    if (!args->format.empty()) {
      auto f = tet::query_output_format_from_name(args->format);
      if (!f)
        throw CLI::ValidationError("--format",
                                   "invalid value `" + args->format + "` (full, json, stats, plan, quiet, table)");
      run.format = *f;
    }
    if (args->quiet) run.format = tet::QueryOutputFormat::Quiet;
    if (args->execute && args->tet.empty()) throw CLI::ValidationError("-x/--execute requires -t/--tet");
    if (!args->execute && !args->spill_allow.empty()) throw CLI::ValidationError("--spill-allow requires -x/--execute");
    if (!args->execute && !args->device.empty()) throw CLI::ValidationError("--device requires -x/--execute");
    if (!args->execute && args->preview) throw UsageError("--preview requires -x / --execute");
    run.doc = read_document(args->query);
    if (!args->tet.empty()) run.tet_path = args->tet;
    run.execute = args->execute;
    run.preview = args->preview;
    if (!args->device.empty()) run.device = tet::normalize_device(args->device);
    run.spill_allow = args->spill_allow;
    rc = execute_query_run(run);
  });
}

}  // namespace tessera::cli
