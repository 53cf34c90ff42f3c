// The NetCDF room: NetCDF-3 (classic, 64-bit offset, CDF-5) and NetCDF-4 files through libnetcdf.
// Walks a file's variables (a group's variables sorted by name, then its subgroups sorted by
// name), maps NetCDF types onto tessera's element types (spec tet.md §6.6, including the unsigned
// types the reference skips, A2), reads attributes as footer text and CF numbers, dimension names
// and a 1-D variable's own values as its coordinate labels, and reads boxes with nc_get_vara.
//
// libnetcdf is not thread-safe: every call into it holds one process-wide mutex, so parallel tile
// readers take turns here (the decoding of HDF5 chunks inside libnetcdf included).
#include "netcdf_api.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "convert_values.hpp"
#include "import_metadata.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/source.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::interop {
namespace {

std::mutex& library_mutex() {
  static std::mutex m;
  return m;
}

std::optional<DType> element_type(nc_type type) {
  switch (type) {
    case NC_BYTE: return DType::I8;
    case NC_UBYTE: return DType::U8;
    case NC_SHORT: return DType::I16;
    case NC_USHORT: return DType::U16;
    case NC_INT: return DType::I32;
    case NC_UINT: return DType::U32;
    case NC_INT64: return DType::I64;
    case NC_UINT64: return DType::U64;
    case NC_FLOAT: return DType::F32;
    case NC_DOUBLE: return DType::F64;
    default: return std::nullopt;  // NC_CHAR, NC_STRING, user-defined types
  }
}

struct Variable {
  int group = 0;
  int id = 0;
};

class NetCdfSource final : public ArraySource {
 public:
  explicit NetCdfSource(std::string path) : path_(std::move(path)) {
    (void)io::open_file(path_, io::OpenMode::Pread);  // a missing or unreadable file: IoError naming it
    std::lock_guard lock(library_mutex());
    check(nc_open(path_.c_str(), NC_NOWRITE, &ncid_), "", "cannot open as NetCDF");
    open_ = true;
    try {
      walk(ncid_, "");
      global_attrs_ = typed_attributes(ncid_, NC_GLOBAL);
    } catch (...) {
      nc_close(ncid_);  // the destructor does not run when construction fails
      open_ = false;
      throw;
    }
  }

  ~NetCdfSource() override {
    std::lock_guard lock(library_mutex());
    if (open_) nc_close(ncid_);
  }

  const std::string& path() const override { return path_; }
  const std::vector<SourceArray>& arrays() const override { return arrays_; }
  tet::TypedAttributes global_attributes() const override { return global_attrs_; }

  void read(std::size_t index, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::byte> out) const override {
    const std::vector<std::size_t> start(origin.begin(), origin.end());
    const std::vector<std::size_t> count(extent.begin(), extent.end());
    std::lock_guard lock(library_mutex());
    const Variable& v = variables_[index];
    check(nc_get_vara(v.group, v.id, start.data(), count.data(), out.data()), arrays_[index].name, "read failed");
  }

 private:
  void check(int status, const std::string& variable, const std::string& what) const {
    if (status == NC_NOERR) return;
    std::string message = path_ + ": ";
    if (!variable.empty()) message += "variable \"" + variable + "\": ";
    message += what + ": " + nc_strerror(status);
    if (status == NC_EPERM || status == NC_ENOMEM) throw IoError(message, path_, variable);
    throw FormatError(message, path_, variable.empty() ? "NetCDF" : variable);
  }

  static std::string name_of_group(int group) {
    char name[NC_MAX_NAME + 1] = {};
    return nc_inq_grpname(group, name) == NC_NOERR ? std::string(name) : std::string();
  }

