// What `tessera cells info` and `tessera cells verify` report (spec deltacells.md §9.2, §9.3,
// §9.8), as library calls that return text or report through callbacks, so the CLI only prints.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cells/dataset.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {

// Python's repr of a JSON value (§9.8): dicts, lists, True/False/None, floats as repr.
std::string python_repr(const codec::json::Json& value);
// Python's repr of a list of strings (`['a', 'b']`), for messages naming columns.
std::string python_list_repr(const std::vector<std::string>& items);
// Python's format(v, ".{decimals}f"): correctly rounded from the binary value, ties to even.
std::string format_fixed(double v, int decimals);

struct InfoOptions {
  std::string display_path;              // shown after `local:` (absolute, normalized)
  std::optional<std::string> cache_dir;  // obs cache root override
};
// The lines of §9.2, each ending in `\n`. Reads obs/schema.json when the dataset has obs.
std::string render_info(Dataset& dataset, const InfoOptions& options);
// The same facts as one JSON object (json.dumps(indent=2) layout): path, format, version, counts,
// the per-tile arrays of the manifest, layout, gene files, obs (null without) and metadata.
std::string render_info_json(Dataset& dataset, const InfoOptions& options);

struct VerifyOptions {
  unsigned threads = 1;                              // decode threads per tile (0 counts as 1)
  std::function<void(const std::string&)> progress;  // stdout lines
  std::function<void(const std::string&)> warning;   // stderr lines, without "warning: "
};
struct VerifyResult {
  std::uint64_t tiles = 0;
  std::uint64_t cells = 0;
  bool obs_verified = false;
  std::uint64_t obs_shards = 0;
};

// An obs failure found by verify_dataset (§6.10); the CLI prints it as `obs: <message>`.
class ObsVerifyError : public FormatError {
 public:
  using FormatError::FormatError;
};
// Fetches, checks (CRC, D1–D4) and decodes every tile in order, then checks gene_order.npy,
// var_names.txt and var.parquet (P8) when flagged, and the obs sidecar (§6.10; failures as
// ObsVerifyError). Throws the first error: TileCountMismatch (dataset.hpp) for D3,
// which the CLI reports as `tile <i>: nonzero count differs from the manifest`. In a build
// without Parquet support, a dataset with a var table or an obs sidecar cannot be verified
// whole: FeatureUnavailable (core/feature.hpp) once the tiles have been checked.
VerifyResult verify_dataset(Dataset& dataset, const VerifyOptions& options);

}  // namespace tessera::cells
