// `tessera tet …`: the `.tet` command group.
#include "commands.hpp"

namespace tessera::cli {

void register_tet(CLI::App& app, int& rc) {
  CLI::App* tet = app.add_subcommand(
      "tet", "Tetration .tet files: info, verify, repair, cat, synth, convert, export, query, qhist");
  tet->require_subcommand(1);
  register_tet_info(*tet, rc);
  register_tet_verify_repair(*tet, rc);
  register_tet_cat(*tet, rc);
  register_tet_synth(*tet, rc);
  register_tet_convert(*tet, rc);
  register_tet_export(*tet, rc);
  register_tet_query(*tet, rc);
  register_tet_qhist(*tet, rc);
}

}  // namespace tessera::cli
