// The obs and var dataframes of h5ad files (see h5ad_tables.hpp): the dataframe group, its
// index and column order, and one reader per AnnData column encoding, each checking that the
// column has one row per index entry.
#include "tessera/interop/h5ad_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "anndata_frame.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop {
namespace {

using cells::InputObsColumn;
using cells::ObsKind;
using columnar::Column;
using columnar::ColumnType;

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  throw FormatError(path + ": " + object + ": " + what, path, object);
}

// One dataframe being read: the file, the group, its row count and what it is for (messages).
struct Frame {
  const Hdf5File& file;
  std::string group;
  std::uint64_t n_rows = 0;
  bool obs = true;

  const std::string& path() const { return file.path(); }
  std::string object(const std::string& column) const { return group + "/" + column; }

  [[noreturn]] void unsupported(const std::string& column, const std::string& what) const {
    const std::string o = object(column);
    const std::string hint =
        obs ? "; leave it out with --obs-exclude " + column : "; convert without var.parquet with --no-var";
    throw UnsupportedError(
        path() + ": " + o + ": column '" + column + "' " + what + ", which tessera does not read" + hint, path(), o);
  }
};

std::vector<std::string> read_index(const Hdf5File& f, const std::string& object) {
  const Hdf5Dataset d = detail::string_index(f, object);
  return d.read_strings(0, d.shape()[0]);
}

// The columns in `column-order`, checked to be unique.
std::vector<std::string> column_order(const Hdf5File& f, const std::string& group) {
  auto order = f.string_list_attribute(group, "column-order");
  if (!order) fail(f.path(), group, "no 'column-order' attribute listing the columns as strings");
  std::vector<std::string> sorted = *order;
  std::sort(sorted.begin(), sorted.end());
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    fail(f.path(), group, "column-order lists '" + *dup + "' twice");
  return *order;
}

// A 1-D dataset of exactly `n` rows.
Hdf5Dataset vector_of(const Hdf5File& f, const std::string& object, std::uint64_t n) {
  if (f.kind(object) != Hdf5Kind::Dataset) fail(f.path(), object, "missing (or not a dataset)");
  Hdf5Dataset d = f.dataset(object);
  if (d.shape().size() != 1) fail(f.path(), object, "must be 1-D, not " + std::to_string(d.shape().size()) + "-D");
  if (d.shape()[0] != n)
    fail(f.path(), object, std::to_string(d.shape()[0]) + " rows, but the index has " + std::to_string(n));
  return d;
}

std::vector<std::int64_t> read_int64(const Hdf5Dataset& d) {
  std::vector<std::int64_t> v(d.shape()[0]);
  const std::uint64_t origin[1] = {0}, extent[1] = {d.shape()[0]};
  d.read(origin, extent, std::span<std::int64_t>(v));
  return v;
}

std::vector<std::uint64_t> read_uint64(const Hdf5Dataset& d) {
  std::vector<std::uint64_t> v(d.shape()[0]);
  const std::uint64_t origin[1] = {0}, extent[1] = {d.shape()[0]};
  d.read(origin, extent, std::span<std::uint64_t>(v));
  return v;
}

std::vector<double> read_double(const Hdf5Dataset& d) {
  std::vector<double> v(d.shape()[0]);
  const std::uint64_t origin[1] = {0}, extent[1] = {d.shape()[0]};
  d.read(origin, extent, std::span<double>(v));
  return v;
}

// The stored type of a numeric dataset; nullopt for other element types.
std::optional<ColumnType> numeric_type(const Hdf5Dataset& d) {
  const std::string t = d.type_name();
  if (d.element() == Hdf5Element::Float) {
    if (t == "float32") return ColumnType::Float;
    if (t == "float64") return ColumnType::Double;
    return std::nullopt;  // float16
  }
  if (d.element() != Hdf5Element::Integer) return std::nullopt;
  return columnar::column_type_from_name(t);  // int8 … int64, uint8 … uint64
}

// A mask dataset (booleans or integers, true = missing).
std::vector<std::uint8_t> read_mask(const Hdf5File& f, const std::string& object, std::uint64_t n) {
  const Hdf5Dataset d = vector_of(f, object, n);
  if (d.element() != Hdf5Element::Bool && d.element() != Hdf5Element::Integer)
    fail(f.path(), object, "a mask must hold booleans, not " + d.type_name());
  const auto v = read_int64(d);
  std::vector<std::uint8_t> missing(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) missing[i] = v[i] != 0;
  return missing;
}

