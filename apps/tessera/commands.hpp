// Command registration for the `tessera` CLI. Each command group lives in its own file and
// adds its subcommands to the CLI11 app; a command's callback stores its exit code in `rc`.
// Errors are thrown (tessera::Error) and turned into `error: …` + exit 1 by main.cpp.
#pragma once

#include <CLI/CLI.hpp>

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

// Entry points shared by `tessera tet info` and `tessera info` (and verify).
struct InfoArgs;
struct VerifyArgs;

}  // namespace tessera::cli
