// Command registration for the `tessera` CLI. Each command group lives in its own file and
// adds its subcommands to the CLI11 app; a command's callback stores its exit code in `rc`.
// Errors are thrown (tessera::Error) and turned into `error: …` + exit 1 by main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace tessera::cli {

// `tessera tet …`
void register_tet(CLI::App& app, int& rc);
// Sub-commands of the tet group, one file each.
void register_tet_info(CLI::App& tet, int& rc);
void register_tet_verify_repair(CLI::App& tet, int& rc);
void register_tet_cat(CLI::App& tet, int& rc);
void register_tet_synth(CLI::App& tet, int& rc);
// `tessera info PATH` / `tessera verify PATH`: detect the format and dispatch.
void register_detect(CLI::App& app, int& rc);

// Entry points shared by `tessera tet info` and `tessera info` (and verify): add the command's
// flags and PATH positional to `cmd` and set its callback. `check_path`, when set, runs on PATH
// before the command touches it (format detection of `tessera info/verify`).
using PathCheck = std::function<void(const std::string& path)>;
void add_tet_info_command(CLI::App& cmd, int& rc, PathCheck check_path = {});
void add_tet_verify_command(CLI::App& cmd, int& rc, PathCheck check_path = {});

// Writes `text` exactly (no newline added) and flushes, so stdout and stderr interleave in the
// order the command wrote them.
inline void write_stream(std::FILE* stream, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

}  // namespace tessera::cli
