// The gates of one zagg-ragged/1 array (spec §2.2–§2.4) and single-cell reads (spec §5.1).
#include "tessera/ragged/ragged_array.hpp"

#include <limits>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::ragged {

using codec::json::Json;

namespace {

[[noreturn]] void refuse_format(const std::string& key, const std::string& structure, const std::string& rule) {
  throw FormatError(key + ": " + structure + ": " + rule, key, structure);
}
[[noreturn]] void refuse_unsupported(const std::string& key, const std::string& structure, const std::string& rule) {
  throw UnsupportedError(key + ": " + structure + ": " + rule, key, structure);
}

bool is_key_component(const std::string& s) { return io::is_valid_key(s) && s.find('/') == std::string::npos; }

struct DeclarationRule {
  const char* key;
  const char* spec;
  const char* grammar;
  std::initializer_list<const char*> shapes;
};

// Strict-checks a word-typed declaration (`located` or `temporal`): unknown spec refused, and a
// shape or grammar tessera does not implement refused.
std::optional<Declaration> read_declaration(const Json& attrs, const DeclarationRule& rule, const std::string& key) {
  const auto it = attrs.find(rule.key);
  if (it == attrs.end()) return std::nullopt;
  const std::string where = std::string("attributes.") + rule.key;
  if (!it->is_object()) refuse_format(key, where, "must be an object {spec, shape, grammar}");
  Declaration d;
  for (auto [name, out] :
       {std::pair<const char*, std::string*>{"spec", &d.spec}, {"shape", &d.shape}, {"grammar", &d.grammar}}) {
    const auto m = it->find(name);
    if (m == it->end() || !m->is_string()) refuse_format(key, where + "." + name, "missing or not a string");
    *out = m->get<std::string>();
  }
  if (d.spec != rule.spec)
    refuse_unsupported(key, where + ".spec", "unknown declaration spec '" + d.spec + "' (expected " + rule.spec + ")");
  bool shape_ok = false;
  for (const char* s : rule.shapes) shape_ok = shape_ok || d.shape == s;
  if (!shape_ok) refuse_unsupported(key, where + ".shape", "shape '" + d.shape + "' is not implemented");
  if (d.grammar != rule.grammar)
    refuse_unsupported(key, where + ".grammar",
                       "grammar '" + d.grammar + "' is not implemented (expected " + rule.grammar + ")");
  return d;
}

}  // namespace

std::optional<DType> element_dtype(std::string_view name) noexcept {
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"bool", DType::Bool},  {"int8", DType::I8},     {"int16", DType::I16},   {"int32", DType::I32},
      {"int64", DType::I64},  {"uint8", DType::U8},    {"uint16", DType::U16},  {"uint32", DType::U32},
      {"uint64", DType::U64}, {"float32", DType::F32}, {"float64", DType::F64},
  };
  for (const auto& [n, t] : kNames)
    if (name == n) return t;
  std::string_view s = name;
  if (!s.empty() && (s.front() == '<' || s.front() == '|' || s.front() == '=')) s.remove_prefix(1);
  static constexpr std::pair<std::string_view, DType> kTypestr[] = {
      {"?", DType::Bool}, {"b1", DType::Bool}, {"i1", DType::I8},  {"i2", DType::I16},
      {"i4", DType::I32}, {"i8", DType::I64},  {"u1", DType::U8},  {"u2", DType::U16},
      {"u4", DType::U32}, {"u8", DType::U64},  {"f4", DType::F32}, {"f8", DType::F64},
  };
  for (const auto& [n, t] : kTypestr)
    if (s == n) return t;
  return std::nullopt;
}

RaggedArray RaggedArray::open(const io::Store& store, std::string path, zarr::ReadOptions options) {
  return RaggedArray(zarr::Array::open(store, std::move(path), options));
}

