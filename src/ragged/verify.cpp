#include "tessera/ragged/verify.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "objects_ahead.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/leaf_meta.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/zarr/array.hpp"
#include "tessera/zarr/hierarchy.hpp"

namespace tessera::ragged {
namespace {

using detail::ObjectsAhead;
using morton::pow4;

// What the later passes need from the chunk pass, per group.
struct GroupFacts {
  std::set<std::uint64_t> populated;             // cells with a stored payload (any ragged field)
  std::map<std::uint64_t, std::uint64_t> words;  // morton: cell index → nonzero word
  std::optional<std::uint64_t> axis_root;        // single-root axis: the root word
  int axis_depth = 0;
  bool has_morton = false;
};

class Verifier {
 public:
  explicit Verifier(const io::Store& store) : store_(store) {}

  StoreVerifyReport run() {
    // A store is a Zarr hierarchy from its root document on: without one there is nothing that
    // could verify (an empty directory, a deltacells dataset, an export whose root never came).
    if (!store_.exists("zarr.json")) {
      fail("zarr.json", "metadata", "the store has no root zarr.json: not a Zarr store, or one not yet committed");
      return std::move(report_);
    }
    std::set<std::string> undecodable;  // nodes already reported: their objects are not orphans too
    const auto nodes = zarr::walk_nodes(store_, "", [&](const std::string& key, const Error& e) {
      fail(key, "metadata", e.what());
      undecodable.insert(key);
    });
    report_.nodes = nodes.size();
    for (const auto& node : nodes)
      if (node.is_array) check_array(node);
    for (const auto& node : nodes)
      if (node.is_array && node.document.value("attributes", codec::json::Json::object()).contains("ragged"))
        check_ragged(node.path);
    for (const auto& node : nodes)
      if (node.is_array && (node.path == "morton" || node.path.ends_with("/morton"))) check_morton(node.path);
    for (const auto& node : nodes)
      if (node.is_array && node.document.value("attributes", codec::json::Json::object()).contains("composition"))
        check_composition(node);
    check_stamp();
    check_orphans(nodes, undecodable);
    return std::move(report_);
  }

 private:
  void fail(std::string object, std::string rule, std::string message) {
    report_.failures.push_back({std::move(object), std::move(rule), std::move(message)});
  }

  static std::string group_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  }

  // Every stored object read whole, every read chunk decoded (index CRC, codecs, framing).
  void check_array(const zarr::Node& node) {
    ++report_.arrays;
    try {
      const auto array = zarr::Array::open(store_, node.path);
      const bool vlen = array.read_chunk_bytes() == 0;
      std::vector<std::byte> dense(array.read_chunk_bytes());
      const auto objects = array.list_stored_objects();
      ObjectsAhead ahead(array, objects, [](std::size_t) { return true; });  // fetched ahead when remote
      for (std::size_t i = 0; i < objects.size(); ++i) {
        const std::string key = array.object_key(objects[i]);
        try {
          const auto stored = ahead.take(i);
          ++report_.objects;
          for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
            try {
              if (!stored.stored_chunk(inner)) continue;
              if (vlen) (void)stored.read_vlen_chunk(inner);
              else stored.read_chunk(inner, dense);
              ++report_.chunks;
            } catch (const Error& e) {
              fail(key, "chunk", e.what());
            }
          }
        } catch (const Error& e) {
          fail(key, "chunk", e.what());
        }
      }
    } catch (const Error& e) {
      fail(node.path, "metadata", e.what());
    }
  }

