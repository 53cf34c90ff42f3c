// `tessera ragged info STORE [--deep] [--list-leaves]` (spec zagg-ragged.md §8.1).
// A hive root prints its manifest, the root coverage summary and (with --list-leaves) every leaf
// with its stamp status; a leaf, flat store or column prints its stamp, coverage envelope, groups
// and every array's geometry and codecs, and for ragged arrays their declarations. `--deep` reads
// every stored object (so every CRC is checked) and adds row totals and weight sums.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_walk.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/zarr/hierarchy.hpp"

namespace tessera::cli {
namespace {

using codec::json::Json;
using codec::json::JsonWriter;
using ragged_cli::word_text;

struct InfoArgs {
  std::string store;
  std::optional<std::string> shard;
  bool deep = false, list_leaves = false;
};

void write_stamp(JsonWriter& w, const std::optional<ragged::hive::CommitStamp>& stamp) {
  w.key("stamp");
  if (!stamp) {
    w.value(nullptr);
    return;
  }
  w.begin_object();
  w.key("spec").value(stamp->spec);
  w.key("complete").value(stamp->complete);
  w.key("status").value(stamp->complete ? "committed" : "debris");
  w.key("cells_with_data");
  stamp->cells_with_data ? w.value(*stamp->cells_with_data) : w.value(nullptr);
  w.key("granule_count");
  stamp->granule_count ? w.value(*stamp->granule_count) : w.value(nullptr);
  w.key("written_at");
  stamp->written_at ? w.value(*stamp->written_at) : w.value(nullptr);
  w.end_object();
}

std::string_view encoding_name(ragged::hive::CoverageEnvelope::Encoding e) {
  using E = ragged::hive::CoverageEnvelope::Encoding;
  return e == E::Bitmap ? "bitmap" : e == E::Full ? "full" : "box";
}

// Occupied cells of a bitmap envelope, decoded against the leaf's shard (nullopt when the shard
// or the sidecar is unknown).
std::optional<std::uint64_t> occupied_cells(const ragged_cli::Target& t, const ragged::hive::CoverageEnvelope& env) {
  using E = ragged::hive::CoverageEnvelope::Encoding;
  if (!t.shard || !env.cell_order) return std::nullopt;
  const int depth = static_cast<int>(*env.cell_order) - ragged::morton::order_of(*t.shard);
  if (env.encoding == E::Full) return depth >= 0 ? std::optional(ragged::morton::pow4(depth)) : std::nullopt;
  if (env.encoding != E::Bitmap || !env.sidecar || depth < 1) return std::nullopt;
  const auto object = t.store->get(*env.sidecar);
  if (!object) return std::nullopt;
  return ragged::hive::decode_sidecar(*object, depth, *env.sidecar).size();
}

void write_coverage(JsonWriter& w, const ragged_cli::Target& t, const std::optional<ragged::hive::CommitStamp>& stamp) {
  w.key("coverage");
  if (!stamp || !stamp->coverage.present) {
    w.value(nullptr);
    return;
  }
  const auto& env = stamp->coverage;
  w.begin_object();
  w.key("box").begin_array();
  for (const auto& slot : env.box) slot ? w.value(*slot) : w.value(nullptr);
  w.end_array();
  w.key("encoding").value(encoding_name(env.encoding));
  w.key("cell_order");
  env.cell_order ? w.value(*env.cell_order) : w.value(nullptr);
  w.key("occupied_cells");
  const auto occupied = occupied_cells(t, env);
  occupied ? w.value(*occupied) : w.value(nullptr);
  w.end_object();
}

void write_declaration(JsonWriter& w, const char* key, const std::optional<ragged::Declaration>& d) {
  if (!d) return;
  w.key(key).begin_object();
  w.key("spec").value(d->spec);
  w.key("shape").value(d->shape);
  w.key("grammar").value(d->grammar);
  w.end_object();
}

// Row totals and weight sums of a ragged array: every stored object read once, every chunk decoded
// (so every shard index CRC and crc32c codec is checked).
void write_deep(JsonWriter& w, const ragged::RaggedArray& ragged_array) {
  const auto& array = ragged_array.array();
  std::uint64_t rows = 0, populated = 0;
  double weight_sum = 0;
  ragged::tdigest::Digest digest;
  for (const auto& object : array.list_stored_objects()) {
    const auto stored = array.read_object(object);
    for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
      const auto chunk = stored.read_vlen_chunk(inner);
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        const auto payload = chunk[i];
        if (payload.empty()) continue;
        ++populated;
        rows += ragged_array.rows_of(payload, i);
        if (ragged_array.element().is_tdigest()) {
          ragged::tdigest::decode_into(payload, ragged_array.path(), digest);
          weight_sum += ragged::tdigest::pairwise_sum(digest.weights);
        }
      }
    }
  }
  w.key("deep").begin_object();
  w.key("populated_cells").value(populated);
  w.key("rows").value(rows);
  if (ragged_array.element().is_tdigest()) w.key("weight_sum").value(weight_sum);
  w.end_object();
}

