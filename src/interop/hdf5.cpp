// The HDF5 room: the only code in tessera that includes hdf5.h. It walks an HDF5 file (groups
// recursively, members sorted byte-wise, hard links only, each group once), maps dataset types
// onto tessera's element types (spec tet.md §6.6 "Types", including half floats and h5py's bool
// enum), reads attributes as footer text and CF numbers, resolves CF `coordinates`, and reads
// boxes of a dataset with hyperslab selections.
//
// libhdf5 as Debian builds it is thread-safe (one global lock), so reads from several threads are
// correct but take turns inside the library; a read of exactly one deflate/shuffle chunk therefore
// goes through hdf5_chunk (stored bytes under the lock, decoding outside it). Its automatic error printing is switched
// off on every thread that calls in (library code never prints); failures become FormatError/IoError carrying the
// innermost messages of HDF5's error stack.
#include "hdf5_api.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>

#include "hdf5_chunk.hpp"
#include "hdf5_handle.hpp"
#include "convert_values.hpp"
#include "import_metadata.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/source.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::interop {
namespace {

using h5::Attribute;
using h5::attribute_names;
using h5::classify;
using h5::ElementType;
using h5::fail;
using h5::Hid;
using h5::is_h5py_bool;
using h5::last_error;
using h5::open_attribute;
using h5::quiet;
using h5::string_value;
using h5::to_hsize;

// An attribute's value as footer text, or nullopt for types that are not imported.
std::optional<std::string> attribute_text(hid_t object, const std::string& name) {
  auto a = open_attribute(object, name);
  if (!a) return std::nullopt;
  const hid_t type = a->type.get();
  std::optional<std::string> text;
  switch (H5Tget_class(type)) {
    case H5T_STRING: text = string_value(*a); break;
    case H5T_INTEGER:
      if (a->points != 1) break;
      if (H5Tget_sign(type) == H5T_SGN_2) {
        long long v = 0;
        if (H5Aread(a->attr.get(), H5T_NATIVE_LLONG, &v) >= 0) text = std::to_string(v);
      } else {
        unsigned long long v = 0;
        if (H5Aread(a->attr.get(), H5T_NATIVE_ULLONG, &v) >= 0) text = std::to_string(v);
      }
      break;
    case H5T_FLOAT:
      if (a->points != 1) break;
      if (H5Tget_size(type) <= 4) {
        float v = 0;
        if (H5Aread(a->attr.get(), H5T_NATIVE_FLOAT, &v) >= 0) text = detail::decimal_text(v);
      } else {
        double v = 0;
        if (H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0) text = detail::attribute_number_text(v);
      }
      break;
    case H5T_ENUM:
      if (a->points == 1 && is_h5py_bool(type)) {
        Hid memory(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose);
        signed char v = 0;
        if (memory.valid() && H5Aread(a->attr.get(), memory.get(), &v) >= 0) text = v != 0 ? "true" : "false";
      }
      break;
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);
  return text;
}

struct Number {
  double value = 0;
  bool is_double = false;
};

// A one-element numeric attribute as a double (CF scale_factor, add_offset, _FillValue).
std::optional<Number> attribute_number(hid_t object, const std::string& name) {
  auto a = open_attribute(object, name);
  if (!a || a->points != 1) return std::nullopt;
  const H5T_class_t cls = H5Tget_class(a->type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) return std::nullopt;
  Number n;
  n.is_double = cls == H5T_FLOAT && H5Tget_size(a->type.get()) == 8;
  if (H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, &n.value) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return n;
}

// A numeric attribute of 1 to 16 elements as doubles (CF `missing_value` may be a list); empty
// when absent or not numeric.
std::vector<double> attribute_numbers(hid_t object, const std::string& name) {
  auto a = open_attribute(object, name);
  if (!a || a->points < 1 || a->points > 16) return {};
  const H5T_class_t cls = H5Tget_class(a->type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) return {};
  std::vector<double> values(static_cast<std::size_t>(a->points));
  if (H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, values.data()) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return {};
  }
  return values;
}

// ---- the source ----------------------------------------------------------------------------

struct OpenDataset {
  Hid dataset;
  Hid memory_type;
  std::optional<h5::DirectChunks> direct;  // whole-chunk reads that bypass libhdf5's filters
};