  // Spec §2.7: a composition array is a dense uint64 array, fill 0, whose block names the spec,
  // the eight lanes in order, a sibling t-digest field (`of`) and an integer threshold.
  void check_composition(const zarr::Node& node) {
    const auto& doc = node.document;
    const auto& block = doc.at("attributes").at("composition");
    const auto bad = [&](const std::string& what) { fail(node.path, "composition", what); };
    if (doc.value("data_type", "") != "uint64" || doc.value("fill_value", codec::json::Json()) != 0)
      bad("a composition array is uint64 with fill_value 0");
    if (!block.is_object()) return bad("the composition attribute is not an object");
    if (block.value("spec", "") != "zagg-composition/1")
      return bad("spec is not \"zagg-composition/1\" (a composition of another version is not read)");
    if (!block.contains("lanes") || block.at("lanes") != codec::json::Json(leaf::composition_lanes()))
      bad("lanes must be [land, ocean, sea_ice, land_ice, inland_water, low, med, high] in that order");
    if (!block.contains("threshold") || !block.at("threshold").is_number_integer()) bad("threshold is not an integer");
    if (!block.contains("of") || !block.at("of").is_string()) return bad("of does not name a t-digest field");
    const std::string of = io::join_key(group_of(node.path), block.at("of").get<std::string>());
    try {
      const RaggedArray digest = RaggedArray::open(store_, of);
      if (!digest.element().is_tdigest()) bad("of names " + of + ", which is not a t-digest field");
    } catch (const Error& e) {
      bad("of names " + of + ": " + e.what());
    }
  }

