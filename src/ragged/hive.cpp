// morton-hive store pieces (spec §4.1–§4.3): the manifest, leaf paths and the commit stamp with
// its coverage envelope. The bitmap sidecar and the root MOC live in coverage.cpp.
#include "tessera/ragged/hive.hpp"

#include "tessera/codec/json_fields.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged::hive {

using codec::json::Json;

Manifest Manifest::parse(std::string_view text, std::string_view key) {
  Manifest m;
  m.document = codec::json::parse_strict(text, key);
  const codec::json::Fields f(m.document, key, "manifest");
  m.spec = f.string("spec");
  if (m.spec != "morton-hive/1" && m.spec != "morton-hive/2" && m.spec != "morton-hive/3")
    fail_at<UnsupportedError>(key, "manifest", "unknown spec '" + m.spec + "' (morton-hive/1, /2 and /3 are read)");
  m.cell_order = static_cast<int>(f.integer_in("cell_order", 0, 29));
  m.shard_order = static_cast<int>(f.integer_in("shard_order", 0, 29));
  if (m.shard_order > m.cell_order)
    fail_at<FormatError>(
        key, "manifest",
        "shard_order " + std::to_string(m.shard_order) + " exceeds cell_order " + std::to_string(m.cell_order));
  if (f.has("path_grouping")) {
    const std::int64_t g = f.integer_in("path_grouping", 1, morton::kMaxOrder);
    m.path_grouping = static_cast<int>(g);
  }
  return m;
}

std::optional<Manifest> Manifest::read(const io::Store& store) {
  const auto bytes = store.get(std::string(kManifestKey));
  if (!bytes) return std::nullopt;
  // Errors name the manifest by its place in the store (`<store>/morton_hive.json`), not the bare key.
  return parse(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
               io::join_key(store.name(), kManifestKey));
}

std::string leaf_path(std::string_view shard_decimal, int path_grouping, std::string_view window) {
  // Validates the id (and normalizes nothing: the basename is the id as written).
  const std::uint64_t word = morton::parse_decimal(shard_decimal);
  if (morton::is_point(word))
    throw UsageError("leaf_path: '" + std::string(shard_decimal) + "' is a point id, not a shard");
  if (path_grouping < 1) throw UsageError("leaf_path: path_grouping must be ≥ 1");
  const std::size_t base_len = shard_decimal.front() == '-' ? 2 : 1;
  std::string out(shard_decimal.substr(0, base_len));
  const std::string_view digits = shard_decimal.substr(base_len);
  for (std::size_t i = 0; i < digits.size(); i += static_cast<std::size_t>(path_grouping))
    out.append("/").append(digits.substr(i, static_cast<std::size_t>(path_grouping)));
  out.append("/").append(shard_decimal);
  if (!window.empty()) {
    if (!io::is_valid_key(window) || window.find('/') != std::string_view::npos)
      throw UsageError("leaf_path: window '" + std::string(window) + "' is not one key component");
    out.append("_").append(window);
  }
  return out + ".zarr";
}

std::string leaf_path(std::uint64_t shard_word, int path_grouping, std::string_view window) {
  return leaf_path(morton::to_decimal(shard_word), path_grouping, window);
}

std::optional<std::uint64_t> shard_of_basename(std::string_view basename) {
  constexpr std::string_view kSuffix = ".zarr";
  if (basename.size() <= kSuffix.size() || basename.substr(basename.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  std::string_view id = basename.substr(0, basename.size() - kSuffix.size());
  if (const auto cut = id.find('_'); cut != std::string_view::npos) id = id.substr(0, cut);
  try {
    const std::uint64_t w = morton::parse_decimal(id, morton::Source::User);
    if (morton::is_point(w)) return std::nullopt;
    return w;
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

namespace {

CoverageEnvelope parse_envelope(const Json& value, std::string_view key) {
  CoverageEnvelope env;
  // The gate: anything but a morton-moc/1 object reads as absent (degrade, never an error).
  if (!value.is_object()) return env;
  const auto spec = value.find("spec");
  if (spec == value.end() || !spec->is_string() || spec->get<std::string>() != "morton-moc/1") return env;
  env.present = true;
  const codec::json::Fields f(value, key, "morton_hive_commit.coverage");
  if (const auto enc = value.find("encoding"); enc != value.end() && enc->is_string()) {
    const std::string e = enc->get<std::string>();
    if (e == "bitmap") env.encoding = CoverageEnvelope::Encoding::Bitmap;
    else if (e == "full") env.encoding = CoverageEnvelope::Encoding::Full;
  }
  if (const auto box = value.find("box"); box != value.end() && box->is_array()) {
    for (const Json& slot : *box) {
      if (slot.is_string()) env.box.emplace_back(slot.get<std::string>());
      else env.box.emplace_back(std::nullopt);
    }
  }
  if (const Json* v = f.find("cell_order"); v && codec::json::as_int64(*v)) env.cell_order = *codec::json::as_int64(*v);
  if (f.has("sidecar")) {
    const std::string name = f.string("sidecar");
    if (!io::is_valid_key(name) || name.find('/') != std::string::npos)
      f.fail("sidecar", "'" + name + "' is not a single key component");
    env.sidecar = name;
  }
  if (f.has("nbytes")) env.nbytes = f.unsigned_integer("nbytes");
  if (f.has("raw_nbytes")) env.raw_nbytes = f.unsigned_integer("raw_nbytes");
  if (f.has("source") && value["source"].is_string()) env.source = value["source"].get<std::string>();
  return env;
}

}  // namespace

CommitStamp parse_commit_stamp(const Json& stamp, std::string_view key) {
  CommitStamp s;
  s.document = stamp;
  const codec::json::Fields f(stamp, key, "morton_hive_commit");
  s.spec = f.string("spec");
  if (s.spec != "morton-hive/1" && s.spec != "morton-hive/2" && s.spec != "morton-hive/3")
    fail_at<UnsupportedError>(key, "morton_hive_commit", "unknown spec '" + s.spec + "'");
  s.complete = stamp.contains("complete") && stamp["complete"].is_boolean() && stamp["complete"].get<bool>();
  if (f.has("cells_with_data")) s.cells_with_data = f.unsigned_integer("cells_with_data");
  if (f.has("granule_count")) s.granule_count = f.unsigned_integer("granule_count");
  if (f.has("written_at") && stamp["written_at"].is_string()) s.written_at = stamp["written_at"].get<std::string>();
  if (f.has("window") && stamp["window"].is_string()) s.window = stamp["window"].get<std::string>();
  if (const auto cov = stamp.find("coverage"); cov != stamp.end()) s.coverage = parse_envelope(*cov, key);
  return s;
}

std::optional<CommitStamp> read_commit_stamp(const io::Store& store) {
  const std::string key(zarr::kMetadataName);
  const auto bytes = store.get(key);
  if (!bytes) return std::nullopt;
  const zarr::NodeMeta node = zarr::decode_node(*bytes, key);
  const auto* group = std::get_if<zarr::GroupMeta>(&node);
  if (!group) return std::nullopt;
  const auto it = group->attributes.find("morton_hive_commit");
  if (it == group->attributes.end() || !it->is_object()) return std::nullopt;
  return parse_commit_stamp(*it, key);
}

}  // namespace tessera::ragged::hive
