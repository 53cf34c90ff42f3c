// The in-memory column: type names, widths, appending and shape checks.
#include "tessera/columnar/column.hpp"

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
    {ColumnType::Int8, "int8", 1},     {ColumnType::Int16, "int16", 2},   {ColumnType::Int32, "int32", 4},
    {ColumnType::Int64, "int64", 8},   {ColumnType::UInt8, "uint8", 1},   {ColumnType::UInt16, "uint16", 2},
    {ColumnType::UInt32, "uint32", 4}, {ColumnType::UInt64, "uint64", 8}, {ColumnType::Float, "float", 4},
    {ColumnType::Double, "double", 8}, {ColumnType::Bool, "bool", 1},     {ColumnType::String, "string", 0},
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

Column make_string_column(const std::vector<std::optional<std::string>>& values) {
  Column c(ColumnType::String);
  for (const auto& v : values) c.append_string(v ? std::optional<std::string_view>(*v) : std::nullopt);
  return c;
}

}  // namespace tessera::columnar
