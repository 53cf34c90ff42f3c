// The text report of `info` (spec tet.md §6.2): header, then the selected sections. Column
// widths are the reference's; padding counts Unicode code points, so `×` and `…` take one column.
#include <algorithm>
#include <charconv>

#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet/info.hpp"

namespace tessera::tet {
namespace {

constexpr std::string_view kDetailIndent = "       ";  // metadata lines under a table row
constexpr std::size_t kMaxLabelsShown = 12;

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string pad_right(std::string s, std::size_t width) {
  const std::size_t n = code_points(s);
  if (n < width) s.append(width - n, ' ');
  return s;
}

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t n = code_points(s);
  return n < width ? std::string(width - n, ' ') + s : s;
}

// At most `max` bytes, cut on a code point boundary and ending in `…` when shortened (the
// reference measures the cut in bytes).
std::string truncate_field(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  std::size_t end = max > 0 ? max - 1 : 0;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end)) + "\u2026";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string shape_label(const std::vector<std::uint64_t>& shape) {
  return shape.empty() ? std::string("-") : join_coords(shape, "\u00d7");
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

std::string codec_label(std::uint32_t tag) {
  const auto codec = codec_of_tag(tag);
  return codec ? std::string(codec_name(*codec)) : "?";
}

// bps / 100 in the shortest fixed form: 4000 → 40, 1250 → 12.5.
std::string percent_label(std::uint16_t bps) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, bps / 100.0, std::chars_format::fixed);
  return std::string(buf, res.ptr);
}

std::string layout_section(const Superblock& sb) {
  std::string out = "layout:\n";
  out += "  layout_version:    " + std::to_string(sb.layout_version) + "\n";
  out += "  dataset_count:     " + std::to_string(sb.dataset_count) + "\n";
  out += "  flags:             " + std::to_string(sb.flags) + " (history_footer=" + bool_text(sb.has_footer()) + ")\n";
  out += "  chunk_index_offset: " + std::to_string(sb.chunk_index_offset) + "\n";
  out += "  chunk_index_length: " + std::to_string(sb.chunk_index_length) + "\n";
  return out;
}

std::string execution_section(const ChunkIndexHeader& h) {
  std::string out = "execution (file defaults):\n";
  if (h.memory_budget_percent_bps == 0 && h.memory_budget_bytes == 0)
    return out + "  (engine defaults \u2014 25% host RAM when unset in query JSON)\n";
  if (h.memory_budget_percent_bps != 0)
    out += "  memory_budget_percent: " + percent_label(h.memory_budget_percent_bps) + "\n";
  if (h.memory_budget_bytes != 0) out += "  memory_budget_bytes: " + std::to_string(h.memory_budget_bytes) + "\n";
  return out;
}

std::string file_metadata_block(const Metadata& md) {
  if (!md.file || md.file->empty()) return {};
  std::string out = "file metadata:\n";
  if (md.file->tool) out += "  tool: " + *md.file->tool + "\n";
  if (md.file->library_version) out += "  library_version: " + *md.file->library_version + "\n";
  if (md.file->created_at) out += "  created_at: " + *md.file->created_at + "\n";
  return out + "\n";
}

// dim_names, coords (a summary, or the labels with --metadata) and attrs of one dataset.
std::string dataset_metadata_lines(const DatasetMetadata& md, bool verbose) {
  std::string out;
  const std::string indent(kDetailIndent);
  if (md.dim_names) out += indent + "dim_names: " + join(*md.dim_names, ", ") + "\n";
  if (!md.coords.empty()) {
    if (verbose) {
      for (const auto& [axis, labels] : md.coords) {
        if (labels.empty()) {
          out += indent + axis + ": (empty)\n";
          continue;
        }
        const std::size_t shown = std::min(labels.size(), kMaxLabelsShown);
        out += indent + axis + ": " + join({labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(shown)}, ", ");
        if (shown < labels.size()) out += " (+" + std::to_string(labels.size() - shown) + " more)";
        out += "\n";
      }
    } else {
      std::vector<std::string> parts;
      for (const auto& [axis, labels] : md.coords)
        parts.push_back(axis + "(" + std::to_string(labels.size()) + " labels)");
      out += indent + "coords: " + join(parts, ", ") + "\n";
    }
  }
  for (const auto& [key, value] : md.attrs) out += indent + key + ": " + value + "\n";
  return out;
}

