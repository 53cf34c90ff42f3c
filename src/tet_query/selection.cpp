#include "tessera/tet_query/selection.hpp"

#include <algorithm>

#include "tessera/codec/json.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/number_text.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

using nlohmann::json;

std::optional<std::uint64_t> index_field(const json& v, std::size_t i, const char* key) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_unsigned())
    throw UsageError("selection[" + std::to_string(i) + "]." + key + " must be a non-negative integer or null");
  return v.get<std::uint64_t>();
}

std::optional<std::string> label_field(const json& v, std::size_t i, const char* key) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) throw UsageError("selection[" + std::to_string(i) + "]." + key + " must be a string");
  return v.get<std::string>();
}

std::uint64_t resolve_label(const std::vector<std::string>& labels, const std::string& label) {
  for (std::size_t k = 0; k < labels.size(); ++k)
    if (labels[k] == label) return k;  // first occurrence wins
  throw UsageError("unknown coordinate label \"" + label + "\" (axis has " + std::to_string(labels.size()) +
                   " labels)");
}

}  // namespace

std::vector<SelectionEntry> parse_selection(const json& sel) {
  if (!sel.is_array()) throw UsageError("`selection` must be an array");
  if (sel.size() > kMaxRank) throw UsageError("selection has " + std::to_string(sel.size()) + " entries; maximum is 8");
  std::vector<SelectionEntry> out;
  for (std::size_t i = 0; i < sel.size(); ++i) {
    const json& e = sel[i];
    const std::string where = "selection[" + std::to_string(i) + "]";
    if (!e.is_object()) throw UsageError(where + " must be an object");
    SelectionEntry s;
    for (const auto& [k, v] : e.items()) {
      if (k == "start") s.start = index_field(v, i, "start");
      else if (k == "stop") s.stop = index_field(v, i, "stop");
      else if (k == "step") s.step = index_field(v, i, "step");
      else if (k == "start_label") s.start_label = label_field(v, i, "start_label");
      else if (k == "stop_label") s.stop_label = label_field(v, i, "stop_label");
      else throw UsageError(where + ": unknown field `" + k + "`");
    }
    if (s.step && *s.step == 0) throw UsageError(where + ".step must be >= 1, got 0");
    if (s.start && s.start_label) throw UsageError(where + ": use either `start` or `start_label`, not both");
    if (s.stop && s.stop_label) throw UsageError(where + ": use either `stop` or `stop_label`, not both");
    if (s.start && s.stop && *s.start >= *s.stop)
      throw UsageError(where + ": start must be < stop when both set (got " + std::to_string(*s.start) +
                       " >= " + std::to_string(*s.stop) + ")");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SelectionEntry> parse_selection_text(const std::string& text) {
  codec::json::check_nesting(text, "selection");
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& e) {
    throw UsageError(std::string("invalid selection JSON: ") + e.what());
  }
  return parse_selection(parsed);
}

Box resolve_selection(const Dataset& ds, const DatasetMetadata* md, const std::vector<SelectionEntry>& entries) {
  const std::size_t nd = ds.ndim();
  if (entries.size() != nd)
    throw UsageError("selection must specify exactly " + std::to_string(nd) +
                     " axes (one per dataset dimension), got " + std::to_string(entries.size()));
  Box box(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    const SelectionEntry& e = entries[d];
    const std::string axis = "selection[" + std::to_string(d) + "]";
    std::optional<std::uint64_t> start = e.start, stop = e.stop;
    if (e.start_label || e.stop_label) {
      if (!md) throw UsageError("selection coordinate labels require footer metadata for this dataset");
      const std::string key = md->dim_names && md->dim_names->size() > d ? (*md->dim_names)[d] : std::to_string(d);
      auto it = md->coords.find(key);
      if (it == md->coords.end())
        throw UsageError(axis + " coordinate labels require `coords` for this axis in footer metadata");
      if (e.start_label) start = resolve_label(it->second, *e.start_label);
      if (e.stop_label) stop = resolve_label(it->second, *e.stop_label);
    }
    AxisRange& r = box[d];
    r.start = start.value_or(0);
    r.stop = stop.value_or(ds.shape[d]);
    r.step = e.step.value_or(1);
    const std::string extent = std::to_string(ds.shape[d]);
    if (r.start >= ds.shape[d])
      throw UsageError(axis + ".start must be < shape[" + std::to_string(d) + "] (" + extent + "), got " +
                       std::to_string(r.start));
    if (r.stop > ds.shape[d])
      throw UsageError(axis + ".stop must be <= shape[" + std::to_string(d) + "] (" + extent + "), got " +
                       std::to_string(r.stop));
    if (r.start >= r.stop)
      throw UsageError(axis + ": require start < stop (got " + std::to_string(r.start) +
                       " >= " + std::to_string(r.stop) + ")");
  }
  return box;
}

std::optional<DatasetMetadata> with_coordinate_labels(const TetFile& file, const Dataset& ds,
                                                      const DatasetMetadata* md) {
  if (!md || !md->dim_names || md->dim_names->size() != ds.ndim()) return std::nullopt;
  std::optional<DatasetMetadata> out;
  for (std::size_t d = 0; d < ds.ndim(); ++d) {
    const std::string& dim = (*md->dim_names)[d];
    if (md->coords.contains(dim)) continue;
    const Dataset* coordinate = file.find(dim);
    if (!coordinate || coordinate->ndim() != 1 || coordinate->shape[0] != ds.shape[d]) continue;
    std::vector<std::byte> values(coordinate->logical_bytes);
    file.read_box(*coordinate, coordinate->full_box(), values);
    std::vector<std::string> labels;
    labels.reserve(checked_size(ds.shape[d]));
    for (std::size_t at = 0; at < values.size(); at += coordinate->element_size())
      labels.push_back(element_text(coordinate->dtype, values.data() + at));
    if (!out) out = *md;
    out->coords[dim] = std::move(labels);
  }
  return out;
}

bool selects_by_label(const std::vector<SelectionEntry>& entries) noexcept {
  return std::any_of(entries.begin(), entries.end(),
                     [](const SelectionEntry& e) { return e.start_label || e.stop_label; });
}

}  // namespace tessera::tet
