// Manifest parsing (M1–M12) and serialization (§1.3) of deltacells datasets.
#include "tessera/cells/manifest.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rules.hpp"
#include "tessera/codec/json_fields.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/text.hpp"

namespace tessera::cells {
namespace {

using codec::json::Json;
using detail::fail;

constexpr const char* kFormat = "deltacells-dataset";

// §1.3 order; also the set of known keys.
constexpr const char* kKeyOrder[] = {"n_cells",
                                     "n_genes",
                                     "tile_size",
                                     "tile_cells",
                                     "tile_nnz",
                                     "tile_bytes",
                                     "n_chunks",
                                     "zstd_level",
                                     "has_gene_order",
                                     "has_var_names",
                                     "metadata",
                                     "has_obs",
                                     "obs_tiles_per_file",
                                     "obs_fingerprint",
                                     "obs_shard_bytes",
                                     "obs_shard_sha256",
                                     "has_var_table",
                                     "format",
                                     "version"};
constexpr const char* kRequired[] = {"format",     "version",  "n_cells",    "n_genes",  "tile_size",
                                     "tile_cells", "tile_nnz", "tile_bytes", "n_chunks", "zstd_level"};

// Member access for the manifest's own wording: every type error is rule M5 on "key NAME".
struct Reader {
  const Json& root;
  std::string_view object;