class Hdf5Source final : public ArraySource {
 public:
  explicit Hdf5Source(std::string path) : path_(std::move(path)) {
    quiet();
    (void)io::open_file(path_, io::OpenMode::Pread);  // a missing or unreadable file: IoError naming it
    file_ = Hid(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file_.valid()) fail(path_, "", "cannot open as HDF5");
    Hid root(H5Gopen2(file_.get(), "/", H5P_DEFAULT), H5Gclose);
    if (!root.valid()) fail(path_, "", "cannot open the root group");
    std::set<haddr_t> visited;
    walk(root.get(), "", visited);
    global_attrs_ = h5::typed_attributes(root.get());
  }

  const std::string& path() const override { return path_; }
  const std::vector<SourceArray>& arrays() const override { return arrays_; }
  tet::TypedAttributes global_attributes() const override { return global_attrs_; }

  void read(std::size_t index, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::byte> out) const override {
    quiet();
    const OpenDataset& ds = open_[index];
    if (ds.direct && ds.direct->is_chunk(origin, extent) && ds.direct->read(ds.dataset.get(), origin, extent, out))
      return;
    const auto start = to_hsize(origin);
    const auto count = to_hsize(extent);
    Hid file_space(H5Dget_space(ds.dataset.get()), H5Sclose);
    if (!file_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
      fail(path_, arrays_[index].name, "cannot select the region to read");
    Hid memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    if (!memory_space.valid() || H5Dread(ds.dataset.get(), ds.memory_type.get(), memory_space.get(), file_space.get(),
                                         H5P_DEFAULT, out.data()) < 0)
      fail(path_, arrays_[index].name, "read failed");
  }

 private:
  void walk(hid_t group, const std::string& prefix, std::set<haddr_t>& visited) {
    std::vector<std::string> names;
    hsize_t idx = 0;
    const herr_t rc = H5Literate(
        group, H5_INDEX_NAME, H5_ITER_INC, &idx,
        [](hid_t, const char* name, const H5L_info_t* info, void* data) -> herr_t {
          // Soft and external links are not followed: they may dangle or leave the file.
          if (info->type == H5L_TYPE_HARD) static_cast<std::vector<std::string>*>(data)->emplace_back(name);
          return 0;
        },
        &names);
    if (rc < 0) fail(path_, "", "cannot list group \"" + (prefix.empty() ? std::string("/") : prefix) + "\"");
    std::sort(names.begin(), names.end());  // byte-wise, as the spec orders members
    for (const std::string& name : names) {
      const std::string full = prefix.empty() ? name : prefix + "/" + name;
      H5O_info_t info;
      if (H5Oget_info_by_name2(group, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        fail(path_, "", "cannot inspect \"" + full + "\"");
      if (info.type == H5O_TYPE_GROUP) {
        if (!visited.insert(info.addr).second) continue;  // a group linked twice is walked once
        Hid child(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
        if (!child.valid()) fail(path_, "", "cannot open group \"" + full + "\"");
        walk(child.get(), full, visited);
      } else if (info.type == H5O_TYPE_DATASET) {
        add_dataset(group, name, full);
      }
    }
  }

  void add_dataset(hid_t group, const std::string& name, const std::string& full) {
    if (!detail::valid_footer_string(full)) return;  // not a valid .tet dataset name
    Hid dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset.valid()) fail(path_, full, "cannot open");
    Hid space(H5Dget_space(dataset.get()), H5Sclose);
    if (!space.valid()) fail(path_, full, "cannot read the dataspace");
    if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE) return;  // scalar or null: skipped
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 1 || rank > static_cast<int>(tet::kMaxRank)) return;
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    if (std::find(dims.begin(), dims.end(), hsize_t{0}) != dims.end()) return;
    Hid type(H5Dget_type(dataset.get()), H5Tclose);
    if (!type.valid()) fail(path_, full, "cannot read the datatype");
    auto element = classify(type.get());
    H5Eclear2(H5E_DEFAULT);
    if (!element) return;

    SourceArray array;
    array.name = full;
    array.stored = element->stored;
    array.shape.assign(dims.begin(), dims.end());
    Hid plist(H5Dget_create_plist(dataset.get()), H5Pclose);
    if (plist.valid() && H5Pget_layout(plist.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> chunk(dims.size());
      if (H5Pget_chunk(plist.get(), rank, chunk.data()) == rank) array.chunk_shape.assign(chunk.begin(), chunk.end());
    }
    const hid_t ds = dataset.get();
    array.metadata.attrs =
        detail::collect_attrs(attribute_names(ds), [&](const std::string& n) { return attribute_text(ds, n); });
    array.extension.attrs = h5::typed_attributes(ds);
    if (array.stored != DType::Bool) {
      const auto scale = attribute_number(ds, "scale_factor");
      const auto offset = attribute_number(ds, "add_offset");
      if (scale || offset) {
        CfPacking cf;
        if (scale) cf.scale = scale->value;
        if (offset) cf.offset = offset->value;
        cf.double_precision = (scale && scale->is_double) || (offset && offset->is_double);
        if (const auto fill = attribute_number(ds, "_FillValue")) cf.fill = fill->value;
        array.cf = cf;
      }
    }
    array.missing =
        detail::missing_values_of(array, attribute_numbers(ds, "_FillValue"), attribute_numbers(ds, "missing_value"));
    if (const auto list = attribute_text(ds, "coordinates")) add_coordinates(*list, array.metadata);
    arrays_.push_back(std::move(array));
    auto direct = h5::DirectChunks::plan(dataset.get(), element->memory.get(), arrays_.back().shape);
    open_.push_back({std::move(dataset), std::move(element->memory), std::move(direct)});
  }

  // CF `coordinates = "time lat lon"`: each name resolved as `coordinates/{name}`, else `{name}`
  // (from the root); 1-D datasets of 1..64 numeric values become that axis' labels.
  void add_coordinates(const std::string& list, tet::DatasetMetadata& metadata) const {
    std::istringstream words(list);
    std::string axis;
    while (words >> axis) {
      if (metadata.coords.size() >= tet::MetadataLimits::kCoordAxes) break;
      if (!detail::valid_footer_string(axis)) continue;
      for (const std::string& candidate : {"coordinates/" + axis, axis}) {
        if (auto labels = coordinate_labels(candidate)) {
          metadata.coords[axis] = std::move(*labels);
          break;
        }
      }
    }
    H5Eclear2(H5E_DEFAULT);
  }

  std::optional<std::vector<std::string>> coordinate_labels(const std::string& link) const {
    // Every component must exist before the object can be asked about (H5Lexists rule).
    std::string partial;
    std::istringstream parts(link);
    for (std::string part; std::getline(parts, part, '/');) {
      if (part.empty() || part == "." || part == "..") return std::nullopt;
      partial += (partial.empty() ? "" : "/") + part;
      if (H5Lexists(file_.get(), partial.c_str(), H5P_DEFAULT) <= 0) return std::nullopt;
    }
    H5O_info_t info;
    if (H5Oget_info_by_name2(file_.get(), link.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
        info.type != H5O_TYPE_DATASET)
      return std::nullopt;
    Hid dataset(H5Dopen2(file_.get(), link.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset.valid()) return std::nullopt;
    Hid space(H5Dget_space(dataset.get()), H5Sclose);
    if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1) return std::nullopt;
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0 || !detail::label_count_ok(static_cast<std::uint64_t>(n))) return std::nullopt;
    Hid type(H5Dget_type(dataset.get()), H5Tclose);
    auto element = type.valid() ? classify(type.get()) : std::nullopt;
    if (!element) return std::nullopt;
    std::vector<std::byte> values(static_cast<std::size_t>(n) * dtype_size(element->stored));
    if (H5Dread(dataset.get(), element->memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      return std::nullopt;
    return detail::labels_of(element->stored, values);
  }

  std::string path_;
  Hid file_;  // declared first: closed after every dataset below
  tet::TypedAttributes global_attrs_;
  std::vector<SourceArray> arrays_;
  std::vector<OpenDataset> open_;
};

}  // namespace

std::unique_ptr<ArraySource> open_hdf5_source(const std::string& path) { return std::make_unique<Hdf5Source>(path); }

}  // namespace tessera::interop