  void walk(int group, const std::string& prefix) {
    int nvars = 0;
    check(nc_inq_varids(group, &nvars, nullptr), "", "cannot list variables");
    std::vector<int> ids(static_cast<std::size_t>(nvars));
    if (nvars > 0) check(nc_inq_varids(group, &nvars, ids.data()), "", "cannot list variables");
    std::vector<std::pair<std::string, int>> vars;
    for (const int id : ids) {
      char name[NC_MAX_NAME + 1] = {};
      check(nc_inq_varname(group, id, name), "", "cannot read a variable name");
      vars.emplace_back(name, id);
    }
    std::sort(vars.begin(), vars.end());
    for (const auto& [name, id] : vars) add_variable(group, id, name, prefix.empty() ? name : prefix + "/" + name);

    int ngroups = 0;
    check(nc_inq_grps(group, &ngroups, nullptr), "", "cannot list groups");
    std::vector<int> groups(static_cast<std::size_t>(ngroups));
    if (ngroups > 0) check(nc_inq_grps(group, &ngroups, groups.data()), "", "cannot list groups");
    std::vector<std::pair<std::string, int>> named;
    named.reserve(groups.size());
    for (const int g : groups) named.emplace_back(name_of_group(g), g);
    std::sort(named.begin(), named.end());
    for (const auto& [name, g] : named) walk(g, prefix.empty() ? name : prefix + "/" + name);
  }

  void add_variable(int group, int id, const std::string& leaf, const std::string& full) {
    if (!detail::valid_footer_string(full)) return;
    nc_type type = NC_NAT;
    int ndims = 0;
    check(nc_inq_var(group, id, nullptr, &type, &ndims, nullptr, nullptr), full, "cannot inspect");
    const auto stored = element_type(type);
    if (!stored || ndims < 1 || ndims > static_cast<int>(tet::kMaxRank)) return;  // scalars skipped
    std::vector<int> dimids(static_cast<std::size_t>(ndims));
    check(nc_inq_vardimid(group, id, dimids.data()), full, "cannot read dimensions");

    SourceArray array;
    array.name = full;
    array.stored = *stored;
    std::vector<std::string> dim_names;
    for (const int dim : dimids) {
      std::size_t len = 0;
      char name[NC_MAX_NAME + 1] = {};
      check(nc_inq_dim(group, dim, name, &len), full, "cannot read a dimension");
      if (len == 0) return;  // empty (e.g. an unlimited dimension with no records yet)
      array.shape.push_back(len);
      dim_names.emplace_back(name);
    }
    int storage = NC_CONTIGUOUS;
    std::vector<std::size_t> chunks(dimids.size(), 0);
    if (nc_inq_var_chunking(group, id, &storage, chunks.data()) == NC_NOERR && storage == NC_CHUNKED)
      array.chunk_shape.assign(chunks.begin(), chunks.end());

    array.metadata.attrs = detail::collect_attrs(attribute_names(group, id),
                                                 [&](const std::string& n) { return attribute_text(group, id, n); });
    array.extension.attrs = typed_attributes(group, id);
    array.metadata.dim_names = detail::limited_dim_names(std::move(dim_names));
    array.cf = cf_packing(group, id, *stored);
    array.missing = detail::missing_values_of(array, attribute_numbers(group, id, "_FillValue"),
                                              attribute_numbers(group, id, "missing_value"));
    if (array.shape.size() == 1 && detail::label_count_ok(array.shape[0]) && detail::valid_footer_string(leaf)) {
      std::vector<std::byte> values(checked_size(array.shape[0] * dtype_size(*stored)));
      if (nc_get_var(group, id, values.data()) == NC_NOERR)
        if (auto labels = detail::labels_of(*stored, values)) array.metadata.coords[leaf] = std::move(*labels);
    }
    arrays_.push_back(std::move(array));
    variables_.push_back({group, id});
  }

  static std::vector<std::string> attribute_names(int group, int id) {
    int natts = 0;
    std::vector<std::string> names;
    if (nc_inq_varnatts(group, id, &natts) != NC_NOERR) return names;
    for (int i = 0; i < natts; ++i) {
      char name[NC_MAX_NAME + 1] = {};
      if (nc_inq_attname(group, id, i, name) == NC_NOERR) names.emplace_back(name);
    }
    return names;
  }

