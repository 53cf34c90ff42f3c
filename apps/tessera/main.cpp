// tessera CLI entry point. Exit codes: 0 success, 1 runtime error or failed verification,
// 2 usage error (rejected before any data is touched).
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/temporaries.hpp"
#include "tessera/version.hpp"

namespace {

constexpr int kUsageExit = 2;

// With $TESSERA_ERROR_KIND set (the Python package sets it when it runs the CLI), an
// `error-kind: <class>` line precedes the message, so the caller can raise the matching
// exception type instead of guessing it from the text.
void print_error_kind(const tessera::Error& e) {
  if (std::getenv("TESSERA_ERROR_KIND") == nullptr) return;
  const char* kind = dynamic_cast<const tessera::FormatError*>(&e)        ? "FormatError"
                     : dynamic_cast<const tessera::IoError*>(&e)          ? "IoError"
                     : dynamic_cast<const tessera::UsageError*>(&e)       ? "UsageError"
                     : dynamic_cast<const tessera::LimitError*>(&e)       ? "LimitError"
                     : dynamic_cast<const tessera::UnsupportedError*>(&e) ? "UnsupportedError"
                                                                          : "Error";
  std::cerr << "error-kind: " << kind << "\n";
}

// The message of a format or limit error, followed by ` (in <file>)` when the message does not
// name the file itself. Format errors keep the spec's exact texts at the start of the line (tet.md's
// conformance cases compare them); the file comes after, so a command given several files, or a
// script that logs only stderr, still says which one is damaged.
std::string with_file_named(const tessera::Error& e) {
  std::string message = e.what();
  // Only damaged or oversized input: usage and unsupported-feature messages are about the
  // command line, and several are fixed texts of the specs.
  const bool about_the_file = dynamic_cast<const tessera::FormatError*>(&e) != nullptr ||
                              dynamic_cast<const tessera::LimitError*>(&e) != nullptr;
  if (!about_the_file || e.path().empty()) return message;
  const std::string file = tessera::printable_text(e.path());
  if (message.find(file) != std::string::npos) return message;
  return message + " (in " + file + ")";
}

// CLI11 answers a mistyped command (`tessera tet frobnicate`) with "A subcommand is required";
// this names the word it did not know and the commands there are instead.
std::optional<std::string> unknown_command(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* at = &app;
  std::string path = "tessera";
  for (const auto& arg : args) {
    if (arg.empty() || arg[0] == '-') return std::nullopt;  // options are CLI11's to judge
    const auto subcommands = at->get_subcommands([](CLI::App*) { return true; });
    if (subcommands.empty()) return std::nullopt;  // a command's own positionals
    CLI::App* next = nullptr;
    for (CLI::App* sub : subcommands)
      if (sub->check_name(arg)) next = sub;
    if (next == nullptr) {
      std::string names;
      for (CLI::App* sub : subcommands) names += (names.empty() ? "" : ", ") + sub->get_name();
      return path + ": unknown command '" + tessera::printable_text(arg) + "' (commands: " + names + ")";
    }
    at = next;
    path += " " + next->get_name();
  }
  return std::nullopt;
}

// With $TESSERA_EXIT_WITH_PARENT=PID (the Python package sets it to its own pid), the CLI is
// killed when the process that started it dies: a Dask worker killed mid-task must not leave its
// build running beside the retry the scheduler starts elsewhere.
void exit_with_parent() {
  const char* text = std::getenv("TESSERA_EXIT_WITH_PARENT");
  if (text == nullptr || *text == '\0') return;
  const long parent = std::strtol(text, nullptr, 10);
  if (parent <= 0) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl took effect: then this process was already re-parented.
  if (::getppid() != static_cast<pid_t>(parent)) std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  exit_with_parent();
  CLI::App app{"tessera: read, write, verify and query .tet, deltacells and Zarr v3 / zagg-ragged data", "tessera"};
  app.set_version_flag("--version", std::string("tessera ") + tessera::kVersion);
  app.require_subcommand(1);
  // An interrupted write leaves no temporary file behind (docs/reliability.md).
  tessera::io::remove_temporaries_on_termination_signals();
  int rc = 0;
  tessera::cli::register_tet(app, rc);
  tessera::cli::register_ragged(app, rc);
  tessera::cli::register_cells(app, rc);
  tessera::cli::register_remote(app, rc);
  tessera::cli::register_detect(app, rc);
  tessera::cli::link_docs_pages(app);
  try {
    // CLI11 wants the arguments in reverse order when given as a vector.
    std::vector<std::string> args(argv + 1, argv + argc);
    args = tessera::cli::route_detected_command(args);
    if (const auto unknown = unknown_command(app, args)) {
      std::cerr << *unknown << "\nRun with --help for more information.\n";
      return kUsageExit;
    }
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsageExit;
  } catch (const tessera::IoError& e) {
    // The OS error alone ("No such file or directory") does not say which file; format errors
    // keep their exact spec texts, which already name what is wrong.
    std::fflush(stdout);
    print_error_kind(e);
    std::cerr << "error: " << e.describe() << "\n";
    return 1;
  } catch (const tessera::Error& e) {
    std::fflush(stdout);
    print_error_kind(e);
    std::cerr << "error: " << with_file_named(e) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes from files are checked before they size an allocation (docs/reliability.md); what
    // still runs out of memory is reported as the limit it is, never as a bare bad_alloc.
    const tessera::LimitError e(tessera::kOutOfMemoryText);
    std::fflush(stdout);
    print_error_kind(e);
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return rc;
}
