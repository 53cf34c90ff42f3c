// `tessera tet cat FILE DATASET --out OUT.npy [--selection JSON]` (spec tet.md §6.8).
#include <string>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/npy_export.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/selection.hpp"

namespace tessera::cli {
namespace {

struct CatArgs {
  std::string file;
  std::string dataset;
  std::string out;
  std::string selection;
};

std::string available_names(const tet::TetFile& file) {
  std::string names;
  for (const auto& ds : file.datasets()) names += (names.empty() ? "" : ", ") + ds.name;
  return names.empty() ? "(none)" : names;
}

void run_cat(const CatArgs& args) {
  // Parse the selection before touching any file so a malformed one fails fast.
  const auto entries = args.selection.empty() ? std::vector<tet::SelectionEntry>{}
                                              : tet::parse_selection_text(args.selection);
  const tet::TetFile file = tet::TetFile::open(args.file);
  const tet::Dataset* ds = file.find(args.dataset);
  if (!ds) throw UsageError("dataset " + tet::quoted_name(args.dataset) + " not found; available: " + available_names(file));
  const tet::Box box = args.selection.empty() ? ds->full_box()
                                              : tet::resolve_selection(*ds, file.metadata_of(ds->name), entries);
  io::AtomicFileSink sink(args.out);
  tet::write_npy(file, *ds, box, sink);
  sink.commit();
}

}  // namespace

void register_tet_cat(CLI::App& tet, int& rc) {
  auto args = std::make_shared<CatArgs>();
  CLI::App* cmd = tet.add_subcommand("cat", "Write a dataset (or a selection of it) as a NumPy .npy file");
  cmd->add_option("FILE", args->file, "Input .tet file")->required();
  cmd->add_option("DATASET", args->dataset, "Dataset name")->required();
  cmd->add_option("--out,-o", args->out, "Output .npy path (written atomically)")->required();
  cmd->add_option("--selection", args->selection,
                  "JSON selection array, e.g. '[{\"start\":1,\"stop\":4},{\"step\":2}]'");
  cmd->callback([args, &rc] {
    run_cat(*args);
    rc = 0;
  });
}

}  // namespace tessera::cli
