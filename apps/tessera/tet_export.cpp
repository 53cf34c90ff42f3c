// `tessera tet export INPUT.tet OUTPUT_DIR` (spec tet.md §6.7): `.tet` → Zarr v3 directory store,
// with one summary line on stderr.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "remote_output.hpp"
#include "tessera/interop/tet_export.hpp"

namespace tessera::cli {

void register_tet_export(CLI::App& tet, int& rc) {
  struct ExportArgs {
    std::string input;
    std::string output;
  };
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = tet.add_subcommand("export", "Export a .tet file to a Zarr v3 directory store");
  cmd->add_option("INPUT", args->input, "Input .tet file")->required();
  cmd->add_option("OUTPUT_DIR", args->output, "Output directory (missing or empty)")->required();
  cmd->callback([args, &rc] {
    io::OutputTarget target(args->output, io::OutputTarget::Shape::Directory);
    // A remote store is refused up front when it exists (the command never replaces a store).
    target.check_writable(io::CommitPlan{.commit_keys = {"zarr.json"}}, "; export to a new prefix");
    const interop::ExportSummary s = interop::export_tet_to_zarr(args->input, target.local_path());
    publish_output(target, zarr_commit_plan(target.local_path(), false));
    write_stream(stderr, fmt::format("exported {} dataset(s), {} chunk(s) \u2192 {} ({:.2f}s)\n", s.datasets, s.chunks,
                                     args->output, s.elapsed_secs));
    rc = 0;
  });
}

}  // namespace tessera::cli
