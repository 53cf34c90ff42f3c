// The morton-hive pieces of the zagg-ragged bindings: a hive's manifest, a leaf's commit stamp,
// the root coverage MOC, leaf paths and the walk that finds leaves (spec zagg-ragged.md §4.7),
// the §7 content hashes, cells ↔ latitude/longitude, and the row split of a distributed build.
// python/tessera/_ragged_hive.py and _ragged_distributed.py build the public functions on these.
// Every call opens a local directory store and runs with the GIL released.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "tessera/io/store.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_walk.hpp"
#include "tessera/ragged/leaf_fields.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/partition.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::python {
namespace {

namespace hive = ragged::hive;

py::dict coverage_dict(const hive::CoverageEnvelope& c) {
  py::dict out;
  out["present"] = c.present;
  out["encoding"] = c.encoding == hive::CoverageEnvelope::Encoding::Bitmap ? "bitmap"
                    : c.encoding == hive::CoverageEnvelope::Encoding::Full ? "full"
                                                                           : "box";
  py::list box;
  for (const auto& slot : c.box) box.append(optional_str(slot));
  out["box"] = box;
  out["cell_order"] = c.cell_order ? py::object(py::int_(*c.cell_order)) : py::object(py::none());
  out["sidecar"] = optional_str(c.sidecar);
  out["nbytes"] = c.nbytes ? py::object(py::int_(*c.nbytes)) : py::object(py::none());
  out["raw_nbytes"] = c.raw_nbytes ? py::object(py::int_(*c.raw_nbytes)) : py::object(py::none());
  out["source"] = optional_str(c.source);
  return out;
}

py::dict hashes(const std::string& path, const std::string& root) {
  ragged::ContentHashes h;
  {
    py::gil_scoped_release release;
    const auto opened = io::open_store(path);
    const io::Store& store = *opened;
    h = ragged::hash_tree(store, root);
  }
  py::dict arrays;
  for (const auto& [k, v] : h.arrays) arrays[py::str(k)] = v;
  py::dict out;
  out["arrays"] = arrays;
  out["combined"] = h.combined;
  return out;
}

py::object commit_stamp(const std::string& path) {
  std::optional<hive::CommitStamp> s;
  {
    py::gil_scoped_release release;
    const auto opened = io::open_store(path);
    const io::Store& store = *opened;
    s = hive::read_commit_stamp(store);
  }
  if (!s) return py::none();
  py::dict out;
  out["spec"] = s->spec;
  out["complete"] = s->complete;
  out["cells_with_data"] = s->cells_with_data ? py::object(py::int_(*s->cells_with_data)) : py::object(py::none());
  out["granule_count"] = s->granule_count ? py::object(py::int_(*s->granule_count)) : py::object(py::none());
  out["written_at"] = optional_str(s->written_at);
  out["window"] = optional_str(s->window);
  out["coverage"] = coverage_dict(s->coverage);
  out["document"] = from_json(s->document);
  return out;
}

py::object manifest(const std::string& path) {
  std::optional<hive::Manifest> m;
  {
    py::gil_scoped_release release;
    const auto opened = io::open_store(path);
    const io::Store& store = *opened;
    m = hive::Manifest::read(store);
  }
  if (!m) return py::none();
  py::dict out;
  out["spec"] = m->spec;
  out["cell_order"] = m->cell_order;
  out["shard_order"] = m->shard_order;
  out["path_grouping"] = m->path_grouping;
  out["document"] = from_json(m->document);
  return out;
}

py::object root_moc(const std::string& path) {
  std::optional<hive::RootMoc> moc;
  {
    py::gil_scoped_release release;
    const auto opened = io::open_store(path);
    const io::Store& store = *opened;
    moc = hive::read_root_moc(store);
  }
  if (!moc) return py::none();
  py::dict out;
  out["order"] = moc->order;
  out["shards"] = moc->shards;
  out["source"] = optional_str(moc->source);
  out["generated_at"] = optional_str(moc->generated_at);
  py::dict times;
  for (const auto& [shard, word] : moc->shard_times) times[py::int_(shard)] = word;
  out["shard_times"] = times;
  out["temporal_fields"] = moc->temporal_fields;
  out["document"] = from_json(moc->document);
  return out;
}

bool exact_occupancy(const std::string& path) {
  py::gil_scoped_release release;
  const auto opened = io::open_store(path);
  const io::Store& store = *opened;
  return ragged::has_exact_occupancy(store);
}

// (path, shard decimal or None, committed) of every leaf the §4.7 walk finds below `path`.
py::list walk_leaves(const std::string& path) {
  std::vector<hive::WalkedLeaf> leaves;
  {
    py::gil_scoped_release release;
    const auto opened = io::open_store(path);
    const io::Store& store = *opened;
    leaves = hive::find_leaves(store);
  }
  py::list out;
  for (const auto& leaf : leaves)
    out.append(py::make_tuple(
        leaf.path, leaf.shard ? py::object(py::str(ragged::morton::to_decimal(*leaf.shard))) : py::object(py::none()),
        leaf.committed));
  return out;
}

using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IdArray = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>;

// NESTED ids at `order` of geodetic points (the build's geocoding, spec §6.4); a point refused by
// the build (non-finite, latitude outside ±90) is a UsageError naming its index, or with
// `refused_as_max` the id 2^64-1 (how the distributed build sets such rows apart).
IdArray cell_of(const DoubleArray& lat, const DoubleArray& lon, int order, const std::string& latitude,
                bool refused_as_max) {
  if (order < 0 || order > 29) throw UsageError("cell order " + std::to_string(order) + " is outside 0…29");
  if (lat.size() != lon.size())
    throw UsageError("lat and lon differ in length (" + std::to_string(lat.size()) + " and " +
                     std::to_string(lon.size()) + ")");
  const auto convention = ragged::geo::parse_latitude(latitude);
  IdArray out(lat.request().shape);
  const double *la = lat.data(), *lo = lon.data();
  std::uint64_t* ids = out.mutable_data();
  std::optional<py::ssize_t> refused;
  {
    py::gil_scoped_release release;
    for (py::ssize_t i = 0; i < lat.size() && !refused; ++i) {
      const auto id = ragged::geo::point_nested29(la[i], lo[i], convention);
      if (id) ids[i] = *id >> (2 * (29 - order));
      else if (refused_as_max) ids[i] = UINT64_MAX;
      else refused = i;
    }
  }
  if (refused)
    throw UsageError("point " + std::to_string(*refused) + ": (" + std::to_string(la[*refused]) + ", " +
                     std::to_string(lo[*refused]) + ") is not a finite latitude in [-90, 90] and longitude");
  return out;
}

// Copies each row of `column` (1-D, `part.size()` rows of any fixed-size dtype) into the array of
// its partition, in one pass: the rows of a partition keep their input order.
py::list scatter_column(const std::string& name, const py::handle& column, const ragged::ShardPartitions& split) {
  const py::array source = py::array::ensure(column, py::array::c_style);
  if (!source || source.ndim() != 1 || static_cast<std::size_t>(source.shape(0)) != split.part.size())
    throw UsageError("column " + name + ": must be one-dimensional with one value per point (" +
                     std::to_string(split.part.size()) + ")");
  if (source.dtype().kind() == 'O') throw UsageError("column " + name + ": holds Python objects, not numbers");
  const auto itemsize = static_cast<std::size_t>(source.itemsize());
  py::list parts;
  std::vector<std::byte*> cursors;
  for (const std::size_t rows : split.sizes) {
    py::array part(source.dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(rows)});
    cursors.push_back(static_cast<std::byte*>(part.mutable_data()));
    parts.append(part);
  }
  const auto* in = static_cast<const std::byte*>(source.data());
  py::gil_scoped_release release;
  for (std::size_t i = 0; i < split.part.size(); ++i) {
    std::byte*& out = cursors[split.part[i]];
    std::memcpy(out, in + i * itemsize, itemsize);
    out += itemsize;
  }
  return parts;
}