void write_ragged_block(JsonWriter& w, const ragged::RaggedArray& r, bool deep) {
  w.key("ragged").begin_object();
  w.key("element").begin_object();
  w.key("dtype").value(r.element().dtype_name);
  w.key("shape").begin_array().value(std::int64_t{-1});
  for (auto d : r.element().inner_shape) w.value(d);
  w.end_array().end_object();
  w.key("weights").value(r.weights() == ragged::Weights::Flux ? "flux" : "counts");
  if (r.gain()) w.key("gain").value(*r.gain());
  if (r.locations_binding()) w.key("locations").value(*r.locations_binding());
  if (r.times_binding()) w.key("times").value(*r.times_binding());
  write_declaration(w, "located", r.located());
  write_declaration(w, "temporal", r.temporal());
  if (deep) write_deep(w, r);
  w.end_object();
}

void write_array(JsonWriter& w, const io::Store& store, const zarr::Node& node, bool deep) {
  const auto array = zarr::Array::open(store, node.path);
  const Json& doc = node.document;
  w.begin_object();
  w.key("path").value(node.path);
  w.key("data_type").value(doc.at("data_type"));
  w.key("shape").begin_array();
  for (auto d : array.shape()) w.value(d);
  w.end_array();
  w.key("read_chunk").begin_array();
  for (auto d : array.read_chunk_shape()) w.value(d);
  w.end_array();
  w.key("shard");
  if (array.sharded()) {
    w.begin_array();
    for (auto d : array.object_shape()) w.value(d);
    w.end_array();
  } else {
    w.value(nullptr);
  }
  w.key("K").value(array.chunks_per_object_count());
  w.key("geometry").value(array.sharded() ? "sharded" : "chunk-per-object");
  const auto objects = array.list_stored_objects();
  std::uint64_t present = 0;
  for (const auto& object : objects) {
    if (!array.sharded()) {
      ++present;
      continue;
    }
    if (const auto index = array.read_shard_index(object))
      for (const auto& e : index->entries()) present += e.is_absent() ? 0 : 1;
  }
  w.key("stored_objects").value(static_cast<std::uint64_t>(objects.size()));
  w.key("present_chunks").value(present);
  w.key("fill_value").value(doc.contains("fill_value") ? doc.at("fill_value") : Json(nullptr));
  w.key("codecs").value(doc.at("codecs"));
  const Json& attributes = doc.contains("attributes") ? doc.at("attributes") : Json::object();
  if (attributes.contains("ragged")) write_ragged_block(w, ragged::RaggedArray::open(store, node.path), deep);
  w.end_object();
}

void print_leaf(const ragged_cli::Target& t, bool deep) {
  const auto stamp = ragged::hive::read_commit_stamp(*t.store);
  const auto nodes = zarr::walk_nodes(*t.store);
  ragged_cli::print_json([&](JsonWriter& w) {
    w.begin_object();
    w.key("path").value(t.given);
    w.key("kind").value(t.shard ? "leaf" : "store");
    w.key("shard");
    t.shard ? w.value(ragged::morton::to_decimal(*t.shard)) : w.value(nullptr);
    w.key("shard_word");
    t.shard ? w.value(word_text(*t.shard)) : w.value(nullptr);
    write_stamp(w, stamp);
    write_coverage(w, t, stamp);
    w.key("has_exact_occupancy").value(ragged::has_exact_occupancy(*t.store));
    w.key("groups").begin_array();
    for (const auto& n : nodes)
      if (!n.is_array && !n.path.empty()) w.value(n.path);
    w.end_array();
    w.key("arrays").begin_array();
    for (const auto& n : nodes)
      if (n.is_array) write_array(w, *t.store, n, deep);
    w.end_array();
    w.end_object();
  });
}

void print_hive(const ragged_cli::Target& t, bool list_leaves) {
  const auto moc = ragged::hive::read_root_moc(*t.store);
  ragged_cli::print_json([&](JsonWriter& w) {
    w.begin_object();
    w.key("path").value(t.given);
    w.key("kind").value("hive");
    w.key("manifest").value(t.manifest->document);
    w.key("coverage");
    if (moc) {
      w.begin_object();
      w.key("order").value(moc->order);
      w.key("shards").value(static_cast<std::uint64_t>(moc->shards.size()));
      w.key("ranges").value(moc->document.contains("ranges") ? moc->document.at("ranges") : Json::array());
      w.end_object();
    } else {
      w.value(nullptr);
    }
    if (list_leaves) {
      w.key("leaves").begin_array();
      for (const auto& leaf : ragged::hive::find_leaves(*t.store)) {
        w.begin_object();
        w.key("path").value(leaf.path);
        w.key("shard");
        leaf.shard ? w.value(ragged::morton::to_decimal(*leaf.shard)) : w.value(nullptr);
        w.key("status").value(leaf.committed ? "committed" : "debris");
        w.end_object();
      }
      w.end_array();
    }
    w.end_object();
  });
}

}  // namespace

void register_ragged_info(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = ragged.add_subcommand("info", "Summary of a hive root, leaf, flat store or column");
  ragged_cli::add_store_arguments(*cmd, a->store, a->shard);
  cmd->add_flag("--deep", a->deep, "read every stored object: row totals, weight sums, every CRC");
  cmd->add_flag("--list-leaves", a->list_leaves, "hive roots: every leaf with its stamp status");
  cmd->callback([a, &rc] {
    const ragged_cli::Target t = ragged_cli::open_target(a->store, a->shard);
    if (t.hive_root) print_hive(t, a->list_leaves);
    else print_leaf(t, a->deep);
    rc = 0;
  });
}

}  // namespace tessera::cli