template <typename T, typename S>
void fill(Column& c, const std::vector<S>& values, const std::vector<std::uint8_t>* missing) {
  c.length = values.size();
  c.data.resize(values.size() * sizeof(T));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const T x = missing != nullptr && (*missing)[i] ? T{} : static_cast<T>(values[i]);
    std::memcpy(c.data.data() + i * sizeof(T), &x, sizeof(T));
  }
  if (missing != nullptr && std::find(missing->begin(), missing->end(), 1) != missing->end()) {
    c.validity.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) c.validity[i] = (*missing)[i] ? 0 : 1;
  }
}

// A numeric or boolean dataset as a column of its type; rows flagged in `missing` are null.
Column value_column(const Hdf5Dataset& d, const std::vector<std::uint8_t>* missing) {
  if (d.element() == Hdf5Element::Bool) {
    Column c(ColumnType::Bool);
    const auto v = read_int64(d);
    fill<std::uint8_t>(c, v, missing);
    for (auto& b : c.data) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
    return c;
  }
  const auto type = numeric_type(d);
  if (!type) throw UsageError("value_column: not numeric");
  Column c(*type);
  switch (*type) {
    case ColumnType::Float: fill<float>(c, read_double(d), missing); break;
    case ColumnType::Double: fill<double>(c, read_double(d), missing); break;
    case ColumnType::UInt64: fill<std::uint64_t>(c, read_uint64(d), missing); break;
    case ColumnType::Int8: fill<std::int8_t>(c, read_int64(d), missing); break;
    case ColumnType::Int16: fill<std::int16_t>(c, read_int64(d), missing); break;
    case ColumnType::Int32: fill<std::int32_t>(c, read_int64(d), missing); break;
    case ColumnType::Int64: fill<std::int64_t>(c, read_int64(d), missing); break;
    case ColumnType::UInt8: fill<std::uint8_t>(c, read_int64(d), missing); break;
    case ColumnType::UInt16: fill<std::uint16_t>(c, read_int64(d), missing); break;
    case ColumnType::UInt32: fill<std::uint32_t>(c, read_int64(d), missing); break;
    case ColumnType::Bool:
    case ColumnType::String: throw UsageError("value_column: not numeric");  // numeric_type gives neither
  }
  return c;
}

Column string_column(const Hdf5Dataset& d, const std::vector<std::uint8_t>* missing) {
  const auto values = d.read_strings(0, d.shape()[0]);
  Column c(ColumnType::String);
  for (std::size_t i = 0; i < values.size(); ++i)
    c.append_string(missing != nullptr && (*missing)[i] ? std::nullopt : std::optional<std::string_view>(values[i]));
  return c;
}

// Python's str() of a float: repr, with `nan`, `inf`, `-inf` for the non-finite values.
std::string python_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return codec::json::format_f64(v, codec::json::FloatStyle::Python);
}

// A categorical's vocabulary as Python's str() writes each category (pandas 1.5 keeps integer
// categories as int64/uint64 and every float width as float64).
std::vector<std::string> category_strings(const Hdf5File& f, const std::string& object) {
  if (f.kind(object) != Hdf5Kind::Dataset) fail(f.path(), object, "missing (or not a dataset)");
  const Hdf5Dataset d = f.dataset(object);
  if (d.shape().size() != 1) fail(f.path(), object, "categories must be 1-D");
  std::vector<std::string> out;
  switch (d.element()) {
    case Hdf5Element::String: return d.read_strings(0, d.shape()[0]);
    case Hdf5Element::Bool:
      for (const auto v : read_int64(d)) out.emplace_back(v != 0 ? "True" : "False");
      return out;
    case Hdf5Element::Integer:
      if (d.type_name() == "uint64")
        for (const auto v : read_uint64(d)) out.push_back(std::to_string(v));
      else
        for (const auto v : read_int64(d)) out.push_back(std::to_string(v));
      return out;
    case Hdf5Element::Float:
      for (const auto v : read_double(d)) out.push_back(python_str(v));
      return out;
    case Hdf5Element::Other: break;
  }
  fail(f.path(), object, "categories of type " + d.type_name() + " are not strings, numbers or booleans");
}

