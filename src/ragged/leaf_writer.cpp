// The hive leaf writer (spec §6.1, §6.2): chunk encoding, shard assembly, coverage, stamp, the
// atomic swap of the temporary prefix, and the stats sidecar.
#include "tessera/ragged/leaf_writer.hpp"

#include <unistd.h>

#include <memory>

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "tessera/codec/checksum.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/test_hooks.hpp"
#include "tessera/io/file_lock.hpp"
#include "tessera/io/staging.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_writer.hpp"
#include "tessera/ragged/leaf_meta.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged {

using codec::json::Json;
namespace fs = std::filesystem;

namespace {

enum class Kind : std::uint8_t { Morton, Count, Stat, CellTime, Composition, Payload, Locations, Times };

void check_name(const std::string& name, const char* what) {
  if (name.empty() || !io::is_valid_key(name) || name.find('/') != std::string::npos || name.front() == '.')
    throw UsageError(std::string(what) + " '" + name + "' is not a single store key component");
}

// The parent node of a key ("" at the root) and its last component.
std::string parent_of(const std::string& key) {
  const auto cut = key.rfind('/');
  return cut == std::string::npos ? std::string() : key.substr(0, cut);
}
std::string basename_of(const std::string& key) {
  const auto cut = key.rfind('/');
  return cut == std::string::npos ? key : key.substr(cut + 1);
}

}  // namespace

struct LeafWriter::ArrayEntry {
  Kind kind;
  std::size_t index;  // field or statistic index
  std::string path;   // relative to the leaf
  zarr::ArrayWriter writer;
};

void LeafGeometry::validate() const {
  if (!(0 <= shard_order && shard_order <= chunk_order && chunk_order <= cell_order && cell_order <= morton::kMaxOrder))
    throw UsageError("leaf geometry: orders must satisfy shard <= chunk <= cell <= 29 (got shard " +
                     std::to_string(shard_order) + ", chunk " + std::to_string(chunk_order) + ", cell " +
                     std::to_string(cell_order) + ")");
  if (depth() > 13) throw UsageError("leaf geometry: at most 4^13 cells per leaf (cell order - shard order <= 13)");
  if (cell_order - chunk_order > 10)
    throw UsageError("leaf geometry: at most 4^10 cells per read chunk (cell order - chunk order <= 10)");
}

std::vector<Stat> DenseStats::stats() const {
  if (!enabled) return {};
  std::vector<Stat> out = {Stat::Min, Stat::Max, Stat::Mean};
  if (sigma) out.push_back(Stat::Sigma);
  out.insert(out.end(), {Stat::Variance, Stat::Q25, Stat::Q50, Stat::Q75});
  return out;
}

std::string_view name_of(Stat s) noexcept {
  switch (s) {
    case Stat::Min: return "min";
    case Stat::Max: return "max";
    case Stat::Mean: return "mean";
    case Stat::Sigma: return "sigma";
    case Stat::Variance: return "variance";
    case Stat::Q25: return "q25";
    case Stat::Q50: return "q50";
    case Stat::Q75: return "q75";
  }
  return "?";
}

bool LeafSpec::any_timed() const {
  return std::any_of(fields.begin(), fields.end(), [](const FieldSpec& f) { return f.timed; });
}

void LeafSpec::validate() const {
  geometry.validate();
  if (fields.empty()) throw UsageError("leaf: at least one field is needed");
  std::set<std::string> names = {"morton", "count"};
  const auto claim = [&](const std::string& name, const char* what) {
    check_name(name, what);
    for (const char* reserved : {"ragged", "weights", "times", "located", "temporal", "composition"})
      if (name == reserved) throw UsageError(std::string(what) + " '" + name + "' is a spec-owned name");
    if (!names.insert(name).second)
      throw UsageError(std::string(what) + " '" + name + "' names another array of the leaf");
  };
  for (const FieldSpec& f : fields) {
    claim(f.name, "field");
    if (f.located) claim(f.locations_name(), "locations array");
    if (f.timed) claim(f.times_name(), "times array");
    if (!std::isfinite(f.delta) || f.delta < 1)
      throw UsageError("field '" + f.name + "': delta must be a finite number >= 1");
    if (f.flux && !(f.gain && f.gain->is_object() && f.gain->contains("name") && f.gain->contains("version")))
      throw UsageError("field '" + f.name + "': a flux field needs gain {name, version}");
  }
  for (const Stat s : stats.stats()) claim(stats.prefix + "_" + std::string(name_of(s)), "statistics array");
  if (per_cell_time) claim(*per_cell_time, "per-cell time array");
  if (composition) {
    const CompositionSpec& c = *composition;
    check_name(c.name, "composition array");  // `composition` itself is the spec's name for it
    if (!names.insert(c.name).second)
      throw UsageError("composition array '" + c.name + "' names another array of the leaf");
    if (std::none_of(fields.begin(), fields.end(), [&](const FieldSpec& f) { return f.name == c.of; }))
      throw UsageError("composition array '" + c.name + "': of '" + c.of + "' is not a field of the leaf");
    if (c.surfaces.size() != 5)
      throw UsageError("composition array '" + c.name +
                       "': five surface columns are needed (land, ocean, sea_ice, "
                       "land_ice, inland_water)");
  }
}

