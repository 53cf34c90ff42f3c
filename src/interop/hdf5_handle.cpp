// Shared pieces of the HDF5 room (see hdf5_handle.hpp).
#include "hdf5_handle.hpp"

#include <algorithm>
#include <cstring>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::interop::h5 {

// Threadsafe builds keep the error stack and its auto-print setting per thread.
void quiet() {
  thread_local bool silenced = false;
  if (!silenced) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    silenced = true;
  }
}

// The two innermost descriptions of the current error stack (then cleared).
std::string last_error() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* text = static_cast<std::string*>(data);
        if (e->desc != nullptr && *e->desc != '\0') {
          if (!text->empty()) text->append("; ");
          const std::string_view desc(e->desc);
          text->append(desc.substr(0, desc.find('\n')));  // details (times, flags) follow on later lines
        }
        return n >= 1 ? 1 : 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? std::string("unknown HDF5 error") : out;
}

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  std::string message = path + ": ";
  if (!object.empty()) message += "dataset \"" + object + "\": ";
  throw FormatError(message + what + ": " + last_error(), path, object.empty() ? "HDF5" : object);
}

std::vector<hsize_t> to_hsize(std::span<const std::uint64_t> v) { return {v.begin(), v.end()}; }

bool is_ieee_half(hid_t type) {
  size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  return H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) >= 0 && spos == 15 && epos == 10 && esize == 5 &&
         mpos == 0 && msize == 10;
}

// h5py's bool: an enum over a 1-byte integer with exactly {FALSE: 0, TRUE: 1}.
bool is_h5py_bool(hid_t type) {
  Hid base(H5Tget_super(type), H5Tclose);
  if (!base.valid() || H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) return false;
  if (H5Tget_nmembers(type) != 2) return false;
  for (unsigned i = 0; i < 2; ++i) {
    char* name = H5Tget_member_name(type, i);
    if (name == nullptr) return false;
    const std::string member(name);
    H5free_memory(name);
    signed char value = -1;
    if (H5Tget_member_value(type, i, &value) < 0) return false;
    if (!((member == "FALSE" && value == 0) || (member == "TRUE" && value == 1))) return false;
  }
  return true;
}

namespace {
Hid copy_type(hid_t predefined) { return Hid(H5Tcopy(predefined), H5Tclose); }
}  // namespace

std::optional<ElementType> classify(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      switch (size) {
        case 1:
          return ElementType{is_signed ? DType::I8 : DType::U8,
                             copy_type(is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8)};
        case 2:
          return ElementType{is_signed ? DType::I16 : DType::U16,
                             copy_type(is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16)};
        case 4:
          return ElementType{is_signed ? DType::I32 : DType::U32,
                             copy_type(is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32)};
        case 8:
          return ElementType{is_signed ? DType::I64 : DType::U64,
                             copy_type(is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64)};
        default: return std::nullopt;
      }
    }
    case H5T_FLOAT:
      if (size == 4) return ElementType{DType::F32, copy_type(H5T_NATIVE_FLOAT)};
      if (size == 8) return ElementType{DType::F64, copy_type(H5T_NATIVE_DOUBLE)};
      if (size == 2 && is_ieee_half(type)) {
        // Read the bit patterns as they are, only byte-swapped to little-endian if needed.
        Hid memory(H5Tcopy(type), H5Tclose);
        if (!memory.valid() || H5Tset_order(memory.get(), H5T_ORDER_LE) < 0) return std::nullopt;
        return ElementType{DType::F16, std::move(memory)};
      }
      return std::nullopt;
    case H5T_ENUM:
      if (is_h5py_bool(type)) {
        Hid memory(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose);
        if (!memory.valid()) return std::nullopt;
        return ElementType{DType::Bool, std::move(memory)};
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::vector<std::string> attribute_names(hid_t object) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5Aiterate2(
      object, H5_INDEX_NAME, H5_ITER_INC, &idx,
      [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->emplace_back(name);
        return 0;
      },
      &names);
  H5Eclear2(H5E_DEFAULT);
  return names;
}