// The rows of a distributed build cut by shard (ragged/partition.hpp): a list of
// {name: column} per partition, the occupied shards (NESTED ids) and the refused rows' count.
py::tuple partition_rows(const DoubleArray& lat, const DoubleArray& lon, int shard_order, const std::string& latitude,
                         std::size_t partitions, const py::dict& columns) {
  const auto convention = ragged::geo::parse_latitude(latitude);
  ragged::ShardPartitions split;
  {
    py::gil_scoped_release release;
    split = ragged::partition_by_shard({lat.data(), static_cast<std::size_t>(lat.size())},
                                       {lon.data(), static_cast<std::size_t>(lon.size())}, shard_order, convention,
                                       partitions);
  }
  py::list out;
  for (std::size_t p = 0; p < split.sizes.size(); ++p) out.append(py::dict());
  for (const auto& [name, column] : columns) {
    const py::list parts = scatter_column(py::str(name), column, split);
    for (std::size_t p = 0; p < split.sizes.size(); ++p) out[p].cast<py::dict>()[name] = parts[p];
  }
  IdArray occupied(static_cast<py::ssize_t>(split.occupied.size()));
  std::copy(split.occupied.begin(), split.occupied.end(), occupied.mutable_data());
  return py::make_tuple(out, occupied, split.refused);
}

