// `tessera tet export` (spec tet.md §6.7): `.tet` → Zarr v3 directory store. Every check that can
// refuse the input (output not empty, no datasets, mixed codecs, names Zarr cannot hold) runs
// before the first byte is written. Chunk files are written in parallel (oneTBB): interior tiles
// verbatim, edge tiles decoded, padded with the fill value and re-encoded (TD-5). Metadata is
// pretty JSON with sorted keys, as the reference writes it; the root `zarr.json` comes last.
//
// A file with the tessera footer extension exports its attributes as CF readers of Zarr expect
// them: typed JSON values (numbers stay numbers, arrays stay arrays), the global attributes on the
// root group, and no `_FillValue` / `missing_value` / `scale_factor` / `add_offset` whose effect
// the stored values already carry (a reader would decode them twice); a float dataset whose fill
// values convert made NaN gets NaN as its Zarr fill value (compat X16).
#include "tessera/interop/tet_export.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <system_error>

#include "nd_copy.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/core/number_text.hpp"
#include "tessera/io/store.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet/read_ahead.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/version.hpp"
#include "tessera/zarr/data_type.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;
using codec::json::Json;

constexpr codec::json::DumpOptions kMetadataJson{2, true, codec::json::FloatStyle::Tet, false};

void put_json(io::Store& store, const std::string& key, const Json& tree) {
  const std::string text = codec::json::dump(tree, kMetadataJson);
  store.put(key, std::as_bytes(std::span(text)));
}

void require_empty_output(const std::string& output) {
  std::error_code ec;
  const fs::file_status status = fs::status(output, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status) || !fs::is_empty(output, ec))
    throw UsageError("export output `" + output + "` exists and is not empty", output);
}