std::uint64_t composition_word(std::span<const double, 8> counts, double n) {
  if (!(n > 0)) return 0;
  std::uint64_t word = 0;
  for (std::size_t lane = 0; lane < 8; ++lane) {
    const double c = counts[lane];
    double q = std::nearbyint(255.0 * c / n);  // ties to even under the default rounding mode
    q = std::clamp(q, 0.0, 255.0);
    if (c > 0 && q < 1) q = 1;  // the presence floor: a nonzero lane never quantizes to 0
    word |= static_cast<std::uint64_t>(q) << (8 * lane);
  }
  return word;
}

ChunkData make_chunk(const LeafSpec& spec, std::uint64_t chunk) {
  const std::uint64_t c = spec.geometry.chunk_cells();
  ChunkData d;
  d.chunk = chunk;
  d.count.assign(c, 0);
  d.digests.assign(spec.fields.size(), std::vector<tdigest::StoredDigest>(c));
  d.stats.assign(spec.stats.stats().size(), std::vector<float>(c, std::nanf("")));
  if (spec.per_cell_time) d.cell_times.assign(c, 0);
  if (spec.composition) d.composition.assign(c, 0);
  return d;
}

bool is_leaf_committed(const io::Store& hive, std::uint64_t shard) {
  const std::string key = hive::leaf_path(shard) + "/zarr.json";
  const auto bytes = hive.get(key);
  if (!bytes) return false;
  try {
    const zarr::NodeMeta node = zarr::decode_node(*bytes, key);
    const auto* group = std::get_if<zarr::GroupMeta>(&node);
    if (!group) return false;
    const auto stamp = group->attributes.find("morton_hive_commit");
    return stamp != group->attributes.end() && stamp->is_object() &&
           hive::is_committed(hive::parse_commit_stamp(*stamp, key));
  } catch (const FormatError&) {
    return false;  // debris: replaced like an uncommitted leaf
  }
}

