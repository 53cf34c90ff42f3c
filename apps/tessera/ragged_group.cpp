// `tessera ragged …`: the zagg-ragged / morton-hive command group (spec zagg-ragged.md §8).
#include "commands.hpp"

namespace tessera::cli {

// ragged_build.cpp (declared here: the build command is registered only by this group).
void register_ragged_build(CLI::App& ragged, int& rc);

void register_ragged(CLI::App& app, int& rc) {
  CLI::App* ragged = app.add_subcommand(
      "ragged",
      "Zarr v3 / zagg-ragged stores and morton-hive trees: info, verify, cell, tensors, hashes, synth, build");
  ragged->require_subcommand(1);
  register_ragged_info(*ragged, rc);
  register_ragged_verify(*ragged, rc);
  register_ragged_cell(*ragged, rc);
  register_ragged_tensors(*ragged, rc);
  register_ragged_hashes(*ragged, rc);
  register_ragged_synth(*ragged, rc);
  register_ragged_build(*ragged, rc);
}

}  // namespace tessera::cli
