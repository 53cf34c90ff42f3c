// Each command's --help names the page of docs/cli/ that documents it, so a user reading --help
// knows where the examples are, and the test suite knows which page to hold to the command's
// options (tests/python/test_cli_docs.py).
#include <string>
#include <string_view>

#include "commands.hpp"

namespace tessera::cli {
namespace {

// The page of one command, by its path below `tessera` ("tet cat", "cells obs localize").
// Commands of a group share its page unless listed; every tet command has its own.
std::string_view docs_page(std::string_view path) {
  struct Entry {
    std::string_view prefix;
    std::string_view page;
  };
  static constexpr Entry kPages[] = {
      {"tet info", "tet-info.md"},
      {"tet verify", "tet-verify-repair.md"},
      {"tet repair", "tet-verify-repair.md"},
      {"tet cat", "tet-cat.md"},
      {"tet synth", "tet-synth.md"},
      {"tet convert", "tet-convert-export.md"},
      {"tet export", "tet-convert-export.md"},
      {"tet query", "tet-query.md"},
      {"tet qhist", "tet-query.md"},
      {"cells", "cells.md"},
      {"ragged", "ragged.md"},
      {"remote", "remote.md"},
  };
  for (const Entry& entry : kPages) {
    if (path == entry.prefix ||
        (path.size() > entry.prefix.size() && path.substr(0, entry.prefix.size()) == entry.prefix &&
         path[entry.prefix.size()] == ' ')) {
      return entry.page;
    }
  }
  return "README.md";  // `tessera` itself, the groups' own help, `info` and `verify`
}

void link(CLI::App& app, const std::string& path) {
  app.footer("Documentation: docs/cli/" + std::string(docs_page(path)));
  for (CLI::App* sub : app.get_subcommands({})) {
    link(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name());
  }
}

}  // namespace

void link_docs_pages(CLI::App& app) { link(app, ""); }

}  // namespace tessera::cli
