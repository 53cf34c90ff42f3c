// `info`: filtering the catalog, and the JSON and quiet renderings (spec tet.md §6.2). The text
// report is in info_text.cpp.
#include "tessera/tet/info.hpp"

#include "tessera/codec/json.hpp"
#include "tessera/core/text.hpp"

namespace tessera::tet {
namespace {

using codec::json::Json;
using codec::json::JsonWriter;

bool grep_matches(std::string_view needle, const DatasetRecord& r, const DatasetMetadata* md) {
  auto hit = [&](std::string_view hay) { return contains_ascii_ci(hay, needle); };
  if (hit(r.name) || hit(tag_name(r.dtype_tag))) return true;
  if (!md) return false;
  if (md->dim_names)
    for (const auto& d : *md->dim_names)
      if (hit(d)) return true;
  for (const auto& [k, v] : md->attrs)
    if (hit(k) || hit(v)) return true;
  for (const auto& [axis, labels] : md->coords) {
    if (hit(axis)) return true;
    for (const auto& l : labels)
      if (hit(l)) return true;
  }
  return false;
}

bool matches(const InfoFilter& f, const DatasetRecord& r, const DatasetMetadata* md) {
  if (f.dataset && !contains_ascii_ci(r.name, *f.dataset)) return false;
  if (f.grep && !grep_matches(*f.grep, r, md)) return false;
  return true;
}

void write_u64_array(JsonWriter& w, std::span<const std::uint64_t> values) {
  w.begin_array();
  for (auto v : values) w.value(v);
  w.end_array();
}

// The footer room owns the JSON form of history rows and metadata (§1.8 key order, empty parts
// omitted); info embeds that form and lets the writer sort the keys.
Json history_json(const std::vector<HistoryRow>& history) {
  return Json::parse(serialize_footer_json(history, Metadata{}, std::nullopt)).at("history");
}

Json metadata_json(const Metadata& metadata) { return Json::parse(serialize_metadata(metadata)); }

}  // namespace

std::string InfoFilter::summary() const {
  std::string out;
  // Appends, not `a + b` temporaries: GCC 12 at -O3 reports bogus overflows for the latter.
  if (dataset) out.append("dataset~").append(*dataset);
  if (grep) out.append(out.empty() ? "" : " ").append("grep~").append(*grep);
  return out;
}

InfoSections InfoSections::from_flags(bool all, bool layout, bool execution, bool datasets, bool chunks, bool history) {
  if (all) return {true, true, true, true, true};
  if (!(layout || execution || datasets || chunks || history)) return {};
  return {layout, execution, datasets, chunks, history};
}

InfoView make_info_view(const TetFile& file, const InfoFilter& filter) {
  const Layout& L = file.layout();
  InfoView v;
  v.path = file.source().name();
  v.file_len = L.file_len;
  v.superblock = L.superblock;
  v.index_header = L.index_header;
  v.total_datasets = L.datasets.size();
  v.total_chunks = L.entries.size();
  if (!filter.empty()) v.filter = filter;
  if (L.footer) {
    v.history = L.footer->history;
    v.metadata.file = L.footer->metadata.file;
    if (filter.empty()) v.metadata.datasets = L.footer->metadata.datasets;
  }

  std::vector<std::optional<std::uint64_t>> new_id(L.datasets.size());
  for (std::uint32_t id = 0; id < L.datasets.size(); ++id) {
    const DatasetRecord& r = L.datasets[id];
    const DatasetMetadata* md = file.metadata_of(r.name);
    if (!matches(filter, r, md)) continue;
    new_id[id] = v.datasets.size();
    v.datasets.push_back(r);
    if (md && !filter.empty()) v.metadata.datasets[r.name] = *md;
  }
  for (const auto& e : L.entries) {
    if (!new_id[e.dataset_id]) continue;
    ChunkEntry c = e;
    c.dataset_id = *new_id[e.dataset_id];
    v.chunks.push_back(c);
  }
  return v;
}

std::string render_info_json(const InfoView& v) {
  // Members are streamed in sorted key order by hand; embedded trees are sorted by the writer.
  std::string out;
  codec::json::DumpOptions options = codec::json::DumpOptions::tet_pretty();
  options.sort_keys = true;
  JsonWriter w(out, options);
  w.begin_object();
  w.key("file_len").value(v.file_len);
  w.key("filter");
  if (v.filter) w.value(v.filter->summary());
  else w.value(nullptr);
  w.key("path").value(v.path);
  w.key("summary").begin_object();

  w.key("chunks").begin_array();
  for (const auto& c : v.chunks) {
    w.begin_object();
    w.key("chunk_index");
    write_u64_array(w, c.chunk_index);
    w.key("codec").value(c.codec);
    w.key("dataset_id").value(c.dataset_id);
    w.key("payload_offset").value(c.payload_offset);
    w.key("raw_byte_len").value(c.raw_byte_len);
    w.key("stored_byte_len").value(c.stored_byte_len);
    w.end_object();
  }
  w.end_array();

  w.key("datasets").begin_array();
  for (const auto& d : v.datasets) {
    w.begin_object();
    w.key("chunk_shape");
    write_u64_array(w, d.chunk_shape);
    w.key("dtype").value(d.dtype_tag);
    w.key("name").value(d.name);
    w.key("shape");
    write_u64_array(w, d.shape);
    w.end_object();
  }
  w.end_array();

  w.key("file_execution").begin_object();
  w.key("memory_budget_bytes").value(v.index_header.memory_budget_bytes);
  w.key("memory_budget_percent_bps").value(v.index_header.memory_budget_percent_bps);
  w.end_object();

  w.key("history").value(history_json(v.history));
  w.key("metadata").value(metadata_json(v.metadata));

  const Superblock& sb = v.superblock;
  w.key("superblock").begin_object();
  w.key("chunk_index_length").value(sb.chunk_index_length);
  w.key("chunk_index_offset").value(sb.chunk_index_offset);
  w.key("dataset_count").value(sb.dataset_count);
  w.key("flags").value(sb.flags);
  w.key("layout_version").value(sb.layout_version);
  w.end_object();

  w.end_object();  // summary
  w.end_object();
  return out;
}

std::string render_info_quiet(const InfoView& v) {
  return "path=" + v.path + " file_len=" + std::to_string(v.file_len) +
         " layout=" + std::to_string(v.superblock.layout_version) + " datasets=" + std::to_string(v.datasets.size()) +
         " chunks=" + std::to_string(v.chunks.size()) + " history=" + std::to_string(v.history.size());
}

}  // namespace tessera::tet