InputObsColumn categorical(const Frame& fr, const std::string& name, const std::string& codes_object,
                           const std::string& categories_object) {
  InputObsColumn col;
  col.name = name;
  col.kind = ObsKind::Category;
  col.categories = category_strings(fr.file, categories_object);
  const Hdf5Dataset codes = vector_of(fr.file, codes_object, fr.n_rows);
  if (codes.element() != Hdf5Element::Integer)
    fail(fr.path(), codes_object, "codes must be integers, not " + codes.type_name());
  const auto v = read_int64(codes);
  const auto n_categories = static_cast<std::int64_t>(col.categories.size());
  col.values = Column(ColumnType::Int32);
  col.values.length = v.size();
  col.values.data.resize(v.size() * sizeof(std::int32_t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] < -1 || v[i] >= n_categories)
      fail(fr.path(), codes_object,
           "code " + std::to_string(v[i]) + " at row " + std::to_string(i) + " is outside -1.." +
               std::to_string(n_categories - 1));
    const auto code = static_cast<std::int32_t>(v[i]);
    std::memcpy(col.values.data.data() + i * sizeof code, &code, sizeof code);
  }
  return col;
}

// `values` + `mask` (mask true = missing) of a nullable-* group.
InputObsColumn nullable(const Frame& fr, const std::string& name, const std::string& encoding) {
  const std::string object = fr.object(name);
  const Hdf5Dataset values = vector_of(fr.file, object + "/values", fr.n_rows);
  const auto missing = read_mask(fr.file, object + "/mask", fr.n_rows);
  InputObsColumn col;
  col.name = name;
  const Hdf5Element e = values.element();
  if (encoding == "nullable-string-array") {
    if (e != Hdf5Element::String) fail(fr.path(), object + "/values", "holds " + values.type_name() + ", not strings");
    col.kind = ObsKind::String;
    col.values = string_column(values, &missing);
  } else if (encoding == "nullable-boolean") {
    if (e != Hdf5Element::Bool && e != Hdf5Element::Integer)
      fail(fr.path(), object + "/values", "holds " + values.type_name() + ", not booleans");
    col.kind = ObsKind::Bool;
    Column c(ColumnType::Bool);
    auto v = read_int64(values);
    for (auto& x : v) x = x != 0;
    fill<std::uint8_t>(c, v, &missing);
    col.values = std::move(c);
  } else {  // nullable-integer
    if (e != Hdf5Element::Integer || !numeric_type(values))
      fail(fr.path(), object + "/values", "holds " + values.type_name() + ", not integers");
    col.kind = ObsKind::Numeric;
    col.values = value_column(values, &missing);
  }
  return col;
}

InputObsColumn read_column(const Frame& fr, const std::string& name) {
  const Hdf5File& f = fr.file;
  const std::string object = fr.object(name);
  const Hdf5Kind kind = f.kind(object);
  if (kind == Hdf5Kind::Missing) fail(fr.path(), object, "listed in " + fr.group + "/column-order but missing");
  if (kind == Hdf5Kind::Other) fr.unsupported(name, "is neither a group nor a dataset");
  const auto encoding = f.string_attribute(object, "encoding-type");
  if (kind == Hdf5Kind::Group) {
    const std::string enc = encoding.value_or("");
    if (enc == "categorical") return categorical(fr, name, object + "/codes", object + "/categories");
    if (enc == "nullable-integer" || enc == "nullable-boolean" || enc == "nullable-string-array")
      return nullable(fr, name, enc);
    fr.unsupported(name, enc.empty() ? "is a group without an encoding-type" : "has encoding-type '" + enc + "'");
  }
  // AnnData 0.7: codes whose `categories` attribute references the vocabulary.
  if (const auto vocabulary = f.referenced_object(object, "categories"))
    return categorical(fr, name, object, *vocabulary);
  const std::string enc = encoding.value_or("");
  if (!enc.empty() && enc != "array" && enc != "string-array") fr.unsupported(name, "has encoding-type '" + enc + "'");
  const Hdf5Dataset probe = f.dataset(object);
  if (probe.shape().size() != 1)
    fr.unsupported(name, "is a " + std::to_string(probe.shape().size()) + "-D " + probe.type_name() + " array");
  const Hdf5Dataset d = vector_of(f, object, fr.n_rows);
  InputObsColumn col;
  col.name = name;
  switch (d.element()) {
    case Hdf5Element::String:
      col.kind = ObsKind::String;
      col.values = string_column(d, nullptr);
      return col;
    case Hdf5Element::Bool:
      col.kind = ObsKind::Bool;
      col.values = value_column(d, nullptr);
      return col;
    case Hdf5Element::Integer:
    case Hdf5Element::Float:
      if (numeric_type(d)) {
        col.kind = ObsKind::Numeric;
        col.values = value_column(d, nullptr);
        return col;
      }
      break;
    case Hdf5Element::Other: break;
  }
  fr.unsupported(name, "holds " + d.type_name());
}

}  // namespace

