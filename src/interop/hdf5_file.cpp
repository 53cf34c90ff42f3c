// Path-based HDF5 reads (see hdf5_file.hpp): object kinds, string and integer attributes,
// dataset boxes converted to int64 or double with overflow refused, and string datasets.
#include "tessera/interop/hdf5_file.hpp"

#include <cstring>
#include <optional>
#include <sstream>

#include "hdf5_chunk.hpp"
#include "hdf5_handle.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::interop {

using h5::fail;
using h5::Hid;

namespace {

// Fixed-length HDF5 strings of `size` bytes each: NUL-terminated or -padded, and with space
// padding also stripped of trailing spaces.
void append_fixed_strings(const std::vector<char>& buffer, std::size_t size, bool space_padded,
                          std::vector<std::string>& out) {
  for (std::size_t at = 0; at + size <= buffer.size(); at += size) {
    const char* p = buffer.data() + at;
    std::string s(p, strnlen(p, size));
    if (space_padded)
      while (!s.empty() && s.back() == ' ') s.pop_back();
    out.push_back(std::move(s));
  }
}

std::string relative(const std::string& object) {
  std::size_t i = 0;
  while (i < object.size() && object[i] == '/') ++i;
  return object.substr(i);
}

// A conversion to int64 that would leave the type's range aborts the read instead of clipping.
H5T_conv_ret_t refuse_out_of_range(H5T_conv_except_t kind, hid_t, hid_t, void*, void*, void*) {
  return kind == H5T_CONV_EXCEPT_RANGE_HI || kind == H5T_CONV_EXCEPT_RANGE_LOW ? H5T_CONV_ABORT : H5T_CONV_UNHANDLED;
}

Hdf5Element element_of(hid_t type) {
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return Hdf5Element::Integer;
    case H5T_STRING: return Hdf5Element::String;
    case H5T_FLOAT: return h5::classify(type) ? Hdf5Element::Float : Hdf5Element::Other;
    case H5T_ENUM: return h5::is_h5py_bool(type) ? Hdf5Element::Bool : Hdf5Element::Other;
    default: return Hdf5Element::Other;
  }
}

}  // namespace

struct Hdf5File::Impl {
  std::string path;
  Hid file;
};

struct Hdf5Dataset::Impl {
  std::shared_ptr<const void> keep_file;  // the file stays open while the dataset is
  std::string path;
  std::string name;
  Hid dataset, type;
  std::vector<std::uint64_t> shape;
  Hdf5Element element = Hdf5Element::Other;
  // Reads as double that decode whole chunks outside libhdf5 (hdf5_chunk.hpp), planned on the
  // first such read; nullopt when the dataset does not qualify.
  mutable bool direct_planned = false;
  mutable std::optional<h5::DirectBoxReader> direct;

  // Selects the box in the file and a matching memory space; false when the box is empty.
  bool select(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent, std::size_t out_size,
              Hid& file_space, Hid& memory_space) const {
    if (origin.size() != shape.size() || extent.size() != shape.size())
      throw UsageError(path + ": dataset \"" + name + "\": box rank differs from the dataset's");
    std::uint64_t count = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (extent[d] > shape[d] || origin[d] > shape[d] - extent[d])
        throw UsageError(path + ": dataset \"" + name + "\": box outside the dataset");
      count = checked_mul(count, extent[d], "box size");
    }
    if (count != out_size) throw UsageError(path + ": dataset \"" + name + "\": output size differs from the box");
    if (count == 0) return false;
    file_space = Hid(H5Dget_space(dataset.get()), H5Sclose);
    if (shape.empty()) return file_space.valid();  // a scalar: the whole space
    const auto start = h5::to_hsize(origin);
    const auto size = h5::to_hsize(extent);
    if (!file_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr) < 0)
      fail(path, name, "cannot select the region to read");
    memory_space = Hid(H5Screate_simple(static_cast<int>(size.size()), size.data(), nullptr), H5Sclose);
    if (!memory_space.valid()) fail(path, name, "cannot create the memory space");
    return true;
  }

  void read_raw(hid_t memory_type, const Hid& file_space, const Hid& memory_space, void* out, hid_t xfer) const {
    const hid_t ms = shape.empty() ? H5S_ALL : memory_space.get();
    const hid_t fs = shape.empty() ? H5S_ALL : file_space.get();
    if (H5Dread(dataset.get(), memory_type, ms, fs, xfer, out) < 0) fail(path, name, "read failed");
  }
};

