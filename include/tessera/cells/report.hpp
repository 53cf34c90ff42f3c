// What `tessera cells info` and `tessera cells verify` report (spec deltacells.md §9.2, §9.3,
// §9.8), as library calls that return text or report through callbacks, so the CLI only prints.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tessera/cells/dataset.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {

// Python's repr of a JSON value (§9.8): dicts, lists, True/False/None, floats as repr.
std::string python_repr(const codec::json::Json& value);
// Python's format(v, ".{decimals}f"): correctly rounded from the binary value, ties to even.
std::string format_fixed(double v, int decimals);

// The obs cache root of §6.9 (cache_dir, $DELTACELLS_CACHE, $XDG_CACHE_HOME/deltacells,
// $HOME/.cache/deltacells), normalized as pathlib prints it.
std::string obs_cache_root(const std::optional<std::string>& cache_dir);
// Python's urllib.parse.quote(name, safe="").
std::string quote_column_name(std::string_view name);

struct InfoOptions {
  std::string display_path;               // shown after `local:` (absolute, normalized)
  std::optional<std::string> cache_dir;   // obs cache root override
};
// The lines of §9.2, each ending in `\n`. Reads obs/schema.json when the dataset has obs.
std::string render_info(Dataset& dataset, const InfoOptions& options);

struct VerifyOptions {
  unsigned threads = 1;  // decode threads per tile (0 counts as 1)
  std::function<void(const std::string&)> progress;  // stdout lines
  std::function<void(const std::string&)> warning;   // stderr lines, without "warning: "
};
struct VerifyResult {
  std::uint64_t tiles = 0;
  std::uint64_t cells = 0;
  bool obs_verified = false;
};
// Fetches, checks (CRC, D1–D4) and decodes every tile in order, then checks gene_order.npy and
// var_names.txt when flagged. Throws the first error: TileCountMismatch (dataset.hpp) for D3,
// which the CLI reports as `tile <i>: nonzero count differs from the manifest`.
VerifyResult verify_dataset(Dataset& dataset, const VerifyOptions& options);

}  // namespace tessera::cells
