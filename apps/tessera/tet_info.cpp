// `tessera tet info PATH` (spec tet.md §6.2): opens the file with every rule enforced, then prints
// the JSON, quiet or text rendering of the library's info view.
#include <memory>
#include <string>

#include "commands.hpp"
#include "tessera/tet/info.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::cli {
namespace {

struct InfoArgs {
  std::string path;
  bool json = false;
  bool quiet = false;
  bool all = false;
  bool layout = false;
  bool execution = false;
  bool datasets = false;
  bool chunks = false;
  bool history = false;
  bool metadata = false;
  std::size_t limit = tet::kDefaultInfoChunkLimit;
  std::string dataset;
  std::string grep;
};

}  // namespace

void add_tet_info_command(CLI::App& cmd, int& rc) {
  auto a = std::make_shared<InfoArgs>();
  cmd.add_option("PATH", a->path, ".tet file")->required();
  CLI::Option* json = cmd.add_flag("--json", a->json, "Pretty JSON with keys sorted at every level");
  cmd.add_flag("-q,--quiet", a->quiet, "One summary line")->excludes(json);
  cmd.add_flag("--all", a->all, "Every text section");
  cmd.add_flag("--layout", a->layout, "Superblock fields");
  cmd.add_flag("--execution", a->execution, "File execution settings (memory budget)");
  cmd.add_flag("--datasets", a->datasets, "Dataset table (default when no section flag is given)");
  cmd.add_flag("--chunks", a->chunks, "Chunk index table");
  cmd.add_flag("--history", a->history, "History rows of the footer");
  cmd.add_flag("--metadata", a->metadata, "List coordinate labels under each dataset");
  cmd.add_option("-n,--limit", a->limit, "Chunk table rows (default 32, 0 = all)")->check(integer_at_least(0));
  CLI::Option* dataset = cmd.add_option("--dataset", a->dataset, "Keep datasets whose name contains SUBSTR");
  CLI::Option* grep = cmd.add_option("--grep", a->grep, "Keep datasets whose name, dtype or metadata contains SUBSTR");

  cmd.callback([a, &rc, dataset, grep] {
    const tet::TetFile file = tet::TetFile::open(a->path);
    tet::InfoFilter filter;
    if (dataset->count() > 0) filter.dataset = a->dataset;
    if (grep->count() > 0) filter.grep = a->grep;
    const tet::InfoView view = tet::make_info_view(file, filter);
    if (a->json) {
      write_stream(stdout, tet::render_info_json(view));
    } else if (a->quiet) {
      write_stream(stdout, tet::render_info_quiet(view));
    } else {
      tet::InfoTextOptions options;
      options.sections =
          tet::InfoSections::from_flags(a->all, a->layout, a->execution, a->datasets, a->chunks, a->history);
      options.chunk_limit = a->limit;
      options.verbose_metadata = a->metadata;
      write_stream(stdout, tet::render_info_text(view, options));
    }
    rc = 0;
  });
}

void register_tet_info(CLI::App& tet, int& rc) {
  CLI::App* cmd = tet.add_subcommand("info", "Catalog summary of a .tet file");
  add_tet_info_command(*cmd, rc);
}

}  // namespace tessera::cli