Hdf5Dataset::Hdf5Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Hdf5Dataset::~Hdf5Dataset() = default;
Hdf5Dataset::Hdf5Dataset(Hdf5Dataset&&) noexcept = default;
Hdf5Dataset& Hdf5Dataset::operator=(Hdf5Dataset&&) noexcept = default;

const std::string& Hdf5Dataset::name() const { return impl_->name; }
const std::vector<std::uint64_t>& Hdf5Dataset::shape() const { return impl_->shape; }
Hdf5Element Hdf5Dataset::element() const { return impl_->element; }

std::string Hdf5Dataset::type_name() const {
  const hid_t type = impl_->type.get();
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_2 ? "int" : "uint") + bits;
    case H5T_FLOAT: return "float" + bits;
    case H5T_STRING: return "string";
    case H5T_ENUM: return impl_->element == Hdf5Element::Bool ? "bool" : "enum";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_OPAQUE: return "opaque";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "vlen";
    default: return "unknown type";
  }
}

void Hdf5Dataset::read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                       std::span<std::int64_t> out) const {
  h5::quiet();
  const Impl& m = *impl_;
  if (m.element != Hdf5Element::Integer && m.element != Hdf5Element::Bool)
    throw FormatError(m.path + ": dataset \"" + m.name + "\": holds " + type_name() + ", not integers", m.path, m.name);
  Hid file_space, memory_space;
  if (!m.select(origin, extent, out.size(), file_space, memory_space)) return;
  if (m.element == Hdf5Element::Bool) {
    Hid memory(H5Tget_native_type(m.type.get(), H5T_DIR_ASCEND), H5Tclose);
    if (!memory.valid()) fail(m.path, m.name, "cannot build the memory type");
    std::vector<std::int8_t> bytes(out.size());
    m.read_raw(memory.get(), file_space, memory_space, bytes.data(), H5P_DEFAULT);
    for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = bytes[i];
    return;
  }
  Hid xfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (!xfer.valid() || H5Pset_type_conv_cb(xfer.get(), refuse_out_of_range, nullptr) < 0)
    fail(m.path, m.name, "cannot set up the transfer");
  const hid_t ms = m.shape.empty() ? H5S_ALL : memory_space.get();
  const hid_t fs = m.shape.empty() ? H5S_ALL : file_space.get();
  if (H5Dread(m.dataset.get(), H5T_NATIVE_INT64, ms, fs, xfer.get(), out.data()) < 0)
    fail(m.path, m.name, "read failed (a value may exceed the int64 range)");
}

void Hdf5Dataset::read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                       std::span<double> out) const {
  h5::quiet();
  const Impl& m = *impl_;
  if (m.element != Hdf5Element::Integer && m.element != Hdf5Element::Float)
    throw FormatError(m.path + ": dataset \"" + m.name + "\": holds " + type_name() + ", not numbers", m.path, m.name);
  Hid file_space, memory_space;
  if (!m.select(origin, extent, out.size(), file_space, memory_space)) return;
  if (!m.direct_planned) {
    m.direct = h5::DirectBoxReader::plan(m.dataset.get(), m.type.get(), m.shape);
    m.direct_planned = true;
  }
  // libhdf5 inflates with zlib under its global lock; the direct path with ISA-L, several times
  // faster (a granule's columns are gzip-compressed). Whatever it cannot do, H5Dread does.
  if (m.direct && m.direct->read(m.dataset.get(), origin, extent, out)) return;
  m.read_raw(H5T_NATIVE_DOUBLE, file_space, memory_space, out.data(), H5P_DEFAULT);
}