template <typename T>
bool parse_whole(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

// The dataset's `_FillValue` attr as one element of `dtype`, when the text is a number the type
// can hold exactly (integers) or at all (floats: finite values inside the range, NaN, ±inf).
std::optional<std::vector<std::byte>> fill_from_attr(const std::string& text, DType dtype) {
  std::vector<std::byte> element(dtype_size(dtype));
  double v = 0;
  const bool numeric = parse_whole(text, v);
  if (is_float(dtype)) {
    if (!numeric) return std::nullopt;
    if (dtype == DType::F64) {
      store_le<double>(element.data(), v);
    } else {
      const double limit = dtype == DType::F32 ? std::numeric_limits<float>::max() : 65504.0;
      if (std::isfinite(v) && std::abs(v) > limit) return std::nullopt;
      const auto f = static_cast<float>(v);
      if (dtype == DType::F32) store_le<float>(element.data(), f);
      else store_le<std::uint16_t>(element.data(), float_to_half(f));
    }
    return element;
  }
  std::int64_t i = 0;
  std::uint64_t u = 0;
  const bool is_int = parse_whole(text, i);
  const bool is_uint = parse_whole(text, u);
  if (!is_int && !is_uint) {
    if (!numeric || !std::isfinite(v) || std::trunc(v) != v || std::abs(v) > 9007199254740992.0) return std::nullopt;
    if (v < 0) i = static_cast<std::int64_t>(v);
    else u = static_cast<std::uint64_t>(v);
  }
  const bool negative = is_int ? i < 0 : (!is_uint && v < 0);
  if (!negative && !is_uint) u = static_cast<std::uint64_t>(i);
  return visit_dtype(dtype, [&](auto tag) -> std::optional<std::vector<std::byte>> {
    using T = decltype(tag);
    if (negative) {
      if (!std::numeric_limits<T>::is_signed || i < static_cast<std::int64_t>(std::numeric_limits<T>::min()))
        return std::nullopt;
      store_le<T>(element.data(), static_cast<T>(i));
    } else {
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
      store_le<T>(element.data(), static_cast<T>(u));
    }
    return element;
  });
}

// A typed attribute as a plain JSON value, as Zarr attributes hold it (and xarray's Zarr writer
// writes them): one stored scalar as a number or string, anything else as an array. JSON has no
// NaN or infinity; they are written as Zarr v3 writes non-finite fill values.
Json attribute_json(const tet::AttributeValue& v) {
  Json items = Json::array();
  if (v.type == "str") {
    for (const auto& text : v.text) items.push_back(text);
  } else if (v.type == "float32" || v.type == "float64") {
    for (const double x : v.real_values) {
      if (std::isnan(x)) items.push_back("NaN");
      else if (std::isinf(x)) items.push_back(x > 0 ? "Infinity" : "-Infinity");
      else items.push_back(x);
    }
  } else if (v.type == "bool") {
    for (const auto x : v.signed_values) items.push_back(x != 0);
  } else {
    for (const auto x : v.signed_values) items.push_back(x);
    for (const auto x : v.unsigned_values) items.push_back(x);
  }
  if (v.scalar && items.size() == 1) return items[0];
  return items;
}

// The first value of a typed attribute as the text fill_from_attr reads (integers exactly).
std::string first_value_text(const tet::AttributeValue& v) {
  if (!v.text.empty()) return v.text.front();
  if (!v.signed_values.empty()) return std::to_string(v.signed_values.front());
  if (!v.unsigned_values.empty()) return std::to_string(v.unsigned_values.front());
  if (!v.real_values.empty()) return decimal_text(v.real_values.front());
  return {};
}

bool was_applied(const tet::DatasetExtension* ext, std::string_view name) {
  return ext != nullptr && std::find(ext->applied.begin(), ext->applied.end(), name) != ext->applied.end();
}

struct ExportDataset {
  const tet::Dataset* ds = nullptr;
  tet::Codec codec = tet::Codec::Raw;
  zarr::DataType type;
  std::vector<std::byte> fill;  // one element
  // The Zarr chunk shape: the .tet chunk shape clamped to the array shape (compat X13). Along an
  // axis whose chunk is longer than the array there is one chunk either way, so the grid and
  // every tile are the same, but the padded edge chunk is no larger than the data.
  std::vector<std::uint64_t> chunk_shape;
  const tet::DatasetExtension* extension = nullptr;  // typed attributes and applied encoding, if recorded
};

// The footer's text attributes, then (overriding them) the extension's typed ones, without the CF
// encoding attributes the stored values already carry.
Json array_attributes(const ExportDataset& x, const tet::DatasetMetadata* md) {
  Json attributes = Json::object();
  attributes["tetration_dtype"] = std::string(dtype_info(x.ds->dtype).name);
  if (md != nullptr)
    for (const auto& [k, v] : md->attrs)
      if (!was_applied(x.extension, k)) attributes[k] = v;
  if (x.extension != nullptr)
    for (const auto& [k, v] : x.extension->attrs)
      if (!was_applied(x.extension, k)) attributes[k] = attribute_json(v);
  return attributes;
}

Json array_metadata(const ExportDataset& x, const tet::DatasetMetadata* md) {
  const tet::Dataset& ds = *x.ds;
  Json attributes = array_attributes(x, md);
  Json codecs = Json::array();
  codecs.push_back({{"name", "bytes"}, {"configuration", {{"endian", "little"}}}});
  switch (x.codec) {
    case tet::Codec::Raw: break;
    case tet::Codec::Zstd:  // level 0 (zstd's default, 3) as §6.7 writes it; a reader ignores the level
      codecs.push_back({{"name", "zstd"}, {"configuration", {{"level", 0}, {"checksum", false}}}});
      break;
  }
  Json meta = Json::object();
  meta["attributes"] = std::move(attributes);
  meta["chunk_grid"] = {{"name", "regular"}, {"configuration", {{"chunk_shape", x.chunk_shape}}}};
  meta["chunk_key_encoding"] = {{"name", "default"}, {"configuration", {{"separator", "/"}}}};
  meta["codecs"] = std::move(codecs);
  meta["data_type"] = x.type.name;
  if (md != nullptr && md->dim_names && md->dim_names->size() == ds.ndim()) meta["dimension_names"] = *md->dim_names;
  meta["fill_value"] = zarr::encode_fill_value(zarr::FillValue{x.fill}, x.type);
  meta["node_type"] = "array";
  meta["shape"] = ds.shape;
  meta["storage_transformers"] = Json::array();
  meta["zarr_format"] = 3;
  return meta;
}

// The Zarr fill value: NaN for a float dataset whose fill values convert made NaN; else the
// dataset's `_FillValue` (typed when recorded, else the footer text) when its type holds it;
// else zero.
std::vector<std::byte> export_fill(const ExportDataset& x, const tet::DatasetMetadata* md) {
  const DType dtype = x.ds->dtype;
  if (is_float(dtype) && (was_applied(x.extension, "_FillValue") || was_applied(x.extension, "missing_value")))
    if (auto nan = fill_from_attr("NaN", dtype)) return std::move(*nan);
  std::optional<std::string> text;
  if (x.extension != nullptr && !was_applied(x.extension, "_FillValue"))
    for (const auto& [k, v] : x.extension->attrs)
      if (k == "_FillValue") text = first_value_text(v);
  if (!text && md != nullptr && !was_applied(x.extension, "_FillValue")) {
    const auto attr = md->attrs.find("_FillValue");
    if (attr != md->attrs.end()) text = attr->second;
  }
  if (text)
    if (auto fill = fill_from_attr(*text, dtype)) return std::move(*fill);
  return zarr::zero_fill(x.type).element;
}

// Every refusal of §6.7 and the names Zarr cannot hold, before anything is written.
std::vector<ExportDataset> plan_export(const tet::TetFile& file, const std::string& input) {
  if (file.datasets().empty()) throw UsageError("no datasets in " + input, input);
  std::set<std::string> arrays, groups;
  std::vector<ExportDataset> out;
  for (const tet::Dataset& ds : file.datasets()) {
    if (!io::is_valid_key(ds.name))
      throw UnsupportedError("dataset `" + ds.name + "` cannot be a Zarr node path (empty, `.` or `..` component)",
                             input, ds.name);
    if (!arrays.insert(ds.name).second)
      throw UnsupportedError("dataset `" + ds.name + "` appears twice; Zarr node paths are unique", input, ds.name);
    for (std::size_t at = ds.name.find('/'); at != std::string::npos; at = ds.name.find('/', at + 1))
      groups.insert(ds.name.substr(0, at));
    ExportDataset x;
    x.ds = &ds;
    const auto first = file.entry(ds.entry_of_chunk.front()).codec;
    for (const auto e : ds.entry_of_chunk)
      if (file.entry(e).codec != first)
        throw UnsupportedError("dataset `" + ds.name + "` mixes raw and zstd chunk codecs; re-export with one codec",
                               input, ds.name);
    x.codec = tet::entry_codec(file.entry(ds.entry_of_chunk.front()));
    x.type = zarr::DataType::fixed(ds.dtype);
    for (std::size_t d = 0; d < ds.ndim(); ++d) x.chunk_shape.push_back(std::min(ds.chunk_shape[d], ds.shape[d]));
    const auto& footer = file.layout().footer;
    if (footer && footer->extension) {
      const auto found = footer->extension->datasets.find(ds.name);
      if (found != footer->extension->datasets.end()) x.extension = &found->second;
    }
    x.fill = export_fill(x, file.metadata_of(ds.name));
    out.push_back(std::move(x));
  }
  for (const std::string& g : groups)
    if (arrays.contains(g))
      throw UnsupportedError("dataset `" + g + "` is also the group of another dataset; Zarr cannot hold both", input,
                             g);
  return out;
}

// Writes every chunk file of one dataset; returns the count.
std::uint64_t write_chunks(const tet::TetFile& file, const ExportDataset& x, io::Store& store) {
  const tet::Dataset& ds = *x.ds;
  const std::size_t nd = ds.ndim();
  const std::size_t es = ds.element_size();
  std::uint64_t full_elements = 1;
  for (const auto c : x.chunk_shape) full_elements = checked_mul(full_elements, c, "chunk size");
  const std::size_t full_bytes = checked_size(checked_mul(full_elements, es, "chunk size"));
  const std::uint64_t n = ds.entry_of_chunk.size();
  // Interior chunks are written from the map, or from pread copies where those are faster
  // (io/read_path.hpp); the rest decode the same way.
  std::uint64_t stored = 0;
  for (const std::uint32_t e : ds.entry_of_chunk) stored += file.entry(e).stored_byte_len;
  const std::uint64_t first = file.entry(ds.entry_of_chunk.front()).payload_offset;
  const io::ReadPath path = io::choose_read_path(file.source(), first, file.source().size() - first, stored).chosen;
  auto export_chunk = [&](std::uint64_t ordinal) {
    std::vector<std::uint64_t> coords(nd), origin(nd), extent(nd);
    std::uint64_t rest = ordinal;
    for (std::size_t d = nd; d-- > 0;) {
      coords[d] = rest % ds.grid[d];
      rest /= ds.grid[d];
    }
    ds.tile_extent(coords, origin, extent);
    std::string key = ds.name + "/c";
    for (const auto c : coords) key += "/" + std::to_string(c);
    const std::uint32_t entry_index = ds.entry_of_chunk[ordinal];
    const tet::ChunkEntry& entry = file.entry(entry_index);
    if (extent == x.chunk_shape) {  // interior tile: the stored bytes are already a Zarr chunk
      switch (x.codec) {
        case tet::Codec::Raw: break;  // the bytes are the elements
        case tet::Codec::Zstd:
          // Copied without decoding, so proven first: an export never writes a chunk that no
          // reader can decode.
          tet::check_chunk_payload(file.source(), entry, entry_index);
          break;
      }
      const std::byte* p =
          path == io::ReadPath::Pread ? nullptr : file.source().view(entry.payload_offset, entry.stored_byte_len);
      if (p != nullptr) {
        store.put(key, {p, checked_size(entry.stored_byte_len)});
      } else {
        thread_local std::vector<std::byte> copy;
        copy.resize(checked_size(entry.stored_byte_len));
        file.source().read_at(entry.payload_offset, copy);
        store.put(key, copy);
      }
      return;
    }
    thread_local std::vector<std::byte> tile;
    file.decode_chunk_into(entry_index, tile, path);
    std::vector<std::byte> chunk(full_bytes);
    for (std::size_t at = 0; at < full_bytes; at += es) std::copy(x.fill.begin(), x.fill.end(), chunk.begin() + at);
    detail::copy_box(tile.data(), extent, std::vector<std::uint64_t>(nd, 0), chunk.data(), x.chunk_shape,
                     std::vector<std::uint64_t>(nd, 0), extent, es);
    switch (x.codec) {
      case tet::Codec::Raw: break;
      // zstd's level 0 is its default, 3: the level the metadata declares.
      case tet::Codec::Zstd: chunk = codec::zstd_compress(chunk, {3, true, false}); break;
    }
    store.put(key, chunk);
  };
  const auto ahead = tet::ChunkReadAhead::for_entries(file, ds.entry_of_chunk);
  if (!ahead) {
    tbb::parallel_for(std::uint64_t{0}, n, export_chunk);
    return n;
  }
  // A remote file: every thread takes the next chunk in order, so the read-ahead's requests
  // move with the chunks being written (a split range would read two places far apart).
  tet::for_each_in_order(checked_size(n), 0, [&](std::size_t ordinal) {
    const tet::ChunkReadAhead::Hold hold = ahead->before(ordinal);
    export_chunk(ordinal);
  });
  return n;
}

}  // namespace