std::string datasets_section(const InfoView& v, bool verbose) {
  std::string out = file_metadata_block(v.metadata);
  if (v.datasets.empty()) return out + (v.filter ? "datasets: (no rows match filter)\n" : "datasets: (empty file)\n");
  out += "datasets:\n";
  out += "  " + pad_left("id", 3) + "  " + pad_right("name", 20) + "  " + pad_right("dtype", 5) + "  " +
         pad_right("shape", 16) + "  " + pad_right("chunk_shape", 12) + "  chunks\n";
  std::vector<std::uint64_t> chunk_counts(v.datasets.size(), 0);
  for (const auto& c : v.chunks) ++chunk_counts[c.dataset_id];
  for (std::size_t id = 0; id < v.datasets.size(); ++id) {
    const DatasetRecord& d = v.datasets[id];
    out += "  " + pad_left(std::to_string(id), 3) + "  " + pad_right(truncate_field(d.name, 20), 20) + "  " +
           pad_right(std::string(tag_name(d.dtype_tag)), 5) + "  " + pad_right(shape_label(d.shape), 16) + "  " +
           pad_right(shape_label(d.chunk_shape), 12) + "  " + std::to_string(chunk_counts[id]) + "\n";
    if (auto it = v.metadata.datasets.find(d.name); it != v.metadata.datasets.end())
      out += dataset_metadata_lines(it->second, verbose);
  }
  return out;
}

std::string chunks_section(const InfoView& v, std::size_t limit) {
  if (v.chunks.empty()) return "chunks: (none)\n";
  const std::size_t shown = limit == 0 ? v.chunks.size() : std::min(limit, v.chunks.size());
  std::string out = "chunks:\n";
  if (shown < v.chunks.size())
    out += "  (showing " + std::to_string(shown) + " of " + std::to_string(v.chunks.size()) + "; use -n 0 for all)\n";
  out += "  " + pad_left("#", 4) + "  " + pad_right("dataset", 12) + "  " + pad_right("coords", 8) + "  " +
         pad_left("raw", 10) + "  " + pad_left("stored", 10) + "  " + pad_left("codec", 5) + "  offset\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const ChunkEntry& c = v.chunks[i];
    const DatasetRecord& d = v.datasets[c.dataset_id];  // open() guarantees a valid id
    const std::string coords = d.ndim() == 0 ? "-" : join_coords({c.chunk_index.data(), d.ndim()}, ",");
    out += "  " + pad_left(std::to_string(i), 4) + "  " + pad_right(truncate_field(d.name, 12), 12) + "  " +
           pad_right(coords, 8) + "  " + pad_left(std::to_string(c.raw_byte_len), 10) + "  " +
           pad_left(std::to_string(c.stored_byte_len), 10) + "  " + pad_left(codec_label(c.codec), 5) + "  " +
           std::to_string(c.payload_offset) + "\n";
  }
  return out;
}

std::string history_section(const std::vector<HistoryRow>& history) {
  std::string out = "history:\n";
  if (history.empty()) return out + "  (none)\n";
  const std::string indent(kDetailIndent);
  for (std::size_t i = 0; i < history.size(); ++i) {
    const HistoryRow& row = history[i];
    out += "  " + pad_left(std::to_string(i + 1), 3) + "  " + row.op + "  " + row.source + "  at=" + row.at + "\n";
    if (!row.parents.empty()) out += indent + "parents: " + join(row.parents, ", ") + "\n";
    for (const auto& [k, val] : row.params) out += indent + k + ": " + val + "\n";
  }
  return out;
}

}  // namespace

std::string render_info_text(const InfoView& v, const InfoTextOptions& options) {
  std::string out = "file: " + v.path + "\n";
  out += "size: " + std::to_string(v.file_len) +
         " bytes  layout_version: " + std::to_string(v.superblock.layout_version) +
         "  datasets: " + std::to_string(v.total_datasets) + "  chunks: " + std::to_string(v.total_chunks) + "\n";
  if (v.filter) out += "filter: " + v.filter->summary() + "\n";
  const InfoSections& s = options.sections;
  if (s.layout) out += "\n" + layout_section(v.superblock);
  if (s.execution) out += "\n" + execution_section(v.index_header);
  if (s.datasets) out += "\n" + datasets_section(v, options.verbose_metadata);
  if (s.chunks) out += "\n" + chunks_section(v, options.chunk_limit);
  if (s.history) out += "\n" + history_section(v.history);
  return out;
}

}  // namespace tessera::tet