  // Text for strings (a string array's first element) and one-element numbers; nullopt otherwise.
  static std::optional<std::string> attribute_text(int group, int id, const std::string& name) {
    nc_type type = NC_NAT;
    std::size_t len = 0;
    if (nc_inq_att(group, id, name.c_str(), &type, &len) != NC_NOERR || len == 0) return std::nullopt;
    if (type == NC_CHAR) {
      std::string text(len, '\0');
      if (nc_get_att_text(group, id, name.c_str(), text.data()) != NC_NOERR) return std::nullopt;
      text.resize(strnlen(text.data(), text.size()));
      return text;
    }
    if (type == NC_STRING) {
      std::vector<char*> strings(len, nullptr);
      if (nc_get_att_string(group, id, name.c_str(), strings.data()) != NC_NOERR) return std::nullopt;
      std::string first = strings[0] != nullptr ? std::string(strings[0]) : std::string();
      nc_free_string(len, strings.data());
      return first;
    }
    if (len != 1 || !element_type(type)) return std::nullopt;
    switch (type) {
      case NC_FLOAT: {
        float v = 0;
        if (nc_get_att_float(group, id, name.c_str(), &v) != NC_NOERR) return std::nullopt;
        return detail::decimal_text(v);
      }
      case NC_DOUBLE: {
        double v = 0;
        if (nc_get_att_double(group, id, name.c_str(), &v) != NC_NOERR) return std::nullopt;
        return detail::attribute_number_text(v);
      }
      case NC_UINT64: {
        unsigned long long v = 0;
        if (nc_get_att_ulonglong(group, id, name.c_str(), &v) != NC_NOERR) return std::nullopt;
        return std::to_string(v);
      }
      default: {
        long long v = 0;
        if (nc_get_att_longlong(group, id, name.c_str(), &v) != NC_NOERR) return std::nullopt;
        return std::to_string(v);
      }
    }
  }

  // A one-element numeric attribute as a double, and whether it is stored as a double.
  static std::optional<std::pair<double, bool>> attribute_number(int group, int id, const char* name) {
    nc_type type = NC_NAT;
    std::size_t len = 0;
    if (nc_inq_att(group, id, name, &type, &len) != NC_NOERR || len != 1 || !element_type(type)) return std::nullopt;
    double v = 0;
    if (nc_get_att_double(group, id, name, &v) != NC_NOERR) return std::nullopt;
    return std::pair{v, type == NC_DOUBLE};
  }

  // A numeric attribute of 1 to 16 elements as doubles (CF `missing_value` may be a list); empty
  // when absent or not numeric.
  static std::vector<double> attribute_numbers(int group, int id, const char* name) {
    nc_type type = NC_NAT;
    std::size_t len = 0;
    if (nc_inq_att(group, id, name, &type, &len) != NC_NOERR || len < 1 || len > 16 || !element_type(type)) return {};
    std::vector<double> values(len);
    if (nc_get_att_double(group, id, name, values.data()) != NC_NOERR) return {};
    return values;
  }

  static std::optional<CfPacking> cf_packing(int group, int id, DType stored) {
    const auto scale = attribute_number(group, id, "scale_factor");
    const auto offset = attribute_number(group, id, "add_offset");
    if (!scale && !offset) return std::nullopt;
    CfPacking cf;
    if (scale) cf.scale = scale->first;
    if (offset) cf.offset = offset->first;
    cf.double_precision = (scale && scale->second) || (offset && offset->second);
    if (const auto fill = attribute_number(group, id, "_FillValue")) {
      cf.fill = fill->first;
    } else if (stored == DType::F32 || stored == DType::F64) {
      // Float storage without the attribute: the variable's (default) fill value, as the
      // reference and netCDF4-python mask it.
      int no_fill = 0;
      double as_double = 0;
      float as_float = 0;
      void* buffer = stored == DType::F32 ? static_cast<void*>(&as_float) : static_cast<void*>(&as_double);
      if (nc_inq_var_fill(group, id, &no_fill, buffer) == NC_NOERR && !no_fill)
        cf.fill = stored == DType::F32 ? static_cast<double>(as_float) : as_double;
    }
    return cf;
  }

