// Selections of a `.tet` dataset (spec tet.md §3.2–3.3): the JSON `selection` array of a query
// document (or of `tessera tet cat --selection`), its document-level checks, and its resolution
// against a dataset at plan time (labels → indices, defaults, bounds) into a strided Box.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/tet/footer.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

struct SelectionEntry {
  std::optional<std::uint64_t> start;
  std::optional<std::uint64_t> stop;
  std::optional<std::uint64_t> step;
  std::optional<std::string> start_label;
  std::optional<std::string> stop_label;
};

// Parses and checks a `selection` array (≤ 8 entries; keys start/stop/step/start_label/
// stop_label; step ≥ 1; not both a number and a label; start < stop when both are numbers).
// Throws UsageError with the spec's texts (without the `validation: ` prefix).
std::vector<SelectionEntry> parse_selection(const nlohmann::json& selection);
// The same from JSON text (e.g. a command-line argument).
std::vector<SelectionEntry> parse_selection_text(const std::string& text);

// Plan-time resolution: exactly ndim entries, labels through the footer coords of `metadata`
// (may be null), defaults 0 / shape / 1, and the bounds rules (an over-large stop is an error).
Box resolve_selection(const Dataset& dataset, const DatasetMetadata* metadata,
                      const std::vector<SelectionEntry>& entries);

// Labels from coordinate datasets (tessera's divergence, docs/compat.md Q10): `metadata` with
// `coords` added for each axis whose footer has no labels but whose dimension has a coordinate
// dataset in `file` — a 1-D numeric dataset named like the dimension (the CF rule) and as long as
// the axis — each value's text as convert writes labels (core/number_text.hpp), at any length
// (the footer keeps at most 64). nullopt when nothing is added (no dim_names, or no such dataset).
std::optional<DatasetMetadata> with_coordinate_labels(const TetFile& file, const Dataset& dataset,
                                                      const DatasetMetadata* metadata);

// Whether any entry selects by label (only then are coordinate datasets worth reading).
bool selects_by_label(const std::vector<SelectionEntry>& entries) noexcept;

}  // namespace tessera::tet