// Geodetic (lat, lon) degrees of the centres of NESTED cells at `order`.
py::tuple cell_centres(const IdArray& ids, int order, const std::string& latitude) {
  const auto convention = ragged::geo::parse_latitude(latitude);
  DoubleArray lat(ids.request().shape), lon(ids.request().shape);
  const std::uint64_t* in = ids.data();
  double *la = lat.mutable_data(), *lo = lon.mutable_data();
  {
    py::gil_scoped_release release;
    for (py::ssize_t i = 0; i < ids.size(); ++i) {
      const auto centre = ragged::geo::cell_centre(in[i], order, convention);
      la[i] = centre.lat;
      lo[i] = centre.lon;
    }
  }
  return py::make_tuple(lat, lon);
}

// A dense array of a leaf (counts, statistics, per-cell times) whole, as numpy.
py::array read_array(const std::string& path, const std::string& array) {
  std::vector<std::byte> bytes;
  std::vector<py::ssize_t> shape;
  DType dtype = DType::U8;
  {
    py::gil_scoped_release release;
    const auto store = io::open_store(path);
    const auto a = zarr::Array::open(*store, array);
    if (a.data_type().vlen)
      throw UsageError(path + ": " + array +
                       " holds variable-length cells (a ragged field); read it with read_cell or read_raw_values");
    bytes = a.read_all();
    for (const auto extent : a.shape()) shape.push_back(static_cast<py::ssize_t>(extent));
    dtype = a.data_type().dtype;
  }
  return bytes_to_numpy(std::move(bytes), dtype, std::move(shape));
}

}  // namespace

void bind_ragged_hive(py::module_& m) {
  m.def("ragged_read_array", &read_array, py::arg("path"), py::arg("array"));
  m.def("ragged_cell_of", &cell_of, py::arg("lat"), py::arg("lon"), py::arg("order"), py::arg("latitude"),
        py::arg("refused_as_max") = false);
  m.def("ragged_partition_rows", &partition_rows, py::arg("lat"), py::arg("lon"), py::arg("shard_order"),
        py::arg("latitude"), py::arg("partitions"), py::arg("columns"));
  m.def("ragged_cell_centres", &cell_centres, py::arg("cells"), py::arg("order"), py::arg("latitude"));
  m.def("ragged_hashes", &hashes, py::arg("path"), py::arg("root") = "");
  m.def("ragged_commit_stamp", &commit_stamp, py::arg("path"));
  m.def("ragged_manifest", &manifest, py::arg("path"));
  m.def("ragged_root_moc", &root_moc, py::arg("path"));
  m.def("ragged_has_exact_occupancy", &exact_occupancy, py::arg("path"));
  m.def(
      "ragged_leaf_path",
      [](const std::string& shard, int grouping, const std::string& window) {
        return hive::leaf_path(shard, grouping, window);
      },
      py::arg("shard"), py::arg("path_grouping") = 1, py::arg("window") = "");
  m.def(
      "ragged_shard_of_basename", [](const std::string& name) { return hive::shard_of_basename(name); },
      py::arg("name"));
  m.def(
      "ragged_parse_word", [](const std::string& text) { return ragged::morton::parse_word_or_decimal(text); },
      py::arg("text"));
  m.def(
      "ragged_to_decimal", [](std::uint64_t word) { return ragged::morton::to_decimal(word); }, py::arg("word"));
  m.def("ragged_walk_leaves", &walk_leaves, py::arg("path"));
  // The decimal morton words of NESTED ids at `order` (how leaves and reports name shards).
  m.def(
      "ragged_nested_to_decimal",
      [](const IdArray& ids, int order) {
        if (order < 0 || order > 29) throw UsageError("order " + std::to_string(order) + " is outside 0…29");
        std::vector<std::string> out;
        out.reserve(static_cast<std::size_t>(ids.size()));
        for (py::ssize_t i = 0; i < ids.size(); ++i)
          out.push_back(ragged::morton::to_decimal(ragged::morton::from_nested(ids.data()[i], order)));
        return out;
      },
      py::arg("ids"), py::arg("order"));
  m.def(
      "ragged_payload_fields",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return ragged::payload_fields(*io::open_store(path));
      },
      py::arg("path"));
  m.def(
      "ragged_resolve_field",
      [](const std::string& path, const std::string& field) {
        py::gil_scoped_release release;
        return ragged::resolve_field(*io::open_store(path), field);
      },
      py::arg("path"), py::arg("field"));
}

}  // namespace tessera::python