  [[noreturn]] void bad(std::string_view key, const std::string& what, const char* rule) const {
    fail(object, "key " + std::string(key), what, rule);
  }
  const Json* find(std::string_view key) const { return codec::json::member(root, key); }
  std::int64_t integer(std::string_view key, std::int64_t fallback = 0) const {
    const Json* v = find(key);
    if (!v) return fallback;
    const auto i = codec::json::as_int64(*v);
    if (!i) bad(key, "must be an integer that fits in int64, found " + v->dump(), "M5");
    return *i;
  }
  bool boolean(std::string_view key) const {
    const Json* v = find(key);
    if (!v) return false;
    if (!v->is_boolean()) bad(key, "must be true or false, found " + v->dump(), "M5");
    return v->get<bool>();
  }
  std::string string(std::string_view key) const {
    const Json* v = find(key);
    if (!v) return {};
    const std::string* text = codec::json::as_string(*v);
    if (!text) bad(key, "must be a string", "M5");
    return *text;
  }
  std::vector<std::int64_t> int_list(std::string_view key) const {
    const Json* v = find(key);
    if (!v) return {};
    if (!v->is_array()) bad(key, "must be a list of integers", "M5");
    auto list = codec::json::as_int64_list(*v);
    if (!list) {
      const Json* first_bad = nullptr;
      for (const Json& e : *v)
        if (!first_bad && !codec::json::as_int64(e)) first_bad = &e;
      bad(key, "must be a list of integers that fit in int64, found " + first_bad->dump(), "M5");
    }
    return std::move(*list);
  }
  std::vector<std::string> string_list(std::string_view key) const {
    const Json* v = find(key);
    if (!v) return {};
    auto list = codec::json::as_string_list(*v);
    if (!list) bad(key, "must be a list of strings", "M5");
    return std::move(*list);
  }
};

bool is_lower_hex(std::string_view s, std::size_t len) {
  return s.size() == len &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void check_metadata_finite(const Json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    throw UsageError("manifest metadata holds a non-finite number; tessera never writes NaN or Infinity");
  if (v.is_structured())
    for (const Json& e : v) check_metadata_finite(e);
}

}  // namespace

std::vector<std::uint64_t> Manifest::limits() const {
  std::vector<std::uint64_t> out(tile_cells.size());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < tile_cells.size(); ++i) out[i] = sum += tile_cells[i];
  return out;
}

Manifest Manifest::parse(std::string_view text, std::string_view object) {
  Json root;
  try {
    if (!is_valid_utf8(text)) throw FormatError("not valid UTF-8");
    root = codec::json::parse_strict(text, object);
  } catch (const FormatError& e) {
    fail(object, "JSON", e.what(), "M1");
  }
  if (!root.is_object()) fail(object, "JSON", "top level is not an object", "M1");
  const Reader r{root, object};
  const Json* format = r.find("format");
  if (!format || !format->is_string() || format->get<std::string>() != kFormat)
    fail(object, "key format", "not a deltacells manifest (format must be \"deltacells-dataset\")", "M2");
  const Json* version = r.find("version");
  // Positive integers parse as unsigned; booleans and 1.0 are other JSON types.
  const bool version_ok = version && version->is_number_unsigned() &&
                          (version->get<std::uint64_t>() == kVersion1 || version->get<std::uint64_t>() == kVersion2);
  if (!version_ok)
    fail(
        object, "key version",
        "unsupported manifest version " + (version ? version->dump() : std::string("(missing)")) + " (expected 1 or 2)",
        "M3");
  for (const char* key : kRequired)
    if (!r.find(key)) fail(object, "key " + std::string(key), "required key is missing", "M4");

  Manifest m;
  m.version = static_cast<std::uint32_t>(version->get<std::uint64_t>());
  const auto non_negative = [&](std::string_view key, std::int64_t v) {
    if (v < 0) r.bad(key, "must not be negative, found " + std::to_string(v), "M6");
    return static_cast<std::uint64_t>(v);
  };
  const auto list = [&](std::string_view key) {
    std::vector<std::uint64_t> out;
    for (const std::int64_t v : r.int_list(key)) out.push_back(non_negative(key, v));
    return out;
  };
  // M5 for every key first (types), then M6 (ranges) in validate().
  const std::int64_t n_cells = r.integer("n_cells"), n_genes = r.integer("n_genes"), tile_size = r.integer("tile_size");
  // Types of the lists are checked here (M5), their ranges below (M6).
  (void)r.int_list("tile_cells");
  (void)r.int_list("tile_nnz");
  (void)r.int_list("tile_bytes");
  const std::int64_t n_chunks = r.integer("n_chunks");
  m.zstd_level = r.integer("zstd_level");
  m.has_gene_order = r.boolean("has_gene_order");
  m.has_var_names = r.boolean("has_var_names");
  if (const Json* md = r.find("metadata")) {
    if (!md->is_object()) r.bad("metadata", "must be an object", "M5");
    m.metadata = *md;
  }
  m.has_obs = r.boolean("has_obs");
  const std::int64_t k = r.integer("obs_tiles_per_file");
  m.obs_fingerprint = r.string("obs_fingerprint");
  const auto shard_bytes = r.int_list("obs_shard_bytes");
  m.obs_shard_sha256 = r.string_list("obs_shard_sha256");
  m.has_var_table = r.boolean("has_var_table");
  for (const auto& item : root.items()) {
    const std::string& key = item.key();
    if (std::find_if(std::begin(kKeyOrder), std::end(kKeyOrder), [&](const char* k2) { return key == k2; }) ==
        std::end(kKeyOrder))
      m.unknown_keys.push_back(key);
  }

  m.n_cells = non_negative("n_cells", n_cells);
  m.n_genes = non_negative("n_genes", n_genes);
  m.tile_size = non_negative("tile_size", tile_size);
  m.n_chunks = non_negative("n_chunks", n_chunks);
  m.tile_cells = list("tile_cells");
  m.tile_nnz = list("tile_nnz");
  m.tile_bytes = list("tile_bytes");
  if (m.has_obs) {
    m.obs_tiles_per_file = non_negative("obs_tiles_per_file", k);
    for (const std::int64_t v : shard_bytes) m.obs_shard_bytes.push_back(non_negative("obs_shard_bytes", v));
  } else {
    // M12: obs keys are ignored without obs.
    m.obs_tiles_per_file = 0;
    m.obs_fingerprint.clear();
    m.obs_shard_sha256.clear();
  }
  m.validate(object);
  return m;
}

void Manifest::validate(std::string_view object) const {
  const auto bad = [&](std::string_view key, const std::string& what, const char* rule) {
    fail(object, "key " + std::string(key), what, rule);
  };
  if (!is_known_version(version)) bad("version", "unsupported manifest version " + std::to_string(version), "M3");
  // M6
  if (n_cells < 1) bad("n_cells", "must be at least 1", "M6");
  if (n_genes < 1 || n_genes > max_genes(version))
    bad("n_genes",
        std::to_string(n_genes) + " outside 1.." + std::to_string(max_genes(version)) + " for version " +
            std::to_string(version),
        "M6");
  if (tile_size < 1) bad("tile_size", "must be at least 1", "M6");
  if (n_chunks < 1) bad("n_chunks", "must be at least 1", "M6");
  for (const auto v : tile_cells)
    if (v < 1) bad("tile_cells", "every tile holds at least 1 cell", "M6");
  for (const auto v : tile_bytes)
    if (v < TileHeader::kSize) bad("tile_bytes", "every tile is at least 64 bytes, found " + std::to_string(v), "M6");
  // M7
  if (tile_cells.size() != tile_nnz.size() || tile_cells.size() != tile_bytes.size())
    bad("tile_cells",
        "tile_cells, tile_nnz and tile_bytes have lengths " + std::to_string(tile_cells.size()) + ", " +
            std::to_string(tile_nnz.size()) + ", " + std::to_string(tile_bytes.size()),
        "M7");
  if (tile_cells.empty()) bad("tile_cells", "a dataset has at least one tile", "M7");
  // M8
  std::uint64_t sum = 0;
  for (const auto v : tile_cells) {
    const auto s = add_u64(sum, v);
    if (!s) bad("tile_cells", "sum overflows", "M8");
    sum = *s;
  }
  if (sum != n_cells) bad("n_cells", std::to_string(n_cells) + " != sum(tile_cells) = " + std::to_string(sum), "M8");
  // M9
  for (std::size_t i = 0; i + 1 < tile_cells.size(); ++i)
    if (tile_cells[i] != tile_size)
      bad("tile_cells",
          "tile " + std::to_string(i) + " holds " + std::to_string(tile_cells[i]) +
              " cells; every tile but the last holds tile_size = " + std::to_string(tile_size),
          "M9");
  if (tile_cells.back() > tile_size)
    bad("tile_cells",
        "the last tile holds " + std::to_string(tile_cells.back()) + " cells, more than tile_size " +
            std::to_string(tile_size),
        "M9");
  // M10
  for (std::size_t i = 0; i < tile_nnz.size(); ++i) {
    const auto cap = mul_u64(tile_cells[i], n_genes);
    if (cap && tile_nnz[i] > *cap)
      bad("tile_nnz",
          "tile " + std::to_string(i) + " has " + std::to_string(tile_nnz[i]) +
              " nonzeros, more than tile_cells * n_genes",
          "M10");
  }
  // M11
  if (has_obs) {
    if (obs_tiles_per_file < 1) bad("obs_tiles_per_file", "must be at least 1 with obs", "M11");
    if (!is_lower_hex(obs_fingerprint, 24)) bad("obs_fingerprint", "must be 24 lowercase hex digits", "M11");
    const std::uint64_t shards = (n_tiles() + obs_tiles_per_file - 1) / obs_tiles_per_file;
    if (obs_shard_bytes.size() != shards || obs_shard_sha256.size() != shards)
      bad("obs_shard_bytes",
          "obs_shard_bytes and obs_shard_sha256 must both list " + std::to_string(shards) + " shards", "M11");
    for (const auto& h : obs_shard_sha256)
      if (!is_lower_hex(h, 64)) bad("obs_shard_sha256", "every hash is 64 lowercase hex digits", "M11");
    for (const auto b : obs_shard_bytes)
      if (b < 12) bad("obs_shard_bytes", "every shard is at least 12 bytes", "M11");
  }
}

std::string Manifest::serialize() const {
  check_metadata_finite(metadata);
  if (!metadata.is_object()) throw UsageError("manifest metadata must be a JSON object");
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::python_pretty());
  const auto u64_list = [&w](const std::vector<std::uint64_t>& v) {
    w.begin_array();
    for (const auto x : v) w.value(x);
    w.end_array();
  };
  w.begin_object();
  w.key("n_cells").value(n_cells);
  w.key("n_genes").value(n_genes);
  w.key("tile_size").value(tile_size);
  w.key("tile_cells");
  u64_list(tile_cells);
  w.key("tile_nnz");
  u64_list(tile_nnz);
  w.key("tile_bytes");
  u64_list(tile_bytes);
  w.key("n_chunks").value(n_chunks);
  w.key("zstd_level").value(zstd_level);
  w.key("has_gene_order").value(has_gene_order);
  w.key("has_var_names").value(has_var_names);
  w.key("metadata").value(metadata);
  w.key("has_obs").value(has_obs);
  w.key("obs_tiles_per_file").value(has_obs ? obs_tiles_per_file : 0);
  w.key("obs_fingerprint").value(has_obs ? obs_fingerprint : std::string());
  w.key("obs_shard_bytes");
  u64_list(has_obs ? obs_shard_bytes : std::vector<std::uint64_t>{});
  w.key("obs_shard_sha256").begin_array();
  if (has_obs)
    for (const auto& h : obs_shard_sha256) w.value(h);
  w.end_array();
  w.key("has_var_table").value(has_var_table);
  w.key("format").value(kFormat);
  w.key("version").value(version);
  w.end_object();
  return out;
}

}  // namespace tessera::cells