void Hdf5Dataset::read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                       std::span<std::uint64_t> out) const {
  h5::quiet();
  const Impl& m = *impl_;
  if (m.element != Hdf5Element::Integer)
    throw FormatError(m.path + ": dataset \"" + m.name + "\": holds " + type_name() + ", not integers", m.path, m.name);
  Hid file_space, memory_space;
  if (!m.select(origin, extent, out.size(), file_space, memory_space)) return;
  Hid xfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (!xfer.valid() || H5Pset_type_conv_cb(xfer.get(), refuse_out_of_range, nullptr) < 0)
    fail(m.path, m.name, "cannot set up the transfer");
  const hid_t ms = m.shape.empty() ? H5S_ALL : memory_space.get();
  const hid_t fs = m.shape.empty() ? H5S_ALL : file_space.get();
  if (H5Dread(m.dataset.get(), H5T_NATIVE_UINT64, ms, fs, xfer.get(), out.data()) < 0)
    fail(m.path, m.name, "read failed (a value may be negative)");
}

std::vector<std::string> Hdf5Dataset::read_strings(std::uint64_t first, std::uint64_t count) const {
  h5::quiet();
  const Impl& m = *impl_;
  if (m.element != Hdf5Element::String || m.shape.size() != 1)
    throw FormatError(m.path + ": dataset \"" + m.name + "\": holds " + type_name() + ", not a list of strings", m.path,
                      m.name);
  const std::uint64_t origin[1] = {first};
  const std::uint64_t extent[1] = {count};
  Hid file_space, memory_space;
  std::vector<std::string> out;
  if (!m.select(origin, extent, static_cast<std::size_t>(count), file_space, memory_space)) return out;
  out.reserve(static_cast<std::size_t>(count));
  if (H5Tis_variable_str(m.type.get()) > 0) {
    Hid memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!memory.valid() || H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(memory.get(), H5Tget_cset(m.type.get())) < 0)
      fail(m.path, m.name, "cannot build the string type");
    std::vector<char*> strings(static_cast<std::size_t>(count), nullptr);
    m.read_raw(memory.get(), file_space, memory_space, strings.data(), H5P_DEFAULT);
    for (char* s : strings) out.emplace_back(s != nullptr ? s : "");
    H5Dvlen_reclaim(memory.get(), memory_space.get(), H5P_DEFAULT, strings.data());
    return out;
  }
  const std::size_t size = H5Tget_size(m.type.get());
  if (size == 0) fail(m.path, m.name, "string type of size 0");
  std::vector<char> buffer(checked_size(checked_mul(size, count, "string data size")));
  m.read_raw(m.type.get(), file_space, memory_space, buffer.data(), H5P_DEFAULT);
  append_fixed_strings(buffer, size, H5Tget_strpad(m.type.get()) == H5T_STR_SPACEPAD, out);
  return out;
}

Hdf5File::Hdf5File(const std::string& path) : impl_(std::make_shared<Impl>()) {
  h5::quiet();
  impl_->path = path;
  (void)io::open_file(path, io::OpenMode::Pread);  // a missing or unreadable file: IoError naming it
  impl_->file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) fail(path, "", "cannot open as HDF5");
}

Hdf5File::~Hdf5File() = default;
Hdf5File::Hdf5File(Hdf5File&&) noexcept = default;
Hdf5File& Hdf5File::operator=(Hdf5File&&) noexcept = default;

const std::string& Hdf5File::path() const { return impl_->path; }

Hdf5Kind Hdf5File::kind(const std::string& object) const {
  h5::quiet();
  const std::string rel = relative(object);
  if (rel.empty()) return Hdf5Kind::Group;
  // Every component must exist before the object can be asked about (H5Lexists rule).
  std::string partial;
  std::istringstream parts(rel);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty() || part == "." || part == "..") return Hdf5Kind::Missing;
    partial += (partial.empty() ? "" : "/") + part;
    if (H5Lexists(impl_->file.get(), partial.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return Hdf5Kind::Missing;
    }
  }
  H5O_info_t info;
  if (H5Oget_info_by_name2(impl_->file.get(), rel.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return Hdf5Kind::Missing;  // a dangling soft or external link
  }
  if (info.type == H5O_TYPE_GROUP) return Hdf5Kind::Group;
  if (info.type == H5O_TYPE_DATASET) return Hdf5Kind::Dataset;
  return Hdf5Kind::Other;
}