ExportSummary export_tet_to_zarr(const std::string& input, const std::string& output_dir,
                                 const ExportOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  require_empty_output(output_dir);
  const tet::TetFile file = tet::TetFile::open(input);
  const std::vector<ExportDataset> plan = plan_export(file, input);

  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec) throw IoError("cannot create export output `" + output_dir + "`: " + ec.message(), output_dir);
  io::DirectoryStore store(output_dir);
  tbb::task_arena arena(options.threads == 0 ? tbb::task_arena::automatic : static_cast<int>(options.threads));

  ExportSummary summary;
  std::set<std::string> groups_written;
  for (const ExportDataset& x : plan) {
    const std::string& name = x.ds->name;
    for (std::size_t at = name.find('/'); at != std::string::npos; at = name.find('/', at + 1)) {
      const std::string group = name.substr(0, at);
      if (groups_written.insert(group).second)
        put_json(store, group + "/zarr.json", Json{{"node_type", "group"}, {"zarr_format", 3}});
    }
    summary.chunks += arena.execute([&] { return write_chunks(file, x, store); });
    put_json(store, name + "/zarr.json", array_metadata(x, file.metadata_of(name)));
    ++summary.datasets;
  }
  // Last: a store with its root metadata is complete. The source's global attributes, typed, go
  // with it when the footer extension records them.
  Json root_attributes = Json::object();
  const auto& footer = file.layout().footer;
  if (footer && footer->extension)
    for (const auto& [k, v] : footer->extension->attrs) root_attributes[k] = attribute_json(v);
  root_attributes["tetration_export"] = kVersion;
  put_json(store, "zarr.json",
           Json{{"attributes", std::move(root_attributes)}, {"node_type", "group"}, {"zarr_format", 3}});
  summary.elapsed_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace tessera::interop
