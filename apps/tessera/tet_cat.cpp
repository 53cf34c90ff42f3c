// `tessera tet cat FILE DATASET --out OUT.npy [--selection JSON]` (spec tet.md §6.8), and
// `--png OUT.png`: a quicklook picture of a 2-D slice with a colour bar.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/image/png.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/npy_export.hpp"
#include "tessera/tet/quicklook.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet_query/selection.hpp"

namespace tessera::cli {
namespace {

struct CatArgs {
  std::string file;
  std::string dataset;
  std::string out;
  std::string selection;
  std::string png;
  std::string png_range;  // "LO,HI"
  std::string png_scale = "linear";
  std::string png_colormap = "viridis";
  std::string png_origin = "top";
  bool verify_checksums = false;
};

// "LO,HI" with two finite numbers and LO < HI; the message says what is wrong, or is empty.
std::string png_range_problem(const std::string& text, double* low = nullptr, double* high = nullptr) {
  const std::size_t comma = text.find(',');
  double ends[2] = {0, 0};
  const std::string parts[2] = {text.substr(0, comma), comma == std::string::npos ? "" : text.substr(comma + 1)};
  for (int i = 0; i < 2; ++i) {
    std::size_t used = 0;
    try {
      ends[i] = std::stod(parts[i], &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (comma == std::string::npos || used == 0 || used != parts[i].size() || !std::isfinite(ends[i]))
      return "must be LO,HI with two finite numbers, got '" + text + "'";
  }
  if (!(ends[0] < ends[1])) return "needs LO < HI, got '" + text + "'";
  if (low) *low = ends[0];
  if (high) *high = ends[1];
  return {};
}

// The picture options; each was checked when the command line was parsed.
image::QuicklookOptions quicklook_options(const CatArgs& a) {
  image::QuicklookOptions o;
  o.colormap = image::colormap_from_name(a.png_colormap).value_or(image::Colormap::Viridis);
  o.log_scale = a.png_scale == "log";
  o.origin_top = a.png_origin == "top";
  if (!a.png_range.empty()) {
    double low = 0, high = 0;
    png_range_problem(a.png_range, &low, &high);
    o.low = low;
    o.high = high;
  }
  return o;
}

std::string available_names(const tet::TetFile& file) {
  std::string names;
  for (const auto& ds : file.datasets()) names += (names.empty() ? "" : ", ") + ds.name;
  return names.empty() ? "(none)" : names;
}

void run_cat(const CatArgs& args) {
  const std::optional<image::QuicklookOptions> picture =
      args.png.empty() ? std::nullopt : std::optional(quicklook_options(args));
  // Parse the selection before touching any file so a malformed one fails fast.
  const auto entries =
      args.selection.empty() ? std::vector<tet::SelectionEntry>{} : tet::parse_selection_text(args.selection);
  const tet::TetFile file = tet::TetFile::open(args.file);
  const tet::Dataset* ds = file.find(args.dataset);
  if (!ds)
    throw UsageError("dataset " + tet::quoted_name(args.dataset) + " not found; available: " + available_names(file));
  const tet::Box box =
      args.selection.empty() ? ds->full_box() : tet::resolve_selection(*ds, file.metadata_of(ds->name), entries);
  const bool to_stdout = args.out == "-";
  if (!args.out.empty()) {
    // `-o -`: the .npy stream goes to standard output, through the sink's device/pipe path (a
    // redirect to a regular file replaces that file atomically, as any output does).
    io::AtomicFileSink sink(to_stdout ? "/dev/stdout" : args.out);
    tet::write_npy(file, *ds, box, sink, {.verify_checksums = args.verify_checksums});
    sink.commit();
  }
  if (picture) {
    const image::Quicklook look =
        tet::render_quicklook(file, *ds, box, *picture, {.verify_checksums = args.verify_checksums});
    io::write_file_atomic(args.png,
                          image::encode_png_rgba(look.picture.width(), look.picture.height(), look.picture.pixels()));
    // With the array on stdout, the picture's line goes to stderr so the stream stays a .npy.
    std::fprintf(to_stdout ? stderr : stdout, "%s: %u x %u pixels, colour bar %s .. %s%s\n", args.png.c_str(),
                 look.picture.width(), look.picture.height(), image::tick_label(look.low).c_str(),
                 image::tick_label(look.high).c_str(),
                 look.missing ? (", " + std::to_string(look.missing) + " missing values transparent").c_str() : "");
  }
}

}  // namespace

void register_tet_cat(CLI::App& tet, int& rc) {
  auto args = std::make_shared<CatArgs>();
  CLI::App* cmd = tet.add_subcommand("cat", "Write a dataset (or a selection of it) as a NumPy .npy file");
  cmd->add_option("FILE", args->file, "Input .tet file")->required();
  cmd->add_option("DATASET", args->dataset, "Dataset name")->required();
  cmd->add_option("--out,-o", args->out, "Output .npy path (written atomically), or - for standard output");
  cmd->add_option("--selection", args->selection,
                  "JSON selection array, e.g. '[{\"start\":1,\"stop\":4},{\"step\":2}]'");
  cmd->add_flag("--verify-checksums", args->verify_checksums,
                "Compare every chunk read with the CRC-32C the file records (files without them read as before)");
  cmd->add_option("--png", args->png,
                  "Also (or instead) draw the selection, which must keep two axes, as a PNG with a colour bar");
  cmd->add_option("--png-range", args->png_range, "LO,HI: the colour bar's ends (default: the values' min and max)")
      ->check(CLI::Validator([](std::string& text) { return png_range_problem(text); }, "LO,HI"));
  cmd->add_option("--png-scale", args->png_scale, "linear | log (default linear)")
      ->check(CLI::IsMember({"linear", "log"}));
  cmd->add_option("--png-colormap", args->png_colormap, "viridis | gray | rdbu (default viridis)")
      ->check(CLI::IsMember({"viridis", "gray", "grey", "rdbu"}));
  cmd->add_option("--png-origin", args->png_origin, "top (row 0 at the top, default) | bottom")
      ->check(CLI::IsMember({"top", "bottom"}));
  cmd->callback([args, &rc] {
    // A usage error (exit 2) like any missing required option, raised before a file is opened.
    if (args->out.empty() && args->png.empty()) throw CLI::RequiredError("--out OUT.npy, --png OUT.png or both");
    run_cat(*args);
    rc = 0;
  });
}

}  // namespace tessera::cli