LeafWriter::LeafWriter(io::Store& hive, LeafSpec spec, std::uint64_t shard, bool overwrite)
    : store_(&hive), spec_(std::move(spec)), shard_(shard) {
  spec_.validate();
  const LeafGeometry& g = spec_.geometry;
  const morton::WordInfo info = morton::check(shard, "leaf shard", morton::Source::User);
  if (info.point || info.order != g.shard_order)
    throw UsageError("leaf: shard " + morton::to_decimal(shard) + " is not an area word of order " +
                     std::to_string(g.shard_order));
  first_cell_nested_ = morton::nested(shard) << (2 * g.depth());
  if (g.flat) {
    first_chunk_key_ = morton::nested(shard) << (2 * (g.chunk_order - g.shard_order));
  } else {
    leaf_key_ = hive::leaf_path(shard);
    tmp_key_ = leaf_key_ + ".tmp-" + std::to_string(::getpid());
    if (!overwrite && is_leaf_committed(hive, shard))
      throw UsageError(leaf_key_ + ": a committed leaf already exists (use --overwrite to replace it)");
    // Temporaries of earlier writers of this leaf that were interrupted: their pid is in the name,
    // and only those whose process is gone (or this process's own) are removed, never the staging
    // leaf of a writer still at work.
    const std::string parent = parent_of(leaf_key_), base = basename_of(leaf_key_);
    for (const std::string& name : store_->list_dir(parent).prefixes) {
      const bool temporary = name.rfind(base + ".tmp-", 0) == 0 || name.rfind(base + ".old-", 0) == 0;
      if (!temporary) continue;
      const long pid = std::strtol(name.c_str() + base.size() + 5, nullptr, 10);
      if (pid == ::getpid() || io::writer_is_gone(pid)) store_->erase_prefix(io::join_key(parent, name));
    }
    staging_ = io::staging_store(*store_);
    if (staging_ && g.sharded()) buffer_ = std::make_unique<io::MemoryStore>(store_->name());
  }

  io::Store& target = leaf_store();
  const leaf::CellsAxis axis{g.flat ? 12 * morton::pow4(g.cell_order) : g.cells(), g.chunk_cells(), g.sharded()};
  const std::string group = std::to_string(g.cell_order);
  const auto add = [&](Kind kind, std::size_t index, const std::string& name, zarr::ArrayMeta meta) {
    const std::string path = group + "/" + name;
    arrays_.push_back(
        ArrayEntry{kind, index, path, zarr::ArrayWriter(target, io::join_key(tmp_key_, path), std::move(meta))});
  };
  add(Kind::Morton, 0, "morton", leaf::dense_array(axis, "uint64", Json(0)));
  add(Kind::Count, 0, "count", leaf::dense_array(axis, "int32", Json(0)));
  const auto stats = spec_.stats.stats();
  for (std::size_t i = 0; i < stats.size(); ++i)
    add(Kind::Stat, i, spec_.stats.prefix + "_" + std::string(name_of(stats[i])),
        leaf::dense_array(axis, "float32", Json("NaN")));
  if (spec_.per_cell_time)
    add(Kind::CellTime, 0, *spec_.per_cell_time,
        leaf::dense_array(axis, "uint64", Json(0), Json{{"temporal", leaf::temporal_declaration("per-cell")}}));
  if (spec_.composition) {
    const CompositionSpec& c = *spec_.composition;
    add(Kind::Composition, 0, c.name,
        leaf::dense_array(axis, "uint64", Json(0),
                          Json{{"composition", leaf::composition_declaration(c.of, c.threshold)}}));
  }
  for (std::size_t f = 0; f < spec_.fields.size(); ++f) {
    const FieldSpec& field = spec_.fields[f];
    leaf::PayloadDecl decl;
    decl.flux = field.flux;
    decl.gain = field.gain;
    if (field.located) decl.locations = field.locations_name();
    if (field.timed) decl.times = field.times_name();
    Json attributes = leaf::payload_attributes(decl);
    for (const auto& [key, value] : field.extra_attributes.items())
      if (!attributes.contains(key)) attributes[key] = value;
    add(Kind::Payload, f, field.name, leaf::ragged_array(axis, std::move(attributes)));
    if (field.located)
      add(Kind::Locations, f, field.locations_name(), leaf::ragged_array(axis, leaf::companion_attributes(true)));
    if (field.timed)
      add(Kind::Times, f, field.times_name(), leaf::ragged_array(axis, leaf::companion_attributes(false)));
  }
  if (g.sharded()) encoded_.assign(arrays_.size(), std::vector<std::optional<std::vector<std::byte>>>(g.chunks()));
  seen_.assign(g.chunks(), false);
  filled_.assign(g.chunks(), false);
  if (g.flat) write_metadata();  // the same documents for every shard: the store is readable from the start
}

LeafWriter::~LeafWriter() {
  if (touched_ && !committed_ && !spec_.geometry.flat) {
    try {
      store_->erase_prefix(tmp_key_);
    } catch (...) {
      // Best effort: a leftover temporary is ignored by readers and removed by the next writer.
    }
  }
}

