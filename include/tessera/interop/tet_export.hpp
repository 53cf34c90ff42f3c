// `tessera tet export` as a library call (spec tet.md §6.7): a `.tet` file → a Zarr v3 directory
// store with one array per dataset (groups for each `/`-separated name prefix). Interior tiles are
// copied verbatim; clipped edge tiles are decoded, padded to the full chunk shape with the fill
// value and re-encoded (TD-5). `dimension_names` and `fill_value` come from the footer (TD-20).
// Chunk files and array metadata are written before the root `zarr.json`, which comes last, so a
// store with a root `zarr.json` is complete.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::interop {

struct ExportOptions {
  // Threads writing chunk files (0 = all available).
  unsigned threads = 0;
};

struct ExportSummary {
  std::uint64_t datasets = 0;
  std::uint64_t chunks = 0;
  double elapsed_secs = 0.0;
};

// Throws UsageError ``export output `{path}` exists and is not empty`` (checked before the input
// is read), `no datasets in {path}`, FormatError for an input that does not open, and
// UnsupportedError ``dataset `{name}` mixes raw and zstd chunk codecs; re-export with one codec``.
ExportSummary export_tet_to_zarr(const std::string& input, const std::string& output_dir,
                                 const ExportOptions& options = {});

}  // namespace tessera::interop
