// Writers of the morton-hive structures (spec §4.1, §4.3–§4.6): manifest, box, coverage sidecar,
// stamp, root coverage MOC.
#include "tessera/ragged/hive_writer.hpp"

#include <algorithm>
#include <set>

#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/civil_date.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged::hive {

using codec::json::Json;

namespace {

// Manifests and root MOCs are JSON with one-space indentation, as zagg writes them.
constexpr codec::json::DumpOptions kIndent1{1, false, codec::json::FloatStyle::Python, true};

void put_text(io::Store& store, const std::string& key, const std::string& text) {
  store.put(key, codec::as_bytes(text));
}

std::string text_of(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

std::string utc_now_iso() { return utc_text(output_time(), "%Y-%m-%dT%H:%M:%S+00:00"); }

Json manifest_document(const ManifestSpec& s, const std::string& generated_at) {
  Json m = Json::object();
  m["spec"] = "morton-hive/1";
  m["dataset"] = Json{{"short_name", s.short_name}, {"version", s.version}};
  m["semantic_hash"] = s.semantic_hash;
  m["cell_order"] = s.cell_order;
  m["shard_order"] = s.shard_order;
  m["split_schedule"] = std::vector<int>(static_cast<std::size_t>(s.shard_order), 1);
  m["path_grouping"] = 1;
  m["pyramid"] = Json{{"spec", "zagg-pyramid/1"}, {"overview", {{"orders", Json::array()}}}};
  m["generated_at"] = generated_at;
  return m;
}

void write_or_check_manifest(io::Store& store, const ManifestSpec& spec) {
  if (check_manifest(store, spec)) return;
  put_text(store, std::string(kManifestKey), codec::json::dump(manifest_document(spec, utc_now_iso()), kIndent1));
}

bool check_manifest(const io::Store& store, const ManifestSpec& spec) {
  const auto existing = store.get(std::string(kManifestKey));
  if (!existing) return false;
  const Json mine = manifest_document(spec, utc_now_iso());
  const Manifest theirs = Manifest::parse(text_of(*existing));
  const Json& doc = theirs.document;
  // The structural keys first, so a geometry change is named as such rather than as a hash.
  for (const char* key : {"spec", "cell_order", "shard_order", "split_schedule", "path_grouping", "temporal", "dataset",
                          "semantic_hash"}) {
    const bool here = mine.contains(key), there = doc.contains(key);
    if (std::string_view(key) == "semantic_hash" && !(here && there)) continue;
    // path_grouping absent means 1.
    if (std::string_view(key) == "path_grouping" && theirs.path_grouping == 1) continue;
    if (here != there || (here && mine[key] != doc[key]))
      throw UsageError(store.name() + ": morton_hive.json: the existing store's '" + key + "' (" +
                       (there ? doc[key].dump() : "absent") + ") differs from this build's (" +
                       (here ? mine[key].dump() : "absent") +
                       "); leaves can only be added with the same frozen parameters");
  }
  return true;
}

std::vector<std::optional<std::string>> morton_box(std::uint64_t shard, int depth,
                                                   std::span<const std::uint64_t> ranks) {
  std::vector<std::optional<std::string>> box(4);
  // (1) The canonical MOC: unique ranks, then four complete siblings merge into their parent,
  // level by level; each member is (rank at its level, depth below the shard).
  std::vector<std::pair<std::uint64_t, int>> members;
  std::vector<std::uint64_t> level(ranks.begin(), ranks.end());
  std::sort(level.begin(), level.end());
  level.erase(std::unique(level.begin(), level.end()), level.end());
  if (level.empty()) {
    box[0] = morton::to_decimal(shard);
    return box;
  }
  for (int d = depth; d > 0; --d) {
    std::vector<std::uint64_t> parents;
    for (std::size_t i = 0; i < level.size();) {
      const std::uint64_t parent = level[i] >> 2;
      std::size_t j = i;
      while (j < level.size() && (level[j] >> 2) == parent) ++j;
      if (j - i == 4) parents.push_back(parent);
      else
        for (std::size_t k = i; k < j; ++k) members.emplace_back(level[k], d);
      i = j;
    }
    level = std::move(parents);
  }
  for (const std::uint64_t r : level) members.emplace_back(r, 0);
  // Common ancestors are taken in rank space (a member at depth d has the digit path `rank`; its
  // ancestor at depth k ≤ d is rank >> 2(d − k)), and only the ≤ 4 results become words.
  using Member = std::pair<std::uint64_t, int>;
  const auto ancestor = [](std::span<const Member> ms) {
    int k = ms.front().second;
    for (const Member& m : ms) k = std::min(k, m.second);
    const auto prefix = [](const Member& m, int at) { return m.first >> (2 * (m.second - at)); };
    for (const Member& m : ms)
      while (k > 0 && prefix(m, k) != prefix(ms.front(), k)) --k;
    return Member{prefix(ms.front(), k), k};
  };
  std::vector<std::uint64_t> out;
  if (members.size() == 1) {
    out.push_back(morton::descendant(shard, members[0].second, members[0].first));  // (2)
  } else {
    // (3) Group by the ancestor one order below the common ancestor, one box slot per group.
    const int k = ancestor(members).second + 1;
    std::map<std::uint64_t, std::vector<Member>> groups;
    for (const Member& m : members) groups[m.first >> (2 * (m.second - k))].push_back(m);
    for (const auto& [g, ms] : groups) {
      const Member a = ms.size() == 1 ? ms.front() : ancestor(ms);
      out.push_back(morton::descendant(shard, a.second, a.first));
    }
  }
  std::sort(out.begin(), out.end());
  for (std::size_t i = 0; i < out.size() && i < 4; ++i) box[i] = morton::to_decimal(out[i]);
  return box;
}

CoverageSidecar encode_sidecar(std::span<const std::uint64_t> ranks, int depth) {
  const std::vector<std::byte> raw = encode_bitmap(ranks, depth);
  return {codec::zstd_compress(raw, {3, true, false}), raw.size()};
}

Json stamp_document(const StampSpec& s) {
  Json box = Json::array();
  for (const auto& slot : s.box) box.push_back(slot ? Json(*slot) : Json(nullptr));
  Json coverage = Json::object();
  coverage["spec"] = "morton-moc/1";
  coverage["box"] = std::move(box);
  coverage["cell_order"] = s.cell_order;
  coverage["source"] = "worker";
  if (s.sidecar) {
    coverage["encoding"] = "bitmap";
    coverage["sidecar"] = "coverage.moc";
    coverage["nbytes"] = s.sidecar->object.size();
    coverage["raw_nbytes"] = s.sidecar->raw_nbytes;
  }
  Json stamp = Json::object();
  stamp["spec"] = "morton-hive/1";
  stamp["complete"] = true;
  stamp["cells_with_data"] = s.cells_with_data;
  stamp["granule_count"] = s.granule_count;
  stamp["written_at"] = s.written_at;
  stamp["coverage"] = std::move(coverage);
  return stamp;
}

namespace {

// Ranges of sorted unique same-order shard words: runs of consecutive ranks within a base cell.
Json ranges_of(const std::vector<std::uint64_t>& shards) {
  Json ranges = Json::array();
  for (std::size_t i = 0; i < shards.size();) {
    std::size_t j = i + 1;
    while (j < shards.size() && morton::base_cell_of(shards[j]) == morton::base_cell_of(shards[i]) &&
           morton::nested(shards[j]) == morton::nested(shards[j - 1]) + 1)
      ++j;
    ranges.push_back(Json::array({morton::to_decimal(shards[i]), morton::to_decimal(shards[j - 1])}));
    i = j;
  }
  return ranges;
}

// The merged tier-1 temporal section (spec §4.6); `existing` is a `zagg-coverage-toc/1` section
// or null.
Json merge_temporal(const Json& existing, const std::map<std::uint64_t, std::uint64_t>& incoming,
                    const std::vector<std::string>& fields, const std::string& generated_at) {
  std::map<std::string, std::uint64_t> merged;  // keys sorted as strings
  std::set<std::string> field_union(fields.begin(), fields.end());
  std::optional<Json> digest;
  std::set<std::string> existing_keys;
  if (existing.is_object()) {
    if (const auto s = existing.find("shards"); s != existing.end() && s->is_object())
      for (const auto& [id, word] : s->items()) {
        if (!word.is_string()) continue;
        merged[id] = std::stoull(word.get<std::string>());
        existing_keys.insert(id);
      }
    if (const auto f = existing.find("fields"); f != existing.end() && f->is_array())
      for (const Json& name : *f)
        if (name.is_string()) field_union.insert(name.get<std::string>());
    if (const auto d = existing.find("digest"); d != existing.end()) digest = *d;
  }
  for (const auto& [shard, word] : incoming) {
    const std::string id = morton::to_decimal(shard);
    const auto it = merged.find(id);
    merged[id] = it == merged.end() ? word : toc::join(it->second, word);
  }
  Json section = Json::object();
  section["spec"] = "zagg-coverage-toc/1";
  section["source"] = "dispatcher";
  section["generated_at"] = generated_at;
  section["fields"] = Json(std::vector<std::string>(field_union.begin(), field_union.end()));
  Json shards = Json::object();
  for (const auto& [id, word] : merged) shards[id] = std::to_string(word);
  section["shards"] = std::move(shards);
  // The incoming side carries no digest (tessera writes tier 1 only); the existing digest
  // survives only when its section listed every shard of the merged map.
  const bool covers =
      std::all_of(merged.begin(), merged.end(), [&](const auto& kv) { return existing_keys.count(kv.first) > 0; });
  if (digest && covers) section["digest"] = *digest;
  return section;
}

}  // namespace

void update_root_moc(io::Store& store, int shard_order, std::span<const std::uint64_t> shards,
                     const std::map<std::uint64_t, std::uint64_t>& shard_times,
                     const std::vector<std::string>& temporal_fields, const std::string& generated_at) {
  const std::string key(kRootCoverageKey);
  std::vector<std::uint64_t> all(shards.begin(), shards.end());
  std::optional<Json> existing_doc;
  if (const auto bytes = store.get(key)) {
    const std::string text = text_of(*bytes);
    try {
      if (const auto moc = parse_root_moc(text); moc && moc->order == shard_order) {
        all.insert(all.end(), moc->shards.begin(), moc->shards.end());
        existing_doc = moc->document;
      }
    } catch (const FormatError&) {
      // A malformed existing object is overwritten, like an incompatible one.
    }
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  Json doc = Json::object();
  doc["spec"] = "morton-moc/1";
  doc["encoding"] = "ranges";
  doc["order"] = shard_order;
  doc["source"] = "dispatcher";
  doc["generated_at"] = generated_at;
  doc["ranges"] = ranges_of(all);
  if (existing_doc && existing_doc->contains("time_range")) doc["time_range"] = (*existing_doc)["time_range"];
  const Json* old_temporal =
      existing_doc && existing_doc->contains("temporal") ? &(*existing_doc)["temporal"] : nullptr;
  const bool old_known =
      old_temporal && old_temporal->is_object() && old_temporal->value("spec", "") == "zagg-coverage-toc/1";
  if (old_temporal && (!old_known || temporal_fields.empty())) doc["temporal"] = *old_temporal;  // verbatim
  else if (!temporal_fields.empty())
    doc["temporal"] = merge_temporal(old_temporal ? *old_temporal : Json(), shard_times, temporal_fields, generated_at);
  put_text(store, key, codec::json::dump(doc, kIndent1));
}

}  // namespace tessera::ragged::hive
