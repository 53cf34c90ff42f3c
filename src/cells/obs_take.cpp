// Reading the local obs cache (spec deltacells.md §6.9): opening a memory-mapped cache file and
// validating it against the schema and the manifest (C7, C8), deleting and rebuilding a corrupt
// one once (C9), and `take` — rows of global cells gathered from the maps tile by tile.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "obs_cache.hpp"
#include "obs_store_impl.hpp"
#include "tessera/cells/report.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using columnar::ArrowArrayView;
using columnar::Column;
using columnar::ColumnType;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Where each requested cell lives: record batch (tile) and row within it.
struct CellPlace {
  std::uint64_t tile;
  std::uint64_t row;
};

template <typename T>
void gather_values(const std::vector<const ArrowArrayView*>& tiles, std::span<const CellPlace> places, Column& out) {
  out.data.resize(places.size() * sizeof(T));
  std::byte* dst = out.data.data();
  for (const CellPlace p : places) {
    std::memcpy(dst, tiles[p.tile]->values.data() + p.row * sizeof(T), sizeof(T));
    dst += sizeof(T);
  }
}

template <typename T>
void gather_as_double(const std::vector<const ArrowArrayView*>& tiles, std::span<const CellPlace> places, Column& out) {
  out.data.resize(places.size() * sizeof(double));
  std::byte* dst = out.data.data();
  for (const CellPlace p : places) {
    const ArrowArrayView& v = *tiles[p.tile];
    const double d =
        v.is_valid(p.row) ? static_cast<double>(v.value<T>(p.row)) : std::numeric_limits<double>::quiet_NaN();
    std::memcpy(dst, &d, sizeof d);
    dst += sizeof d;
  }
}

void gather_validity(const std::vector<const ArrowArrayView*>& tiles, std::span<const CellPlace> places, Column& out) {
  bool any_null = false;
  for (const CellPlace p : places)
    if (tiles[p.tile]->null_count > 0 && !tiles[p.tile]->is_valid(p.row)) {
      any_null = true;
      break;
    }
  if (!any_null) return;
  out.validity.resize(places.size());
  for (std::size_t i = 0; i < places.size(); ++i)
    out.validity[i] = tiles[places[i].tile]->is_valid(places[i].row) ? 1 : 0;
}

Column gather(const ObsColumnSchema& schema, const ObsCacheFile& file, std::span<const CellPlace> places) {
  const auto& tiles = file.tiles;
  const std::uint64_t n = places.size();
  switch (schema.type) {
    case ColumnType::Bool: {
      Column out(ColumnType::Bool);
      out.length = n;
      out.data.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const ArrowArrayView& v = *tiles[places[i].tile];
        out.data[i] = std::byte{static_cast<std::uint8_t>(v.is_valid(places[i].row) && v.bool_value(places[i].row))};
      }
      gather_validity(tiles, places, out);
      return out;
    }
    case ColumnType::String: {
      Column out(ColumnType::String);
      out.length = n;
      gather_validity(tiles, places, out);
      const bool all_valid = out.validity.empty();
      // Null rows hold no bytes (the Column layout).
      out.offsets.resize(n + 1);
      std::uint64_t total = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (all_valid || out.validity[i]) total += tiles[places[i].tile]->string(places[i].row).size();
        out.offsets[i + 1] = total;
      }
      out.data.resize(total);
      for (std::size_t i = 0; i < n; ++i) {
        if (out.offsets[i + 1] == out.offsets[i]) continue;
        const auto str = tiles[places[i].tile]->string(places[i].row);
        std::memcpy(out.data.data() + out.offsets[i], str.data(), str.size());
      }
      return out;
    }
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64:
    case ColumnType::Float:
    case ColumnType::Double: break;
  }
  // Category codes and numbers: the stored type, or float64 with NaN when a touched tile has nulls.
  bool nulls = false;
  if (schema.kind != ObsKind::Category)
    for (const CellPlace p : places)
      if (tiles[p.tile]->null_count > 0) {
        nulls = true;
        break;
      }
  Column out(nulls ? ColumnType::Double : schema.type);
  out.length = n;
  columnar::visit_value_type(schema.type, [&](auto t) {
    using T = decltype(t);
    if (nulls) gather_as_double<T>(tiles, places, out);
    else gather_values<T>(tiles, places, out);
  });
  return out;
}