H5adObs read_h5ad_obs(const std::string& path, const H5adTableOptions& options) {
  const Hdf5File f(path);
  if (f.kind("obs") == Hdf5Kind::Missing)
    fail_at<FormatError>(path, "obs", "missing (convert with --no-obs to store no obs)");
  H5adObs out;
  out.names = read_index(f, detail::dataframe_index(f, "obs"));
  const Frame fr{f, "obs", out.names.size(), true};
  out.table.source = path;
  out.table.n_rows = out.names.size();
  for (const auto& name : column_order(f, "obs")) {
    if (std::find(options.exclude.begin(), options.exclude.end(), name) != options.exclude.end()) {
      out.table.skipped.push_back(name);
      continue;
    }
    out.table.columns.push_back(read_column(fr, name));
  }
  return out;
}

cells::VarTable read_h5ad_var(const std::string& path, const H5adTableOptions& options) {
  const Hdf5File f(path);
  const std::string group = options.use_raw ? "raw/var" : "var";
  const std::string index = detail::dataframe_index(f, group);
  cells::VarTable t;
  const auto names = read_index(f, index);
  for (const auto& n : names) t.index.append_string(n);
  const std::string index_name = index.substr(group.size() + 1);
  t.index_name = index_name == "_index" ? "" : index_name;
  const Frame fr{f, group, names.size(), false};
  for (const auto& name : column_order(f, group)) {
    InputObsColumn col = read_column(fr, name);
    if (col.kind == ObsKind::Category) {  // var.parquet stores the category strings
      Column s(ColumnType::String);
      for (std::uint64_t r = 0; r < col.values.length; ++r) {
        const auto code = col.values.value<std::int32_t>(r);
        s.append_string(code < 0 ? std::nullopt : std::optional<std::string_view>(col.categories[code]));
      }
      col.values = std::move(s);
    }
    t.column_names.push_back(name);
    t.columns.push_back(std::move(col.values));
  }
  return t;
}

namespace detail {

std::string dataframe_index(const Hdf5File& f, const std::string& group) {
  const std::string& path = f.path();
  switch (f.kind(group)) {
    case Hdf5Kind::Group: break;
    case Hdf5Kind::Dataset:
      throw UnsupportedError(
          path + ": " + group + ": a dataframe stored as a compound dataset (AnnData before 0.7) is not supported",
          path, group);
    case Hdf5Kind::Missing:
    case Hdf5Kind::Other: fail(path, group, "missing");
  }
  if (const auto enc = f.string_attribute(group, "encoding-type"); enc && *enc != "dataframe")
    fail(path, group, "encoding-type is '" + *enc + "', not 'dataframe'");
  const auto index = f.string_attribute(group, "_index");
  if (!index) fail(path, group, "no '_index' attribute naming the index");
  std::string object = group + "/" + *index;
  if (f.kind(object) != Hdf5Kind::Dataset)
    fail(path, object, "the index named by " + group + "/_index is not a dataset");
  return object;
}

Hdf5Dataset string_index(const Hdf5File& f, const std::string& object) {
  Hdf5Dataset d = f.dataset(object);
  if (d.shape().size() != 1 || d.element() != Hdf5Element::String)
    fail(f.path(), object,
         "the index must be a 1-D list of strings, not " + std::to_string(d.shape().size()) + "-D " + d.type_name());
  return d;
}

}  // namespace detail

}  // namespace tessera::interop
