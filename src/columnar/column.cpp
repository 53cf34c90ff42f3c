// The in-memory column: type names, widths, appending and shape checks.
#include "tessera/columnar/column.hpp"

#include <algorithm>
#include <array>

#include "tessera/core/error.hpp"

namespace tessera::columnar {
namespace {

struct TypeInfo {
  ColumnType type;
  std::string_view name;
  std::size_t width;
};

constexpr std::array<TypeInfo, 12> kTypes{{
    {ColumnType::Int8, "int8", 1},
    {ColumnType::Int16, "int16", 2},
    {ColumnType::Int32, "int32", 4},
    {ColumnType::Int64, "int64", 8},
    {ColumnType::UInt8, "uint8", 1},
    {ColumnType::UInt16, "uint16", 2},
    {ColumnType::UInt32, "uint32", 4},
    {ColumnType::UInt64, "uint64", 8},
    {ColumnType::Float, "float", 4},
    {ColumnType::Double, "double", 8},
    {ColumnType::Bool, "bool", 1},
    {ColumnType::String, "string", 0},
}};

}  // namespace

std::string_view column_type_name(ColumnType type) noexcept { return kTypes[static_cast<std::size_t>(type)].name; }

std::optional<ColumnType> column_type_from_name(std::string_view name) noexcept {
  for (const auto& t : kTypes)
    if (t.name == name) return t.type;
  return std::nullopt;
}

std::size_t column_type_width(ColumnType type) noexcept { return kTypes[static_cast<std::size_t>(type)].width; }

bool is_integer(ColumnType type) noexcept { return type <= ColumnType::UInt64; }

bool is_signed_integer(ColumnType type) noexcept { return type <= ColumnType::Int64; }

std::uint64_t Column::null_count() const noexcept {
  std::uint64_t n = 0;
  for (const auto v : validity) n += v == 0;
  return n;
}

void Column::push_validity(bool valid) {
  if (!valid && validity.empty()) validity.assign(length, 1);  // first null: materialise the rows before it
  if (!valid || !validity.empty()) validity.push_back(valid ? 1 : 0);
  ++length;
}

void Column::append_string(std::optional<std::string_view> v) {
  if (v) {
    const auto old = data.size();
    data.resize(old + v->size());
    if (!v->empty()) std::memcpy(data.data() + old, v->data(), v->size());
  }
  offsets.push_back(data.size());
  push_validity(v.has_value());
}

void Column::check_shape() const {
  const auto fail = [&](const std::string& rule) {
    throw UsageError("column of type " + std::string(column_type_name(type)) + ": " + rule);
  };
  if (!validity.empty() && validity.size() != length) fail("validity has a length other than the column's");
  if (type == ColumnType::String) {
    if (offsets.size() != length + 1) fail("offsets must have length + 1 entries");
    if (offsets.front() != 0 || offsets.back() != data.size()) fail("offsets must run from 0 to the data size");
    for (std::uint64_t i = 0; i < length; ++i)
      if (offsets[i + 1] < offsets[i]) fail("offsets decrease");
  } else if (data.size() != length * column_type_width(type)) {
    fail("data size is not length * value width");
  }
}

void throw_no_value_type(ColumnType type) {
  throw UsageError("column type " + std::string(column_type_name(type)) + " has no fixed-width value type");
}

void append_rows(Column& whole, const Column& part) {
  if (whole.type != part.type)
    throw UsageError("cannot append a " + std::string(column_type_name(part.type)) + " column to a " +
                     std::string(column_type_name(whole.type)) + " column");
  if (!part.validity.empty() || !whole.validity.empty()) {
    if (whole.validity.empty()) whole.validity.assign(whole.length, 1);
    if (part.validity.empty()) whole.validity.insert(whole.validity.end(), part.length, 1);
    else whole.validity.insert(whole.validity.end(), part.validity.begin(), part.validity.end());
  }
  if (whole.type == ColumnType::String) {
    const std::uint64_t base = whole.data.size();
    for (std::uint64_t i = 1; i <= part.length; ++i) whole.offsets.push_back(base + part.offsets[i]);
  }
  whole.data.insert(whole.data.end(), part.data.begin(), part.data.end());
  whole.length += part.length;
}

Column slice_rows(const Column& column, std::uint64_t first, std::uint64_t count) {
  if (first > column.length || count > column.length - first)
    throw UsageError("rows " + std::to_string(first) + ".." + std::to_string(first + count) + " outside a column of " +
                     std::to_string(column.length));
  Column out(column.type);
  out.length = count;
  if (!column.validity.empty()) {
    const auto begin = column.validity.begin() + static_cast<std::ptrdiff_t>(first);
    if (std::find(begin, begin + static_cast<std::ptrdiff_t>(count), std::uint8_t{0}) !=
        begin + static_cast<std::ptrdiff_t>(count))
      out.validity.assign(begin, begin + static_cast<std::ptrdiff_t>(count));
  }
  if (column.type == ColumnType::String) {
    const std::uint64_t base = column.offsets[first];
    out.offsets.resize(count + 1);
    for (std::uint64_t i = 0; i <= count; ++i) out.offsets[i] = column.offsets[first + i] - base;
    out.data.assign(column.data.begin() + static_cast<std::ptrdiff_t>(base),
                    column.data.begin() + static_cast<std::ptrdiff_t>(column.offsets[first + count]));
  } else {
    const std::size_t w = column_type_width(column.type);
    out.data.assign(column.data.begin() + static_cast<std::ptrdiff_t>(first * w),
                    column.data.begin() + static_cast<std::ptrdiff_t>((first + count) * w));
  }
  return out;
}

Column gather_rows(const Column& column, std::span<const std::uint64_t> rows) {
  Column out(column.type);
  for (const auto r : rows)
    if (r >= column.length)
      throw UsageError("row " + std::to_string(r) + " outside a column of " + std::to_string(column.length));
  out.length = rows.size();
  if (column.null_count() != 0) {
    out.validity.reserve(rows.size());
    for (const auto r : rows) out.validity.push_back(column.validity[r]);
  }
  if (column.type == ColumnType::String) {
    out.offsets.reserve(rows.size() + 1);
    for (const auto r : rows) {
      out.data.insert(out.data.end(), column.data.begin() + static_cast<std::ptrdiff_t>(column.offsets[r]),
                      column.data.begin() + static_cast<std::ptrdiff_t>(column.offsets[r + 1]));
      out.offsets.push_back(out.data.size());
    }
  } else {
    const std::size_t w = column_type_width(column.type);
    out.data.resize(rows.size() * w);
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::memcpy(out.data.data() + i * w, column.data.data() + rows[i] * w, w);
  }
  return out;
}

Column make_string_column(const std::vector<std::optional<std::string>>& values) {
  Column c(ColumnType::String);
  for (const auto& v : values) c.append_string(v ? std::optional<std::string_view>(*v) : std::nullopt);
  return c;
}

}  // namespace tessera::columnar
