// A typed, flat, nullable column in memory: what the Parquet reader decodes a column chunk into,
// what the Parquet and Arrow IPC writers take, one record batch's worth of one field. The stored
// types are the obs sidecar's (`int8` … `uint64`, `float`, `double`, `bool`, `string`).
//
// Layout: `data` holds `length` little-endian values of the type's width (`bool` one byte 0/1
// per row) with null slots zero, or for `string` the concatenated UTF-8 bytes with
// `offsets[i] .. offsets[i + 1]` the i-th value (`offsets` has `length + 1` entries, null values
// are empty). `validity` is empty when every row is valid, else one byte per row (1 = valid).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::columnar {

enum class ColumnType { Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float, Double, Bool, String };

// The obs `arrow_type` name (`int8`, …, `float`, `double`, `bool`, `string`) and back.
std::string_view column_type_name(ColumnType type) noexcept;
std::optional<ColumnType> column_type_from_name(std::string_view name) noexcept;
// Bytes per value in `Column::data` (0 for string).
std::size_t column_type_width(ColumnType type) noexcept;
bool is_integer(ColumnType type) noexcept;
bool is_signed_integer(ColumnType type) noexcept;

struct Column {
  ColumnType type = ColumnType::Int32;
  std::uint64_t length = 0;
  std::vector<std::uint8_t> validity;
  std::vector<std::byte> data;
  std::vector<std::uint64_t> offsets;

  explicit Column(ColumnType t = ColumnType::Int32) : type(t) {
    if (t == ColumnType::String) offsets.push_back(0);
  }

  bool is_valid(std::uint64_t row) const noexcept { return validity.empty() || validity[row] != 0; }
  std::uint64_t null_count() const noexcept;

  // The value at `row` as T (T must have the type's width; the caller picks the matching type).
  template <typename T>
  T value(std::uint64_t row) const noexcept {
    T v;
    std::memcpy(&v, data.data() + row * sizeof(T), sizeof(T));
    return v;
  }
  std::string_view string(std::uint64_t row) const noexcept {
    return {reinterpret_cast<const char*>(data.data()) + offsets[row], offsets[row + 1] - offsets[row]};
  }

  // Appending (writers' callers and tests). A null appends a zero value / empty string.
  template <typename T>
  void append(std::optional<T> v) {
    const T x = v.value_or(T{});
    const auto old = data.size();
    data.resize(old + sizeof(T));
    std::memcpy(data.data() + old, &x, sizeof(T));
    push_validity(v.has_value());
  }
  void append_string(std::optional<std::string_view> v);
  // Marks the row just appended (or, with `valid = true`, keeps the all-valid form).
  void push_validity(bool valid);

  // Throws UsageError if the sizes of data/offsets/validity disagree with `length` and the type.
  void check_shape() const;
};

// Appends `part`'s rows to `whole` (UsageError unless both have the same type).
void append_rows(Column& whole, const Column& part);
// Rows [first, first + count) of `column` as a new Column (UsageError outside the column).
Column slice_rows(const Column& column, std::uint64_t first, std::uint64_t count);

// The rows `rows[0]`, `rows[1]`, … of `column` (repeats allowed; UsageError outside the column).
Column gather_rows(const Column& column, std::span<const std::uint64_t> rows);

// Calls `f` with a value of the C++ type a fixed-width ColumnType stores (`std::int8_t` …
// `double`; Bool as `std::uint8_t`) and returns its result; String is a UsageError.
template <typename F>
decltype(auto) visit_value_type(ColumnType type, F&& f);

// The same typed values built from a vector (no nulls) — shorthand for tests and callers.
template <typename T>
Column make_column(ColumnType type, const std::vector<std::optional<T>>& values) {
  Column c(type);
  for (const auto& v : values) c.append<T>(v);
  return c;
}
Column make_string_column(const std::vector<std::optional<std::string>>& values);

[[noreturn]] void throw_no_value_type(ColumnType type);

template <typename F>
decltype(auto) visit_value_type(ColumnType type, F&& f) {
  switch (type) {
    case ColumnType::Int8: return f(std::int8_t{});
    case ColumnType::Int16: return f(std::int16_t{});
    case ColumnType::Int32: return f(std::int32_t{});
    case ColumnType::Int64: return f(std::int64_t{});
    case ColumnType::UInt8: return f(std::uint8_t{});
    case ColumnType::UInt16: return f(std::uint16_t{});
    case ColumnType::UInt32: return f(std::uint32_t{});
    case ColumnType::UInt64: return f(std::uint64_t{});
    case ColumnType::Float: return f(float{});
    case ColumnType::Double: return f(double{});
    case ColumnType::Bool: return f(std::uint8_t{});
    case ColumnType::String: break;
  }
  throw_no_value_type(type);
}

}  // namespace tessera::columnar