RaggedArray::RaggedArray(zarr::Array array) : array_(std::move(array)) {
  const std::string key = array_.metadata_key();
  const zarr::ArrayMeta& meta = array_.meta();
  // 1. the vlen type (typed vlen /2 arrays were refused by the zarr layer with the §2.9 text)
  if (!meta.data_type.vlen)
    refuse_format(key, "data_type",
                  "'" + meta.data_type.name + "' is not variable_length_bytes: not a zagg-ragged array");
  // 2. the ragged block
  const Json& attrs = meta.attributes;
  const auto rb = attrs.find("ragged");
  if (rb == attrs.end() || !rb->is_object())
    refuse_format(
        key, "attributes.ragged",
        "missing: a variable-length array without a zagg-ragged/1 element declaration is not a zagg ragged array "
        "(stores from before the vlen layout, with per-chunk values/offsets/cell_ids subgroups, are not readable "
        "and must be rewritten)");
  // 3. the revision
  const auto spec = rb->find("spec");
  if (spec == rb->end() || !spec->is_string() || spec->get<std::string>() != kRaggedSpec)
    refuse_unsupported(key, "attributes.ragged.spec",
                       "unknown ragged revision " + (spec == rb->end() ? std::string("(absent)") : spec->dump()) +
                           "; tessera reads zagg-ragged/1 only");
  // 4. the element
  const auto el = rb->find("element");
  if (el == rb->end() || !el->is_object())
    refuse_format(key, "attributes.ragged.element", "missing or not an object {dtype, shape}");
  const auto dt = el->find("dtype");
  if (dt == el->end() || !dt->is_string())
    refuse_format(key, "attributes.ragged.element.dtype", "missing or not a string");
  element_.dtype_name = dt->get<std::string>();
  if (!element_.dtype_name.empty() && element_.dtype_name.front() == '>')
    refuse_format(key, "attributes.ragged.element.dtype",
                  "big-endian typestr '" + element_.dtype_name + "' contradicts the little-endian payload rule");
  const auto dtype = element_dtype(element_.dtype_name);
  if (!dtype)
    refuse_unsupported(key, "attributes.ragged.element.dtype",
                       "element dtype '" + element_.dtype_name + "' is not supported");
  element_.dtype = *dtype;
  const auto shape = el->find("shape");
  if (shape == el->end() || !shape->is_array() || shape->empty() || !(*shape)[0].is_number_integer() ||
      (*shape)[0].get<std::int64_t>() != -1)
    refuse_format(key, "attributes.ragged.element.shape", "must be an array [-1, *inner_shape]");
  std::uint64_t row_items = 1;
  for (std::size_t i = 1; i < shape->size(); ++i) {
    const Json& d = (*shape)[i];
    if (!d.is_number_integer() || d.get<std::int64_t>() < 1)
      refuse_format(key, "attributes.ragged.element.shape",
                    "inner dimension " + std::to_string(i) + " must be an integer >= 1");
    const auto extent = d.get<std::uint64_t>();
    element_.inner_shape.push_back(extent);
    if (!mul_u64(row_items, extent) || *mul_u64(row_items, extent) > (std::uint64_t{1} << 40))
      refuse_format(key, "attributes.ragged.element.shape", "inner shape too large");
    row_items *= extent;
  }
  element_.row_bytes = row_items * dtype_size(element_.dtype);
  // 5. the location binding
  if (const auto loc = rb->find("locations"); loc != rb->end()) {
    if (!loc->is_string() || !is_key_component(loc->get<std::string>()))
      refuse_format(key, "attributes.ragged.locations", "must be a non-empty sibling array name (one key component)");
    locations_ = loc->get<std::string>();
  }
  // 6. a cells axis
  if (array_.rank() != 1)
    refuse_format(key, "shape", "a zagg-ragged array is 1-D (rank " + std::to_string(array_.rank()) + ")");
  if (meta.dimension_names && meta.dimension_names->size() == 1 && (*meta.dimension_names)[0] == "chunks")
    cells_axis_ = false;
  // 7. weights, gain and the time binding
  if (const auto w = attrs.find("weights"); w != attrs.end()) {
    if (!w->is_string()) refuse_format(key, "attributes.weights", "must be a string");
    const std::string v = w->get<std::string>();
    if (v == "flux") weights_ = Weights::Flux;
    else if (v != "counts")
      refuse_unsupported(key, "attributes.weights", "unknown weights declaration '" + v + "' (a future revision)");
  }
  if (const auto g = attrs.find("gain"); g != attrs.end()) gain_ = *g;
  if (const auto t = attrs.find("times"); t != attrs.end()) {
    if (!t->is_string() || !is_key_component(t->get<std::string>()))
      refuse_format(key, "attributes.times", "must be a non-empty sibling array name (one key component)");
    times_ = t->get<std::string>();
  }
  located_ = read_declaration(attrs, {"located", "zagg-located/1", "mortie-morton/1", {"per-centroid"}}, key);
  temporal_ = read_declaration(
      attrs, {"temporal", "zagg-toc/1", "mortie-toc/1", {"per-centroid", "per-cell", "coordinate"}}, key);
}

std::uint64_t RaggedArray::rows_of(std::span<const std::byte> payload, std::uint64_t cell) const {
  if (element_.row_bytes == 0 || payload.size() % element_.row_bytes != 0)
    throw FormatError(path() + ": cell " + std::to_string(cell) + ": payload of " + std::to_string(payload.size()) +
                          " bytes is not a multiple of the " + std::to_string(element_.row_bytes) +
                          "-byte row of element " + element_.dtype_name,
                      path(), "cell " + std::to_string(cell));
  return payload.size() / element_.row_bytes;
}

namespace {

[[noreturn]] void cell_out_of_range(const RaggedArray& array, const std::string& cell) {
  throw UsageError(array.path() + ": cell index " + cell + " out of range: valid indices are 0.." +
                   (array.size() == 0 ? std::string("(none, the array is empty)") : std::to_string(array.size() - 1)));
}

}  // namespace

void RaggedArray::check_cell_index(std::uint64_t cell) const {
  if (cell >= size()) cell_out_of_range(*this, std::to_string(cell));
}

RaggedCell RaggedArray::read_cell(std::int64_t cell) const {
  if (cell < 0) cell_out_of_range(*this, std::to_string(cell));
  check_cell_index(static_cast<std::uint64_t>(cell));
  const auto index = static_cast<std::uint64_t>(cell);
  const std::uint64_t c = chunk_cells();
  const zarr::VlenChunk chunk = array_.read_vlen_chunk({index / c});
  const auto payload = chunk[index % c];
  RaggedCell out;
  out.index = index;
  out.rows = rows_of(payload, index);
  out.bytes.assign(payload.begin(), payload.end());
  return out;
}

}  // namespace tessera::ragged