  // Every attribute of variable `id` (NC_GLOBAL: the group's) with its type, as netCDF4-python
  // gives them: text and one-element values as scalars, longer ones as arrays.
  static tet::TypedAttributes typed_attributes(int group, int id) {
    tet::TypedAttributes out;
    for (const std::string& name : attribute_names(group, id))
      if (auto value = typed_attribute(group, id, name)) out.emplace_back(name, std::move(*value));
    return out;
  }

  static std::optional<tet::AttributeValue> typed_attribute(int group, int id, const std::string& name) {
    nc_type type = NC_NAT;
    std::size_t len = 0;
    if (nc_inq_att(group, id, name.c_str(), &type, &len) != NC_NOERR) return std::nullopt;
    if (type == NC_CHAR || type == NC_STRING) {
      std::vector<std::string> text;
      if (type == NC_CHAR) {
        std::string one(len, '\0');
        if (len > 0 && nc_get_att_text(group, id, name.c_str(), one.data()) != NC_NOERR) return std::nullopt;
        one.resize(strnlen(one.data(), one.size()));
        text.push_back(std::move(one));
      } else {
        std::vector<char*> strings(len, nullptr);
        if (len == 0 || nc_get_att_string(group, id, name.c_str(), strings.data()) != NC_NOERR) return std::nullopt;
        for (const char* one : strings) text.emplace_back(one != nullptr ? one : "");
        nc_free_string(len, strings.data());
      }
      tet::AttributeValue v = tet::AttributeValue::string({});
      v.scalar = text.size() == 1;
      v.text = std::move(text);
      return v;
    }
    if (len == 0) return std::nullopt;
    const char* numpy = nullptr;
    switch (type) {
      case NC_BYTE: numpy = "int8"; break;
      case NC_UBYTE: numpy = "uint8"; break;
      case NC_SHORT: numpy = "int16"; break;
      case NC_USHORT: numpy = "uint16"; break;
      case NC_INT: numpy = "int32"; break;
      case NC_UINT: numpy = "uint32"; break;
      case NC_INT64: numpy = "int64"; break;
      case NC_UINT64: numpy = "uint64"; break;
      case NC_FLOAT: numpy = "float32"; break;
      case NC_DOUBLE: numpy = "float64"; break;
      default: return std::nullopt;
    }
    if (type == NC_FLOAT || type == NC_DOUBLE) {
      std::vector<double> values(len);
      if (nc_get_att_double(group, id, name.c_str(), values.data()) != NC_NOERR) return std::nullopt;
      return tet::AttributeValue::real(numpy, std::move(values), len == 1);
    }
    if (type == NC_UBYTE || type == NC_USHORT || type == NC_UINT || type == NC_UINT64) {
      std::vector<unsigned long long> values(len);
      if (nc_get_att_ulonglong(group, id, name.c_str(), values.data()) != NC_NOERR) return std::nullopt;
      return tet::AttributeValue::unsigned_integer(numpy, {values.begin(), values.end()}, len == 1);
    }
    std::vector<long long> values(len);
    if (nc_get_att_longlong(group, id, name.c_str(), values.data()) != NC_NOERR) return std::nullopt;
    return tet::AttributeValue::signed_integer(numpy, {values.begin(), values.end()}, len == 1);
  }

  std::string path_;
  tet::TypedAttributes global_attrs_;
  int ncid_ = -1;
  bool open_ = false;
  std::vector<SourceArray> arrays_;
  std::vector<Variable> variables_;
};

}  // namespace

std::unique_ptr<ArraySource> open_netcdf_source(const std::string& path) {
  return std::make_unique<NetCdfSource>(path);
}

}  // namespace tessera::interop
