// `tessera tet convert INPUT OUTPUT.tet [--jobs N] [--keep-fill] [--codec raw|zstd] [--level L]
// [--chunks [NAME=]C0,C1,…]… [--var NAME]… [--exclude NAME]…` (spec tet.md §6.6): HDF5, NetCDF or
// Zarr v3 → `.tet`. The report goes to stdout after an empty line; a progress bar goes to stderr, and only
// when stderr is a terminal, so redirected output stays exactly the report.
#include <fmt/core.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "remote_output.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/tet_convert.hpp"
#include "tessera/tet/writer.hpp"

namespace tessera::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  unsigned jobs = 0;
  bool keep_fill = false;
  std::string codec = "raw";
  int level = 3;
  std::vector<std::string> chunks, only, exclude;
};

// `--chunks` values into `options`: `C0,C1,…` (every array of that rank) or `NAME=C0,C1,…`.
void parse_chunks(const std::vector<std::string>& specs, interop::ConvertOptions& options) {
  for (const std::string& spec : specs) {
    const auto eq = spec.rfind('=');
    const std::string extents = eq == std::string::npos ? spec : spec.substr(eq + 1);
    std::vector<std::uint64_t> shape;
    for (std::size_t at = 0; at <= extents.size();) {
      const auto comma = std::min(extents.find(',', at), extents.size());
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(extents.data() + at, extents.data() + comma, v);
      if (ec != std::errc() || end != extents.data() + comma || v == 0)
        throw UsageError("--chunks " + spec + ": expected [NAME=]C0,C1,… with every extent a positive integer");
      shape.push_back(v);
      at = comma + 1;
    }
    if (eq == std::string::npos) options.default_chunks = shape;
    else options.chunks[spec.substr(0, eq)] = shape;
  }
}

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
  CLI::App* cmd = tet.add_subcommand("convert", "Convert HDF5, NetCDF, a Zarr v3 store or a .tet file to a .tet file");
  cmd->add_option("INPUT", args->input,
                  "Input: .h5/.hdf5/.hdf/.he2/.he5, .nc/.nc4/…, a Zarr v3 directory, or a .tet file")
      ->required();
  cmd->add_option("OUTPUT", args->output, "Output .tet file (written atomically)")->required();
  cmd->add_option("--jobs,-j", args->jobs, "Parallel tile readers (0 = available parallelism, at most 64)")
      ->check(integer_at_least(0));
  cmd->add_flag(
      "--keep-fill", args->keep_fill,
      "Keep float values equal to _FillValue / missing_value (default: they become NaN, as xarray reads them)");
  cmd->add_option("--codec", args->codec, "Chunk codec of every dataset: raw (default, the reference's bytes) or zstd")
      ->check(CLI::IsMember({"raw", "zstd"}));
  cmd->add_option("--level", args->level, "zstd level with --codec zstd (default 3)")
      ->check(CLI::Range(tet::kMinZstdLevel, tet::kMaxZstdLevel));
  cmd->add_option("--chunks", args->chunks,
                  "Chunk shape C0,C1,… for every array of that rank, or NAME=C0,C1,… for one (repeatable; default: "
                  "the source's chunks)");
  cmd->add_option("--var", args->only, "Convert only this array (repeatable)");
  cmd->add_option("--exclude", args->exclude, "Leave this array out (repeatable)");
  cmd->callback([args, cmd, &rc] {
    interop::ConvertOptions options;
    options.jobs = args->jobs;
    options.keep_fill = args->keep_fill;
    options.codec = args->codec == "zstd" ? tet::Codec::Zstd : tet::Codec::Raw;
    if (cmd->count("--level") > 0 && options.codec != tet::Codec::Zstd)
      throw UsageError("--level applies to --codec zstd only");
    options.level = args->level;
    parse_chunks(args->chunks, options);
    options.only = args->only;
    options.exclude = args->exclude;
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    if (tty) options.progress = draw_progress;
    interop::ConvertReport report;
    try {
      io::OutputTarget target(args->output, io::OutputTarget::Shape::File);
      report = interop::convert_to_tet(args->input, target.local_path(), options);
      if (target.remote()) report.upload = publish_output(target);
      report.output = args->output;  // the report names the output as given, not its staging file
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