  // Gates and bindings (RaggedField::open), then per cell: payload rows equal every companion's
  // word count, and t-digests pass the RD-5 checks.
  void check_ragged(const std::string& path) {
    std::optional<RaggedArray> array;
    try {
      array.emplace(RaggedArray::open(store_, path));
    } catch (const Error& e) {
      fail(path, "ragged", e.what());
      return;
    }
    // Companions are checked through the payload that binds them.
    if (array->located() || (array->temporal() && array->element().is_words())) return;
    std::optional<RaggedField> field;
    try {
      field.emplace(RaggedField::open(store_, path));
    } catch (const Error& e) {
      fail(path, "ragged", e.what());
      return;
    }
    ++report_.ragged_fields;
    GroupFacts& facts = groups_[group_of(path)];
    const zarr::Array& payload = field->payload().array();
    std::vector<const RaggedArray*> companions;
    if (field->locations()) companions.push_back(&*field->locations());
    if (field->times()) companions.push_back(&*field->times());
    try {
      tdigest::Digest digest;
      for (const auto& object : payload.list_stored_objects()) {
        const auto stored = payload.read_object(object);
        std::vector<zarr::StoredObject> bound;
        bound.reserve(companions.size());
        for (const auto* c : companions) bound.push_back(c->array().read_object(object));
        for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
          const auto read_chunk = payload.read_chunk_of(object, inner);
          if (!payload.in_read_chunk_grid(read_chunk)) continue;
          const std::uint64_t start = payload.chunk_span(read_chunk)[0].begin;
          const auto cells = stored.read_vlen_chunk(inner);
          for (std::size_t i = 0; i < cells.size(); ++i) {
            const std::uint64_t index = start + i;
            const auto bytes = cells[i];
            std::uint64_t rows = 0;
            try {
              rows = field->payload().rows_of(bytes, index);
            } catch (const Error& e) {
              fail(path, "ragged", e.what());
              continue;
            }
            if (rows > 0) {
              facts.populated.insert(index);
              ++report_.populated_cells;
            }
            if (rows > 0 && field->payload().element().is_tdigest()) {
              try {
                const std::string what = path + " cell " + std::to_string(index);
                tdigest::decode_into(bytes, what, digest);
                tdigest::validate(digest, what);
              } catch (const Error& e) {
                fail(path, "ragged", e.what());
              }
            }
            for (std::size_t c = 0; c < bound.size(); ++c) {
              const std::uint64_t words =
                  bound[c].exists() && bound[c].stored_chunk(inner) ? bound[c].read_vlen_chunk(inner)[i].size() / 8 : 0;
              if (words != rows)
                fail(companions[c]->path(), "alignment",
                     "cell " + std::to_string(index) + " holds " + std::to_string(words) + " words for " +
                         std::to_string(rows) + " payload rows of " + path);
            }
          }
        }
      }
    } catch (const Error& e) {
      fail(path, "alignment", e.what());
    }
  }

  // Every written word is a valid area word of the group's order, all share one axis root, and
  // each sits at the index its NESTED id gives.
  void check_morton(const std::string& path) {
    const std::string group = group_of(path);
    GroupFacts& facts = groups_[group];
    facts.has_morton = true;
    try {
      const auto array = zarr::Array::open(store_, path);
      const std::uint64_t length = array.shape()[0];
      const bool numeric_group = !group.empty() && group.find_first_not_of("0123456789") == std::string::npos;
      const int order = numeric_group ? std::stoi(group.substr(group.rfind('/') + 1)) : -1;
      const bool flat = order >= 0 && order <= morton::kMaxOrder && length == 12 * pow4(order);
      const auto depth = morton::log4_exact(length);
      if (!flat && !depth) {
        fail(path, "morton",
             "the cells axis length " + std::to_string(length) + " is neither 12·4^c nor a power of four");
        return;
      }
      if (depth) facts.axis_depth = *depth;
      std::vector<std::byte> chunk(array.read_chunk_bytes());
      for (const auto& object : array.list_stored_objects()) {
        const auto stored = array.read_object(object);
        for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
          const auto read_chunk = array.read_chunk_of(object, inner);
          if (!array.in_read_chunk_grid(read_chunk) || !stored.stored_chunk(inner)) continue;
          stored.read_chunk(inner, chunk);
          const zarr::Interval span = array.chunk_span(read_chunk)[0];
          for (std::uint64_t index = span.begin; index < span.end; ++index) {
            const std::uint64_t word = load_le<std::uint64_t>(chunk.data() + 8 * (index - span.begin));
            if (word != 0) check_word(path, facts, word, index, order, flat);
          }
        }
      }
    } catch (const Error& e) {
      fail(path, "morton", e.what());
    }
  }

  void check_word(const std::string& path, GroupFacts& facts, std::uint64_t word, std::uint64_t index, int order,
                  bool flat) {
    const std::string where = path + " cell " + std::to_string(index);
    const auto info = morton::inspect(word);
    if (!info || info->point) {
      fail(path, "morton", where + ": " + std::to_string(word) + " is not an area word");
      return;
    }
    if (order >= 0 && info->order != order) {
      fail(path, "morton",
           where + ": order-" + std::to_string(info->order) + " word in the order-" + std::to_string(order) + " group");
      return;
    }
    facts.words[index] = word;
    std::uint64_t expected = morton::nested(word);
    if (!flat) {
      const std::uint64_t root = morton::clip(word, info->order - facts.axis_depth);
      if (!facts.axis_root) facts.axis_root = root;
      if (root != *facts.axis_root) {
        fail(path, "morton",
             where + ": word " + morton::to_decimal(word) + " lies outside the axis root " +
                 morton::to_decimal(*facts.axis_root));
        return;
      }
      expected -= morton::nested(root) * pow4(facts.axis_depth);
    }
    if (expected != index)
      fail(path, "morton",
           where + ": word " + morton::to_decimal(word) + " belongs at index " + std::to_string(expected));
  }

  // The stamp, and the coverage envelope against the data: the box covers every occupied cell,
  // every occupied cell has a `morton` word, every cell with a payload is occupied, and the
  // sidecar's sizes and pad bits are consistent.
  void check_stamp() {
    std::optional<hive::CommitStamp> stamp;
    try {
      stamp = hive::read_commit_stamp(store_);
    } catch (const Error& e) {
      fail("zarr.json", "stamp", e.what());
      return;
    }
    if (!stamp) return;
    if (!stamp->complete) fail("zarr.json", "stamp", "the leaf carries no complete commit stamp (debris)");
    const auto& env = stamp->coverage;
    if (env.present && env.sidecar) {
      stamp_sidecar_ = *env.sidecar;
      if (!store_.exists(*env.sidecar))
        fail(*env.sidecar, "coverage", "the commit stamp names this sidecar, but the leaf does not hold it");
    }
    if (!env.present || !env.cell_order) return;
    const auto group_it = groups_.find(std::to_string(*env.cell_order));
    if (group_it == groups_.end() || !group_it->second.axis_root) return;
    const GroupFacts& facts = group_it->second;
    const std::uint64_t shard = *facts.axis_root;
    const int depth = static_cast<int>(*env.cell_order) - morton::order_of(shard);
    std::vector<std::uint64_t> occupied_ranks;
    using E = hive::CoverageEnvelope::Encoding;
    if (env.encoding == E::Full) {
      for (std::uint64_t r = 0; r < pow4(depth); ++r) occupied_ranks.push_back(r);
    } else if (env.encoding == E::Bitmap && env.sidecar) {
      const auto object = store_.get(*env.sidecar);
      if (!object) return;  // a missing sidecar degrades to box-only
      try {
        if (env.nbytes && *env.nbytes != object->size())
          fail(*env.sidecar, "coverage",
               "nbytes " + std::to_string(*env.nbytes) + " but the object holds " + std::to_string(object->size()) +
                   " bytes");
        const std::uint64_t raw = (pow4(depth) + 7) / 8;
        if (env.raw_nbytes && *env.raw_nbytes != raw)
          fail(*env.sidecar, "coverage",
               "raw_nbytes " + std::to_string(*env.raw_nbytes) + " but depth " + std::to_string(depth) + " needs " +
                   std::to_string(raw));
        occupied_ranks = hive::decode_sidecar(*object, depth, *env.sidecar);
      } catch (const Error& e) {
        fail(*env.sidecar, "coverage", e.what());
        return;
      }
    } else {
      return;
    }
    std::vector<std::uint64_t> box;
    for (const auto& slot : env.box)
      if (slot) box.push_back(morton::parse_decimal(*slot, morton::Source::File));
    const std::set<std::uint64_t> occupied(occupied_ranks.begin(), occupied_ranks.end());
    for (const std::uint64_t rank : occupied_ranks) {
      const std::uint64_t word = morton::descendant(shard, depth, rank);
      const bool covered = std::any_of(box.begin(), box.end(), [&](std::uint64_t b) {
        return morton::order_of(b) <= morton::order_of(word) && morton::clip(word, morton::order_of(b)) == b;
      });
      if (!box.empty() && !covered)
        fail("zarr.json", "coverage", "occupied cell " + morton::to_decimal(word) + " lies outside the coverage box");
      if (facts.has_morton && !facts.words.contains(rank))
        fail("zarr.json", "coverage", "occupied cell " + morton::to_decimal(word) + " has no morton word");
    }
    for (const std::uint64_t index : facts.populated)
      if (!occupied.contains(index))
        fail("zarr.json", "coverage", "cell " + std::to_string(index) + " holds data but is not occupied");
  }

  // Every stored object must belong to the hierarchy: a node's zarr.json, a chunk object below an
  // array, or the sidecar the commit stamp names. Anything else is a node the walk could not reach,
  // e.g. an array whose zarr.json is missing, whose chunks no reader would ever find.
  void check_orphans(const std::vector<zarr::Node>& nodes, const std::set<std::string>& undecodable) {
    std::set<std::string> node_paths, array_prefixes;
    for (const auto& node : nodes) {
      node_paths.insert(node.path);
      if (node.is_array) array_prefixes.insert(node.path.empty() ? std::string() : node.path + "/");
    }
    for (const std::string& key : undecodable)
      array_prefixes.insert(key.substr(0, key.size() - std::string("zarr.json").size()));
    const auto under_array = [&](const std::string& key) {
      return std::any_of(array_prefixes.begin(), array_prefixes.end(),
                         [&](const std::string& p) { return key.starts_with(p); });
    };
    for (const std::string& key : store_.list("")) {
      if (key == "zarr.json" || (key.ends_with("/zarr.json") && node_paths.contains(key.substr(0, key.size() - 10))))
        continue;
      if (undecodable.contains(key) || under_array(key) || (stamp_sidecar_ && key == *stamp_sidecar_)) continue;
      fail(key, "metadata", "an object that belongs to no array or group of the store (is a zarr.json missing?)");
    }
  }

  const io::Store& store_;
  StoreVerifyReport report_;
  std::optional<std::string> stamp_sidecar_;  // the coverage sidecar the commit stamp names
  std::map<std::string, GroupFacts> groups_;
};

}  // namespace

StoreVerifyReport verify_store(const io::Store& store) { return Verifier(store).run(); }

}  // namespace tessera::ragged
