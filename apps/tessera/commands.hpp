// Command registration for the `tessera` CLI. Each command group lives in its own file and
// adds its subcommands to the CLI11 app; a command's callback stores its exit code in `rc`.
// Errors are thrown (tessera::Error) and turned into `error: …` + exit 1 by main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::cli {

// `tessera tet …`
void register_tet(CLI::App& app, int& rc);
// Sub-commands of the tet group, one file each.
void register_tet_info(CLI::App& tet, int& rc);
void register_tet_verify_repair(CLI::App& tet, int& rc);
void register_tet_cat(CLI::App& tet, int& rc);
void register_tet_synth(CLI::App& tet, int& rc);
void register_tet_convert(CLI::App& tet, int& rc);
void register_tet_export(CLI::App& tet, int& rc);
void register_tet_query(CLI::App& tet, int& rc);
void register_tet_qhist(CLI::App& tet, int& rc);
// `tessera ragged …`
void register_ragged(CLI::App& app, int& rc);
void register_ragged_info(CLI::App& ragged, int& rc);
void register_ragged_verify(CLI::App& ragged, int& rc);
void register_ragged_cell(CLI::App& ragged, int& rc);
void register_ragged_tensors(CLI::App& ragged, int& rc);
void register_ragged_hashes(CLI::App& ragged, int& rc);
void register_ragged_synth(CLI::App& ragged, int& rc);
// `tessera cells …`
void register_cells(CLI::App& app, int& rc);
// `tessera remote cleanup URI` (remote_output.cpp).
void register_remote(CLI::App& app, int& rc);
// `tessera info PATH` / `tessera verify PATH`: detect the format and dispatch.
void register_detect(CLI::App& app, int& rc);
// Rewrites `info|verify … PATH …` (the arguments after the program name) into the detected
// format's command (`tet info … PATH …`); other command lines come back unchanged. Throws
// UnsupportedError naming PATH when no format recognizes it.
std::vector<std::string> route_detected_command(const std::vector<std::string>& args);
// Python's glob.glob(pattern, recursive=True) for each pattern, each pattern's matches naturally
// sorted, duplicates dropped keeping the first, then the whole list naturally sorted unless
// `keep_order`. A pattern without matches is a UsageError naming it. (cells_convert_inputs.cpp;
// `cells convert` and `ragged build` take globs.)
std::vector<std::string> resolve_patterns(const std::vector<std::string>& patterns, bool keep_order);
// Ends the --help of `app` and of every command under it with the docs/cli page that documents
// it (tests/python/test_cli_docs.py checks that page against the command's options).
void link_docs_pages(CLI::App& app);

// The `tet info` / `tet verify` commands: add the command's flags and PATH positional to `cmd`
// and set its callback.
void add_tet_info_command(CLI::App& cmd, int& rc);
void add_tet_verify_command(CLI::App& cmd, int& rc);

// An option check for whole numbers: the value must be a decimal integer >= `min`. Its message
// states that rule (CLI11's own NonNegativeNumber prints a 300-digit floating-point range).
inline CLI::Validator integer_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, value);
        if (ec != std::errc() || stop != end || value < min)
          return "must be a whole number >= " + std::to_string(min) + ", got '" + text + "'";
        return {};
      },
      "INT>=" + std::to_string(min));
}

// Writes `text` exactly (no newline added) and flushes, so stdout and stderr interleave in the
// order the command wrote them.
inline void write_stream(std::FILE* stream, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

}  // namespace tessera::cli
