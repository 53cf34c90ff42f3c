// `var.parquet` (spec deltacells.md §6.7): the writer lays out the var columns, then the index,
// in one row group with the `pandas` key-value entry pandas.read_parquet uses to restore the
// index; the reader takes any flat file of the §6.8 subset, finds the index column through the
// same entry, and applies P8.
#include "tessera/cells/var_table.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>

#include "tessera/codec/json.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"
#include "tessera/version.hpp"

namespace tessera::cells {
namespace {

using codec::json::Json;
using columnar::Column;
using columnar::ColumnType;

constexpr const char* kPandasVersion = "1.5.3";  // the Debian 12 pandas the round trip is tested against
constexpr const char* kUnnamedIndex = "__index_level_0__";

// pyarrow's logical type name (`pandas_type`) of a stored type.
std::string pandas_type(ColumnType t) {
  switch (t) {
    case ColumnType::Float: return "float32";
    case ColumnType::Double: return "float64";
    case ColumnType::Bool: return "bool";
    case ColumnType::String: return "unicode";
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64: return std::string(columnar::column_type_name(t));
  }
  throw UsageError("column type tag " + std::to_string(static_cast<int>(t)) + " has no pandas type");
}

// The pandas dtype (`numpy_type`, str(dtype)) the column came from: numpy's for complete
// columns, pandas' nullable extension types for integer and bool columns with missing values
// (floats keep NaN; strings are object columns holding None).
std::string numpy_type(const Column& c) {
  const bool nulls = c.null_count() > 0;
  switch (c.type) {
    case ColumnType::String: return "object";
    case ColumnType::Bool: return nulls ? "boolean" : "bool";
    case ColumnType::Float: return "float32";
    case ColumnType::Double: return "float64";
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt8:
    case ColumnType::UInt16:
    case ColumnType::UInt32:
    case ColumnType::UInt64: {
      std::string name(columnar::column_type_name(c.type));
      if (nulls) name[0] = name[0] == 'u' ? 'U' : 'I';  // int8 → Int8, uint8 → UInt8
      if (nulls && name[0] == 'U') name[1] = 'I';
      return name;
    }
  }
  throw UsageError("column type tag " + std::to_string(static_cast<int>(c.type)) + " has no numpy type");
}

Json column_metadata(const Json& name, const std::string& field_name, const Column& c) {
  Json m = Json::object();
  m["name"] = name;
  m["field_name"] = field_name;
  m["pandas_type"] = pandas_type(c.type);
  m["numpy_type"] = numpy_type(c);
  m["metadata"] = nullptr;
  return m;
}

// pyarrow's `pandas` metadata (pandas_compat.construct_metadata) for a frame whose column labels
// are strings and whose index is stored as the column `index_field`.
std::string pandas_metadata(const VarTable& t, const std::string& index_field) {
  Json column_index = Json::object();
  column_index["name"] = nullptr;
  column_index["field_name"] = nullptr;
  // pandas.api.types.infer_dtype of the column labels: "empty" for a frame without columns.
  column_index["pandas_type"] = t.columns.empty() ? "empty" : "unicode";
  column_index["numpy_type"] = "object";
  if (t.columns.empty()) {
    column_index["metadata"] = nullptr;
  } else {
    column_index["metadata"] = Json::object();
    column_index["metadata"]["encoding"] = "UTF-8";
  }
  Json columns = Json::array();
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    columns.push_back(column_metadata(Json(t.column_names[i]), t.column_names[i], t.columns[i]));
  columns.push_back(column_metadata(t.index_name.empty() ? Json(nullptr) : Json(t.index_name), index_field, t.index));

  Json root = Json::object();
  root["index_columns"] = Json::array({index_field});
  root["column_indexes"] = Json::array({column_index});
  root["columns"] = std::move(columns);
  root["creator"] = Json::object();
  root["creator"]["library"] = "tessera";
  root["creator"]["version"] = kVersion;
  root["pandas_version"] = kPandasVersion;
  // Laid out as pyarrow's json.dumps writes it (default separators, ASCII escapes).
  return codec::json::dump(root, codec::json::DumpOptions::python_default());
}

// Appends the rows of `part` to `whole` (same type).
void append_column(Column& whole, const Column& part) {
  const std::uint64_t before = whole.length;
  if (part.type == ColumnType::String) {
    const std::uint64_t base = whole.data.size();
    whole.data.insert(whole.data.end(), part.data.begin(), part.data.end());
    for (std::uint64_t r = 1; r <= part.length; ++r) whole.offsets.push_back(base + part.offsets[r]);
  } else {
    whole.data.insert(whole.data.end(), part.data.begin(), part.data.end());
  }
  whole.length += part.length;
  if (!whole.validity.empty() || !part.validity.empty()) {
    whole.validity.resize(before, 1);
    if (part.validity.empty()) whole.validity.resize(whole.length, 1);
    else whole.validity.insert(whole.validity.end(), part.validity.begin(), part.validity.end());
  }
}

// A float NaN becomes a null, as pyarrow's Table.from_pandas stores it (pandas reads NaN back).
void nan_to_null(Column& c) {
  for (std::uint64_t r = 0; r < c.length; ++r) {
    const bool nan = c.type == ColumnType::Float ? std::isnan(c.value<float>(r)) : std::isnan(c.value<double>(r));
    if (!nan) continue;
    if (c.validity.empty()) c.validity.assign(c.length, 1);
    c.validity[r] = 0;
    const std::size_t w = columnar::column_type_width(c.type);
    std::fill_n(c.data.begin() + static_cast<std::ptrdiff_t>(r * w), w, std::byte{0});
  }
}

// The index column `pandas` metadata names and the index's pandas name ("" = unnamed); nullopt
// when there is no metadata or the index is not stored as a column (a RangeIndex descriptor).
struct IndexRef {
  std::string field;
  std::string name;
};

std::optional<IndexRef> index_of(const columnar::ParquetFile& file, const std::string& source) {
  const auto text = file.metadata("pandas");
  if (!text) return std::nullopt;
  const Json meta = codec::json::parse_strict(*text, source + ": key-value metadata 'pandas'");
  const auto bad = [&](const std::string& what) -> FormatError {
    return FormatError(source + ": key-value metadata 'pandas': " + what, source, "pandas metadata");
  };
  if (!meta.is_object()) throw bad("not a JSON object");
  const auto levels = meta.find("index_columns");
  if (levels == meta.end()) return std::nullopt;
  if (!levels->is_array()) throw bad("'index_columns' is not a list");
  // A RangeIndex is described by a dict (kind "range") and has no column; of a MultiIndex the
  // first level is the index and the others stay ordinary columns.
  if (levels->empty() || !levels->front().is_string()) return std::nullopt;
  IndexRef ref{levels->front().get<std::string>(), {}};
  if (!file.find_column(ref.field)) throw bad("index column '" + ref.field + "' is not a column of the file");
  bool described = false;
  if (const auto cols = meta.find("columns"); cols != meta.end() && cols->is_array()) {
    for (const auto& c : *cols) {
      if (!c.is_object()) continue;
      const auto field = c.find("field_name");
      if (field == c.end() || !field->is_string() || field->get<std::string>() != ref.field) continue;
      const auto name = c.find("name");
      if (name != c.end() && name->is_string()) ref.name = name->get<std::string>();
      described = true;
      break;
    }
  }
  // Without a description, a field named like pyarrow's unnamed levels is unnamed.
  static const std::regex unnamed("__index_level_[0-9]+__");
  if (!described && !std::regex_match(ref.field, unnamed)) ref.name = ref.field;
  return ref;
}

}  // namespace

void write_var_parquet(io::ByteSink& sink, const VarTable& table, int zstd_level) {
  if (table.column_names.size() != table.columns.size())
    throw UsageError("var table: " + std::to_string(table.column_names.size()) + " column names for " +
                     std::to_string(table.columns.size()) + " columns");
  const std::string index_field = table.index_name.empty() ? kUnnamedIndex : table.index_name;
  std::vector<columnar::ParquetColumnSpec> specs;
  std::vector<Column> columns;
  for (std::size_t i = 0; i <= table.columns.size(); ++i) {
    const bool is_index = i == table.columns.size();
    const Column& c = is_index ? table.index : table.columns[i];
    const std::string& name = is_index ? index_field : table.column_names[i];
    c.check_shape();
    if (c.length != table.index.length)
      throw UsageError("var table: column '" + name + "' has " + std::to_string(c.length) + " rows, the index " +
                       std::to_string(table.index.length));
    for (const auto& s : specs)
      if (s.name == name) throw UsageError("var table: two columns named '" + name + "'");
    specs.push_back({name, c.type, c.type == ColumnType::String});
    columns.push_back(c);
    if (c.type == ColumnType::Float || c.type == ColumnType::Double) nan_to_null(columns.back());
  }
  columnar::ParquetWriterOptions options;
  options.zstd_level = zstd_level;
  std::vector<columnar::KeyValue> kv{{"pandas", pandas_metadata(table, index_field)}};
  columnar::ParquetWriter writer(sink, std::move(specs), std::move(kv), options);
  writer.write_row_group(columns);
  writer.finish();
}

VarTable read_var_parquet(const io::ByteSource& source, std::uint64_t n_genes) {
  const std::string& name = source.name();
  const auto file = columnar::ParquetFile::open(source);
  if (file.num_rows() != n_genes)
    throw FormatError(name + ": " + std::to_string(file.num_rows()) + " rows, but the dataset has " +
                          std::to_string(n_genes) + " genes (P8)",
                      name, "var.parquet");
  const auto index = index_of(file, name);
  VarTable t;
  for (std::size_t c = 0; c < file.columns().size(); ++c) {
    const auto& info = file.columns()[c];
    Column whole(info.type);
    for (std::size_t g = 0; g < file.row_groups().size(); ++g) append_column(whole, file.read_column(g, c));
    if (whole.length != n_genes)
      throw FormatError(name + ": column '" + info.name + "' has " + std::to_string(whole.length) + " rows, not " +
                            std::to_string(n_genes) + " (P8)",
                        name, "var.parquet");
    if (index && info.name == index->field) {
      t.index = std::move(whole);
      t.index_name = index->name;
    } else {
      t.column_names.push_back(info.name);
      t.columns.push_back(std::move(whole));
    }
  }
  return t;
}

}  // namespace tessera::cells