EncodedChunk LeafWriter::encode(const ChunkData& d) const {
  const LeafGeometry& g = spec_.geometry;
  const std::uint64_t c = g.chunk_cells();
  if (d.chunk >= g.chunks() || d.count.size() != c || d.digests.size() != spec_.fields.size() ||
      d.stats.size() != spec_.stats.stats().size() || (spec_.per_cell_time && d.cell_times.size() != c))
    throw UsageError(where() + ": chunk " + std::to_string(d.chunk) + " does not match the leaf's geometry and arrays");
  for (const auto& cells : d.digests)
    if (cells.size() != c)
      throw UsageError(where() + ": chunk " + std::to_string(d.chunk) + ": one digest per cell is needed");
  for (const auto& values : d.stats)
    if (values.size() != c)
      throw UsageError(where() + ": chunk " + std::to_string(d.chunk) + ": one statistic per cell is needed");

  EncodedChunk out;
  out.chunk = d.chunk;
  out.arrays.resize(arrays_.size());
  const std::uint64_t first = d.chunk * c;
  for (std::uint64_t i = 0; i < c; ++i) {
    if (d.count[i] < 0) throw UsageError(where() + ": negative count");
    if (d.count[i] > 0) {
      out.occupied.push_back(first + i);
      out.observations += static_cast<std::uint64_t>(d.count[i]);
    }
  }
  // A chunk that received no observation writes nothing at all (spec §2.1: `morton` too).
  if (out.occupied.empty()) return out;

  std::vector<std::byte> dense;
  std::vector<std::vector<std::byte>> payloads(c);
  std::vector<std::span<const std::byte>> views(c);
  for (std::size_t a = 0; a < arrays_.size(); ++a) {
    const ArrayEntry& e = arrays_[a];
    switch (e.kind) {
      case Kind::Morton:
        dense.resize(c * 8);
        for (std::uint64_t i = 0; i < c; ++i)
          store_le<std::uint64_t>(dense.data() + 8 * i,
                                  morton::from_nested(first_cell_nested_ + first + i, g.cell_order));
        break;
      case Kind::Count:
        dense.resize(c * 4);
        for (std::uint64_t i = 0; i < c; ++i) store_le<std::int32_t>(dense.data() + 4 * i, d.count[i]);
        break;
      case Kind::Stat:
        dense.resize(c * 4);
        for (std::uint64_t i = 0; i < c; ++i) store_le<float>(dense.data() + 4 * i, d.stats[e.index][i]);
        break;
      case Kind::CellTime:
      case Kind::Composition: {
        const auto& words = e.kind == Kind::CellTime ? d.cell_times : d.composition;
        // A chunk of fill words is not written (zagg omits an all-zero composition chunk).
        if (std::all_of(words.begin(), words.end(), [](std::uint64_t w) { return w == 0; })) continue;
        dense.resize(c * 8);
        for (std::uint64_t i = 0; i < c; ++i) store_le<std::uint64_t>(dense.data() + 8 * i, words[i]);
        break;
      }
      case Kind::Payload:
      case Kind::Locations:
      case Kind::Times:
        for (std::uint64_t i = 0; i < c; ++i) {
          const tdigest::StoredDigest& digest = d.digests[e.index][i];
          payloads[i] = e.kind == Kind::Payload     ? digest.payload()
                        : e.kind == Kind::Locations ? digest.locations_payload()
                                                    : digest.times_payload();
          if (e.kind != Kind::Payload && payloads[i].size() != digest.size() * 8)
            throw UsageError(where() + ": cell " + std::to_string(first + i) + " of field '" +
                             spec_.fields[e.index].name + "': one companion word per centroid is needed");
          if (e.kind == Kind::Times)
            for (const std::uint64_t t : digest.times) out.time_join = out.time_join ? toc::join(out.time_join, t) : t;
          views[i] = payloads[i];
        }
        out.arrays[a] = e.writer.encode_vlen_read_chunk(views);
        continue;
    }
    out.arrays[a] = e.writer.encode_dense_read_chunk(dense);
  }
  return out;
}

void LeafWriter::add(EncodedChunk chunk) {
  if (committed_) throw UsageError(where() + ": add after commit");
  if (chunk.chunk >= seen_.size() || seen_[chunk.chunk])
    throw UsageError(where() + ": chunk " + std::to_string(chunk.chunk) + " added twice");
  seen_[chunk.chunk] = true;
  filled_[chunk.chunk] = !chunk.occupied.empty();
  occupied_.insert(occupied_.end(), chunk.occupied.begin(), chunk.occupied.end());
  observations_ += chunk.observations;
  if (chunk.time_join) time_join_ = time_join_ ? toc::join(time_join_, chunk.time_join) : chunk.time_join;
  if (chunk.occupied.empty()) return;
  if (spec_.geometry.sharded()) {
    for (std::size_t a = 0; a < arrays_.size(); ++a) encoded_[a][chunk.chunk] = std::move(chunk.arrays[a]);
    return;
  }
  // Per-inner-chunk geometry: the chunk's objects are written now and its memory released.
  touched_ = true;
  for (std::size_t a = 0; a < arrays_.size(); ++a)
    arrays_[a].writer.write_encoded_object({first_chunk_key_ + chunk.chunk}, std::span(&chunk.arrays[a], 1));
}

io::Store& LeafWriter::leaf_store() {
  if (buffer_) return *buffer_;
  return staging_ ? static_cast<io::Store&>(*staging_) : *store_;
}

std::string LeafWriter::where() const {
  return spec_.geometry.flat ? "flat store, shard " + morton::to_decimal(shard_) : leaf_key_;
}

LeafReport LeafWriter::commit_flat(LeafReport& report) {
  // Objects of this shard's chunks that received nothing this time are stale (an earlier build's).
  const std::optional<std::vector<std::byte>> nothing;
  for (std::uint64_t k = 0; k < filled_.size(); ++k)
    if (!filled_[k])
      for (ArrayEntry& a : arrays_) a.writer.write_encoded_object({first_chunk_key_ + k}, std::span(&nothing, 1));
  committed_ = true;
  report.written = !occupied_.empty();
  return report;
}