std::optional<std::pair<dev_t, ino_t>> file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}

}  // namespace

std::shared_ptr<const ObsCacheFile> open_obs_cache_file(const std::string& path, const ObsColumnSchema& column,
                                                        const Manifest& manifest) {
  auto f = std::make_shared<ObsCacheFile>();
  f->source = io::open_file(path, io::OpenMode::Mmap);
  // A file damaged since it was written fails here, and C9 below rebuilds it.
  const std::uint64_t size = f->source->size();
  if (const std::byte* all = size > 0 ? f->source->view(0, size) : nullptr)
    obs_cache::verify_check(path, std::span(all, static_cast<std::size_t>(size)));
  f->file = columnar::ArrowFile::open(*f->source);
  const auto& file = *f->file;
  const std::string name = quoted(column.name);
  // C7: exactly one field, named after the column, of the stored type.
  if (file.fields().size() != 1)
    throw FormatError("obs cache file of column " + name + " has " + std::to_string(file.fields().size()) +
                          " fields, expected 1 (C7)",
                      path, "schema");
  if (file.fields()[0].name != column.name)
    throw FormatError(
        "obs cache file of column " + name + " has a field named " + quoted(file.fields()[0].name) + " (C7)", path,
        "schema");
  if (file.fields()[0].type != column.type)
    throw FormatError("obs cache file of column " + name + " stores " +
                          std::string(columnar::column_type_name(file.fields()[0].type)) + ", the schema says " +
                          std::string(columnar::column_type_name(column.type)) + " (C7)",
                      path, "schema");
  // C8: one batch per tile with the tile's cells; category codes within the vocabulary.
  const std::uint64_t n_tiles = manifest.n_tiles();
  if (file.num_batches() != n_tiles)
    throw FormatError("obs cache file of column " + name + " has " + std::to_string(file.num_batches()) +
                          " record batches, the dataset has " + std::to_string(n_tiles) + " tiles (C8)",
                      path, "footer");
  f->tiles.resize(n_tiles);
  const std::byte* base = f->source->view(0, f->source->size());
  const auto n_categories = static_cast<std::int64_t>(column.categories.size());
  for (std::uint64_t t = 0; t < n_tiles; ++t) {
    const std::string where = "record batch " + std::to_string(t);
    if (file.batch_length(t) != manifest.tile_cells[t])
      throw FormatError("obs cache file of column " + name + ": record batch " + std::to_string(t) + " has " +
                            std::to_string(file.batch_length(t)) + " rows, tile " + std::to_string(t) + " has " +
                            std::to_string(manifest.tile_cells[t]) + " cells (C8)",
                        path, where);
    const ArrowArrayView& v = file.column(t, 0);
    f->tiles[t] = &v;
    // Every buffer starts at a multiple of 8 in the file (§6.9: messages and body buffers are
    // 8-aligned); a shifted body — a corrupt Block.metaDataLength — fails here.
    for (const auto buffer : {v.validity, v.values, v.data})
      if (!buffer.empty() && base != nullptr && (buffer.data() - base) % 8 != 0)
        throw FormatError("obs cache file of column " + name + ": a buffer of record batch " + std::to_string(t) +
                              " is not 8-byte aligned in the file (C8)",
                          path, where);
    if (column.kind != ObsKind::Category) continue;
    if (v.null_count != 0)
      throw FormatError("obs cache file of column " + name + ": category codes have nulls (C8)", path, where);
    columnar::visit_value_type(column.type, [&](auto type) {
      using T = decltype(type);
      for (std::uint64_t r = 0; r < v.length; ++r) {
        const auto code = static_cast<std::int64_t>(v.value<T>(r));
        if (code < -1 || code >= n_categories)
          throw FormatError("obs cache file of column " + name + ": row " + std::to_string(r) + " has category code " +
                                std::to_string(code) + ", outside -1.." + std::to_string(n_categories - 1) + " (C8)",
                            path, where);
      }
    });
  }
  return f;
}