std::optional<Attribute> open_attribute(hid_t object, const std::string& name) {
  if (H5Aexists(object, name.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  Attribute a;
  a.attr = Hid(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!a.attr.valid()) return std::nullopt;
  a.type = Hid(H5Aget_type(a.attr.get()), H5Tclose);
  a.space = Hid(H5Aget_space(a.attr.get()), H5Sclose);
  if (!a.type.valid() || !a.space.valid()) return std::nullopt;
  a.points = H5Sget_simple_extent_npoints(a.space.get());
  if (a.points < 1) return std::nullopt;
  return a;
}

// Every element of a string attribute (variable- or fixed-length).
static std::optional<std::vector<std::string>> string_values(const Attribute& a) {
  const auto points = static_cast<std::size_t>(a.points);
  std::vector<std::string> out;
  if (H5Tis_variable_str(a.type.get()) > 0) {
    Hid memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    H5Tset_cset(memory.get(), H5Tget_cset(a.type.get()));
    std::vector<char*> strings(points, nullptr);
    if (H5Aread(a.attr.get(), memory.get(), strings.data()) < 0) return std::nullopt;
    for (const char* s : strings) out.emplace_back(s != nullptr ? s : "");
    H5Dvlen_reclaim(memory.get(), a.space.get(), H5P_DEFAULT, strings.data());
    return out;
  }
  const std::size_t size = H5Tget_size(a.type.get());
  if (size == 0) return std::nullopt;
  std::vector<char> buffer(checked_size(checked_mul(size, points, "attribute size")));
  if (H5Aread(a.attr.get(), a.type.get(), buffer.data()) < 0) return std::nullopt;
  for (std::size_t i = 0; i < points; ++i) {
    const char* at = buffer.data() + i * size;
    std::string one(at, strnlen(at, size));
    if (H5Tget_strpad(a.type.get()) == H5T_STR_SPACEPAD)
      while (!one.empty() && one.back() == ' ') one.pop_back();
    out.push_back(std::move(one));
  }
  return out;
}

std::optional<std::string> string_value(const Attribute& a) {
  auto all = string_values(a);
  if (!all || all->empty()) return std::nullopt;
  return std::move(all->front());
}

std::optional<tet::AttributeValue> typed_attribute(hid_t object, const std::string& name) {
  auto a = open_attribute(object, name);
  if (!a) return std::nullopt;
  const hid_t type = a->type.get();
  const bool scalar = H5Sget_simple_extent_type(a->space.get()) == H5S_SCALAR;
  const auto n = static_cast<std::size_t>(a->points);
  std::optional<tet::AttributeValue> out;
  switch (H5Tget_class(type)) {
    case H5T_STRING:
      if (auto text = string_values(*a)) {
        out = tet::AttributeValue::string({});
        out->text = std::move(*text);
        out->scalar = scalar;
      }
      break;
    case H5T_INTEGER: {
      const std::string bits = std::to_string(8 * H5Tget_size(type));
      if (H5Tget_sign(type) == H5T_SGN_2) {
        std::vector<std::int64_t> v(n);
        if (H5Aread(a->attr.get(), H5T_NATIVE_INT64, v.data()) >= 0)
          out = tet::AttributeValue::signed_integer("int" + bits, std::move(v), scalar);
      } else {
        std::vector<std::uint64_t> v(n);
        if (H5Aread(a->attr.get(), H5T_NATIVE_UINT64, v.data()) >= 0)
          out = tet::AttributeValue::unsigned_integer("uint" + bits, std::move(v), scalar);
      }
      break;
    }
    case H5T_FLOAT: {
      std::vector<double> v(n);
      if (H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, v.data()) >= 0)
        out = tet::AttributeValue::real(H5Tget_size(type) <= 4 ? "float32" : "float64", std::move(v), scalar);
      break;
    }
    case H5T_ENUM:
      if (is_h5py_bool(type)) {
        Hid memory(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose);
        std::vector<signed char> v(n);
        if (memory.valid() && H5Aread(a->attr.get(), memory.get(), v.data()) >= 0)
          out = tet::AttributeValue::signed_integer("bool", std::vector<std::int64_t>(v.begin(), v.end()), scalar);
      }
      break;
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);
  return out;
}

tet::TypedAttributes typed_attributes(hid_t object) {
  // The bookkeeping netCDF-4 and HDF5 dimension scales keep in attributes (xarray hides it too).
  static const std::vector<std::string> kHidden = {"DIMENSION_LIST",      "REFERENCE_LIST", "_Netcdf4Dimid",
                                                   "_Netcdf4Coordinates", "_NCProperties",  "_nc3_strict"};
  const auto dimension_scale = open_attribute(object, "CLASS");
  const bool is_scale = dimension_scale && string_value(*dimension_scale) == "DIMENSION_SCALE";
  tet::TypedAttributes out;
  for (const std::string& name : attribute_names(object)) {
    if (std::find(kHidden.begin(), kHidden.end(), name) != kHidden.end()) continue;
    if (is_scale && (name == "CLASS" || name == "NAME")) continue;
    if (auto value = typed_attribute(object, name)) out.emplace_back(name, std::move(*value));
  }
  return out;
}

}  // namespace tessera::interop::h5