void LeafWriter::write_metadata() {
  zarr::write_group(leaf_store(), tmp_key_, {});
  const std::optional<geo::Latitude> latitude =
      spec_.zagg_identical_metadata ? std::nullopt : std::optional<geo::Latitude>(spec_.latitude);
  zarr::write_group(leaf_store(), io::join_key(tmp_key_, std::to_string(spec_.geometry.cell_order)),
                    {leaf::dggs_attributes(spec_.geometry.cell_order, latitude)});
  for (ArrayEntry& a : arrays_) a.writer.write_metadata();
}

void LeafWriter::swap_into_place() { io::replace_prefix(*store_, tmp_key_, leaf_key_); }

LeafReport LeafWriter::commit(const std::string& writer) {
  if (committed_) throw UsageError(where() + ": committed twice");
  LeafReport report;
  report.leaf_key = leaf_key_;
  report.shard = shard_;
  std::sort(occupied_.begin(), occupied_.end());
  report.cells_with_data = occupied_.size();
  report.observations = observations_;
  report.time_join = time_join_;
  const LeafGeometry& g = spec_.geometry;
  if (g.flat) return commit_flat(report);
  if (occupied_.empty()) return report;  // nothing to write: no prefix at all
  touched_ = true;
  write_metadata();
  if (g.sharded())  // one object per array, assembled and written in parallel
    tbb::parallel_for(std::size_t{0}, arrays_.size(),
                      [&](std::size_t a) { arrays_[a].writer.write_encoded_object({0}, encoded_[a]); });
  encoded_.clear();

  hive::StampSpec stamp;
  stamp.cells_with_data = occupied_.size();
  stamp.granule_count = spec_.granule_count;
  stamp.written_at = hive::utc_now_iso();
  stamp.cell_order = g.cell_order;
  stamp.box = hive::morton_box(shard_, g.depth(), occupied_);
  if (g.depth() >= 1) {
    stamp.sidecar = hive::encode_sidecar(occupied_, g.depth());
    leaf_store().put(tmp_key_ + "/coverage.moc", stamp.sidecar->object);
  }
  report.hashes = hash_tree(leaf_store(), tmp_key_);
  // The stamp is the leaf's last write; the swap publishes the finished leaf.
  zarr::write_group(leaf_store(), tmp_key_, {Json{{"morton_hive_commit", hive::stamp_document(stamp)}}});
  if (buffer_) {
    for (const std::string& key : buffer_->list(tmp_key_)) staging_->put(key, *buffer_->get(key));
    buffer_->erase_prefix(tmp_key_);
  }
  io::sync_staged(*store_, tmp_key_);
  // The sibling stats.json describes the leaf in place. It is removed before the swap and the new
  // one written after, so a kill in between leaves a leaf without a stats record, never one whose
  // record's content hashes are another leaf's.
  const std::string stats_key = io::join_key(parent_of(leaf_key_), "stats.json");
  store_->erase(stats_key);
  test_hooks::point("ragged.leaf_stamped");
  swap_into_place();
  test_hooks::point("ragged.leaf_swapped");
  committed_ = true;
  report.written = true;

  // The stats record (spec §6.1 step 7), fail-open.
  try {
    Json record = Json::object();
    record["schema_version"] = 1;
    record["shard_key"] = shard_;
    record["window"] = nullptr;
    record["run_id"] = nullptr;
    record["semantic_hash"] = spec_.semantic_hash;
    record["zagg_version"] = nullptr;
    record["writer"] = writer;
    record["n_shards"] = 1;
    record["n_granules"] = spec_.granule_count;
    record["granules_sha256"] = nullptr;
    record["content_hashes"] = to_json(report.hashes);
    record["n_obs"] = observations_;
    record["n_obs_read"] = nullptr;
    record["cells_with_data"] = occupied_.size();
    record["timestamp"] = stamp.written_at;
    record["success"] = true;
    record["error"] = nullptr;
    const std::string text = codec::json::dump(record, {-1, false, codec::json::FloatStyle::Python, true});
    store_->put(stats_key, codec::as_bytes(text));
    test_hooks::point("ragged.stats_written");
  } catch (const std::exception& e) {
    report.warnings.push_back(leaf_key_ + ": stats sidecar not written: " + e.what());
  }
  return report;
}

}  // namespace tessera::ragged
