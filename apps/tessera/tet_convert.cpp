// `tessera tet convert INPUT OUTPUT.tet [--jobs N] [--keep-fill]` (spec tet.md §6.6): HDF5, NetCDF or Zarr v3 →
// `.tet`. The report goes to stdout after an empty line; a progress bar goes to stderr, and only
// when stderr is a terminal, so redirected output stays exactly the report.
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "tessera/interop/tet_convert.hpp"

namespace tessera::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  unsigned jobs = 0;
  bool keep_fill = false;
};

// One carriage-return-refreshed line: `convert [#####.....]  40/144 chunks  primary/f32`.
void draw_progress(const interop::ConvertProgress& p) {
  constexpr int kWidth = 30;
  const int filled = p.chunks_total == 0 ? kWidth : static_cast<int>(kWidth * p.chunks_done / p.chunks_total);
  const std::string bar =
      std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(kWidth - filled), '.');
  write_stream(stderr,
               fmt::format("\r\033[Kconvert [{}] {}/{} chunks  {}", bar, p.chunks_done, p.chunks_total, p.dataset));
}

}  // namespace

void register_tet_convert(CLI::App& tet, int& rc) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = tet.add_subcommand("convert", "Convert HDF5, NetCDF or a Zarr v3 store to a .tet file");
  cmd->add_option("INPUT", args->input, "Input: .h5/.hdf5/.hdf/.he2/.he5, .nc/.nc4/…, or a Zarr v3 directory")
      ->required();
  cmd->add_option("OUTPUT", args->output, "Output .tet file (written atomically)")->required();
  cmd->add_option("--jobs,-j", args->jobs, "Parallel tile readers (0 = available parallelism, at most 64)")
      ->check(integer_at_least(0));
  cmd->add_flag(
      "--keep-fill", args->keep_fill,
      "Keep float values equal to _FillValue / missing_value (default: they become NaN, as xarray reads them)");
  cmd->callback([args, &rc] {
    interop::ConvertOptions options;
    options.jobs = args->jobs;
    options.keep_fill = args->keep_fill;
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    if (tty) options.progress = draw_progress;
    interop::ConvertReport report;
    try {
      report = interop::convert_to_tet(args->input, args->output, options);
    } catch (...) {
      if (tty) write_stream(stderr, "\r\033[K");
      throw;
    }
    if (tty) write_stream(stderr, "\r\033[K");
    write_stream(stdout, "\n" + interop::report_json(report) + "\n");
    rc = 0;
  });
}

}  // namespace tessera::cli