std::vector<std::string> Hdf5File::members(const std::string& group) const {
  h5::quiet();
  const std::string rel = relative(group);
  Hid g(H5Gopen2(impl_->file.get(), rel.empty() ? "/" : rel.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail(impl_->path, "", "cannot open group \"" + group + "\"");
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (H5Literate(
          g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx,
          [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
            static_cast<std::vector<std::string>*>(data)->emplace_back(name);
            return 0;
          },
          &names) < 0)
    fail(impl_->path, "", "cannot list group \"" + group + "\"");
  return names;
}

namespace {

std::optional<h5::Attribute> attribute_of(hid_t file, const std::string& object, const std::string& name) {
  const std::string rel = relative(object);
  Hid o(H5Oopen(file, rel.empty() ? "/" : rel.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  auto a = h5::open_attribute(o.get(), name);
  H5Eclear2(H5E_DEFAULT);
  return a;
}

}  // namespace

std::optional<std::string> Hdf5File::string_attribute(const std::string& object, const std::string& name) const {
  h5::quiet();
  auto a = attribute_of(impl_->file.get(), object, name);
  if (!a || H5Tget_class(a->type.get()) != H5T_STRING) return std::nullopt;
  auto value = h5::string_value(*a);
  H5Eclear2(H5E_DEFAULT);
  return value;
}

std::optional<std::vector<std::string>> Hdf5File::string_list_attribute(const std::string& object,
                                                                        const std::string& name) const {
  h5::quiet();
  auto a = attribute_of(impl_->file.get(), object, name);
  if (!a) {
    // Present but without elements (h5py stores an empty list as an empty float64 array).
    const std::string rel = relative(object);
    const htri_t exists =
        H5Aexists_by_name(impl_->file.get(), rel.empty() ? "/" : rel.c_str(), name.c_str(), H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    if (exists > 0) return std::vector<std::string>{};
    return std::nullopt;
  }
  if (H5Tget_class(a->type.get()) != H5T_STRING) return std::nullopt;
  const auto points = static_cast<std::size_t>(a->points);
  std::vector<std::string> out;
  out.reserve(points);
  if (H5Tis_variable_str(a->type.get()) > 0) {
    Hid memory(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!memory.valid() || H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(memory.get(), H5Tget_cset(a->type.get())) < 0)
      fail(impl_->path, object, "cannot build the string type of attribute '" + name + "'");
    std::vector<char*> strings(points, nullptr);
    if (H5Aread(a->attr.get(), memory.get(), strings.data()) < 0)
      fail(impl_->path, object, "cannot read attribute '" + name + "'");
    for (char* s : strings) out.emplace_back(s != nullptr ? s : "");
    H5Dvlen_reclaim(memory.get(), a->space.get(), H5P_DEFAULT, strings.data());
    return out;
  }
  const std::size_t size = H5Tget_size(a->type.get());
  if (size == 0) return std::nullopt;
  std::vector<char> buffer(checked_size(checked_mul(size, points, "attribute size")));
  if (H5Aread(a->attr.get(), a->type.get(), buffer.data()) < 0)
    fail(impl_->path, object, "cannot read attribute '" + name + "'");
  append_fixed_strings(buffer, size, H5Tget_strpad(a->type.get()) == H5T_STR_SPACEPAD, out);
  return out;
}

std::optional<std::string> Hdf5File::referenced_object(const std::string& object, const std::string& name) const {
  h5::quiet();
  auto a = attribute_of(impl_->file.get(), object, name);
  if (!a || a->points != 1 || H5Tget_class(a->type.get()) != H5T_REFERENCE ||
      H5Tequal(a->type.get(), H5T_STD_REF_OBJ) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  hobj_ref_t ref{};
  if (H5Aread(a->attr.get(), H5T_STD_REF_OBJ, &ref) < 0)
    fail(impl_->path, object, "cannot read attribute '" + name + "'");
  const ssize_t length = H5Rget_name(impl_->file.get(), H5R_OBJECT, &ref, nullptr, 0);
  if (length <= 0) fail(impl_->path, object, "attribute '" + name + "' references no object with a name");
  std::string target(static_cast<std::size_t>(length) + 1, '\0');
  if (H5Rget_name(impl_->file.get(), H5R_OBJECT, &ref, target.data(), target.size()) < 0)
    fail(impl_->path, object, "cannot resolve attribute '" + name + "'");
  target.resize(static_cast<std::size_t>(length));
  return relative(target);
}

std::optional<std::vector<std::int64_t>> Hdf5File::integer_attribute(const std::string& object,
                                                                     const std::string& name) const {
  h5::quiet();
  constexpr hssize_t kMaxPoints = 1 << 16;  // shapes and small lists; anything longer is not one
  auto a = attribute_of(impl_->file.get(), object, name);
  if (!a || H5Tget_class(a->type.get()) != H5T_INTEGER || a->points > kMaxPoints) return std::nullopt;
  std::vector<std::int64_t> values(static_cast<std::size_t>(a->points));
  if (H5Aread(a->attr.get(), H5T_NATIVE_INT64, values.data()) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return values;
}

std::optional<double> Hdf5File::number_attribute(const std::string& object, const std::string& name) const {
  h5::quiet();
  auto a = attribute_of(impl_->file.get(), object, name);
  if (!a || a->points != 1) return std::nullopt;
  const H5T_class_t type_class = H5Tget_class(a->type.get());
  if (type_class != H5T_FLOAT && type_class != H5T_INTEGER) return std::nullopt;
  double value = 0;
  if (H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, &value) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return value;
}

Hdf5Dataset Hdf5File::dataset(const std::string& object) const {
  h5::quiet();
  const std::string& path = impl_->path;
  const std::string rel = relative(object);
  if (kind(rel) != Hdf5Kind::Dataset) throw FormatError(path + ": \"" + rel + "\" is not a dataset", path, rel);
  auto d = std::make_unique<Hdf5Dataset::Impl>();
  d->keep_file = impl_;
  d->path = path;
  d->name = rel;
  d->dataset = Hid(H5Dopen2(impl_->file.get(), rel.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d->dataset.valid()) fail(path, rel, "cannot open");
  d->type = Hid(H5Dget_type(d->dataset.get()), H5Tclose);
  if (!d->type.valid()) fail(path, rel, "cannot read the datatype");
  d->element = element_of(d->type.get());
  Hid space(H5Dget_space(d->dataset.get()), H5Sclose);
  if (!space.valid()) fail(path, rel, "cannot read the dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(path, rel, "cannot read the dataspace");
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL)
    throw FormatError(path + ": dataset \"" + rel + "\": has no elements (null dataspace)", path, rel);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    fail(path, rel, "cannot read the dataspace");
  d->shape.assign(dims.begin(), dims.end());
  Hid plist(H5Dget_create_plist(d->dataset.get()), H5Pclose);
  if (!plist.valid()) fail(path, rel, "cannot read the creation properties");
  const int n_filters = H5Pget_nfilters(plist.get());
  for (int i = 0; i < n_filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t n_values = 0;
    char name[64] = {0};
    const H5Z_filter_t id =
        H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &n_values, nullptr, sizeof name, name, &config);
    if (id < 0) fail(path, rel, "cannot read filter " + std::to_string(i));
    if (H5Zfilter_avail(id) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw UnsupportedError(path + ": dataset \"" + rel + "\": compressed with HDF5 filter " + std::to_string(id) +
                                 (name[0] != '\0' ? " (" + std::string(name) + ")" : std::string()) +
                                 ", which this libhdf5 does not have",
                             path, rel);
    }
  }
  return Hdf5Dataset(std::move(d));
}

}  // namespace tessera::interop