std::shared_ptr<const ObsCacheFile> ObsStore::Impl::cache_file(const std::string& column) {
  {
    std::lock_guard lock(files_mu);
    if (const auto it = files.find(column); it != files.end()) return it->second;
  }
  const ObsColumnSchema& col = schema.column(column);
  const std::string path = file_path(column);
  std::shared_ptr<const ObsCacheFile> opened;
  for (int attempt = 0;; ++attempt) {
    if (!obs_cache::file_exists(path)) localize({column}, 0);
    const auto identity = file_identity(path);
    try {
      opened = open_obs_cache_file(path, col, manifest);
      break;
    } catch (const Error& e) {
      const bool invalid = dynamic_cast<const FormatError*>(&e) != nullptr ||
                           dynamic_cast<const UnsupportedError*>(&e) != nullptr ||
                           dynamic_cast<const LimitError*>(&e) != nullptr;
      if (!invalid) throw;
      // C9: delete it (unless another process has replaced it meanwhile) and build it once more.
      if (identity && identity == file_identity(path)) ::unlink(path.c_str());
      if (attempt > 0)
        throw FormatError(
            "obs cache file of column " + quoted(column) + " is still invalid after rebuilding it: " + e.what(), path,
            e.structure());
      if (options.warn)
        options.warn("deleted corrupt obs cache file " + path + " (" + e.what() + "); localizing column " +
                     quoted(column) + " again");
    }
  }
  std::lock_guard lock(files_mu);
  return files.emplace(column, std::move(opened)).first->second;
}

std::vector<ObsTakeColumn> ObsStore::take(std::span<const std::int64_t> cells, std::span<const std::string> columns) {
  Impl& s = *impl_;
  const std::uint64_t n_cells = s.manifest.n_cells;
  for (const auto c : cells)
    if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
      throw UsageError("cell " + std::to_string(c) + " outside the valid range [0, " + std::to_string(n_cells) + ")");
  std::vector<std::string> wanted;
  for (const auto& c : columns)
    if (std::find(wanted.begin(), wanted.end(), c) == wanted.end()) wanted.push_back(c);
  s.check_known(wanted);

  // Columns neither open nor on disk are localized first, with a warning (it stalls training).
  std::vector<std::string> missing;
  {
    std::lock_guard lock(s.files_mu);
    for (const auto& c : wanted)
      if (!s.files.contains(c) && !obs_cache::file_exists(s.file_path(c))) missing.push_back(c);
  }
  if (!missing.empty()) {
    s.localize(missing, 0);
    if (s.options.warn)
      s.options.warn(
          "obs columns " + python_list_repr(missing) +
          " were not local and were localized now; localize them before training (tessera cells obs localize)");
  }

  std::vector<std::shared_ptr<const ObsCacheFile>> files;
  files.reserve(wanted.size());
  for (const auto& c : wanted) files.push_back(s.cache_file(c));

  std::vector<CellPlace> places(cells.size());
  const auto& limits = s.limits;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto c = static_cast<std::uint64_t>(cells[i]);
    const auto tile = static_cast<std::size_t>(std::upper_bound(limits.begin(), limits.end(), c) - limits.begin());
    const std::uint64_t first = tile == 0 ? 0 : limits[tile - 1];
    places[i] = {tile, c - first};
  }

  std::vector<ObsTakeColumn> out;
  out.reserve(columns.size());
  for (const auto& name : columns) {
    const std::size_t w = static_cast<std::size_t>(std::find(wanted.begin(), wanted.end(), name) - wanted.begin());
    const ObsColumnSchema& col = s.schema.columns[*s.schema.find(name)];
    ObsTakeColumn result;
    result.name = name;
    result.kind = col.kind;
    result.values = gather(col, *files[w], places);
    if (col.kind == ObsKind::Category) result.categories = col.categories;
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace tessera::cells
