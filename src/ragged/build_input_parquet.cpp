// Parquet point inputs of `ragged build`: one row group at a time (memory bounded by the largest
// row group), every numeric column type widened to float64, nulls as NaN (so the row is refused
// with its column's reason), string columns parsed as the CSV reader parses its fields.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "build_input.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::ragged::build::detail {
namespace {

using columnar::Column;
using columnar::ColumnType;

double number_at(const Column& c, std::uint64_t row) {
  if (!c.is_valid(row)) return std::numeric_limits<double>::quiet_NaN();
  switch (c.type) {
    case ColumnType::Int8: return c.value<std::int8_t>(row);
    case ColumnType::Int16: return c.value<std::int16_t>(row);
    case ColumnType::Int32: return c.value<std::int32_t>(row);
    case ColumnType::Int64: return static_cast<double>(c.value<std::int64_t>(row));
    case ColumnType::UInt8: return c.value<std::uint8_t>(row);
    case ColumnType::UInt16: return c.value<std::uint16_t>(row);
    case ColumnType::UInt32: return c.value<std::uint32_t>(row);
    case ColumnType::UInt64: return static_cast<double>(c.value<std::uint64_t>(row));
    case ColumnType::Float: return c.value<float>(row);
    case ColumnType::Double: return c.value<double>(row);
    case ColumnType::Bool: return c.value<std::uint8_t>(row);
    case ColumnType::String: return parse_number(c.string(row));
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// A toc word (0 = unusable): integer columns are nanosecond counts in `format`, strings parse as
// CSV times do.
std::uint64_t time_at(const Column& c, std::uint64_t row, TimeFormat format) {
  if (!c.is_valid(row)) return 0;
  switch (c.type) {
    case ColumnType::String: return parse_time(c.string(row), format);
    case ColumnType::Int8: return time_of_ns(c.value<std::int8_t>(row), format);
    case ColumnType::Int16: return time_of_ns(c.value<std::int16_t>(row), format);
    case ColumnType::Int32: return time_of_ns(c.value<std::int32_t>(row), format);
    case ColumnType::Int64: return time_of_ns(c.value<std::int64_t>(row), format);
    case ColumnType::UInt8: return time_of_ns(c.value<std::uint8_t>(row), format);
    case ColumnType::UInt16: return time_of_ns(c.value<std::uint16_t>(row), format);
    case ColumnType::UInt32: return time_of_ns(c.value<std::uint32_t>(row), format);
    case ColumnType::UInt64: {
      const std::uint64_t ns = c.value<std::uint64_t>(row);
      return ns > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                 ? 0
                 : time_of_ns(static_cast<std::int64_t>(ns), format);
    }
    case ColumnType::Float:
    case ColumnType::Double:
    case ColumnType::Bool: return 0;  // refused when the column is opened
  }
  return 0;
}

}  // namespace

void read_parquet(const std::string& path, std::size_t file_index, const Columns& c, std::size_t block_rows,
                  const std::function<void(RowBlock&)>& sink) {
  const auto source = io::open_file(path, io::OpenMode::Pread);
  const auto file = columnar::ParquetFile::open(*source);
  const auto column = [&](const std::string& name) -> std::size_t {
    const auto index = file.find_column(name);
    if (!index) throw UsageError(path + ": no column '" + name + "' in the Parquet schema");
    const auto& info = file.columns()[*index];
    if (!info.unsupported.empty())
      throw UnsupportedError(path + ": column '" + name + "': " + info.unsupported, path, "parquet schema");
    return *index;
  };
  constexpr std::size_t kNone = std::string::npos;
  const std::size_t lat = column(c.lat), lon = column(c.lon), value = column(c.value);
  const std::size_t time = c.time ? column(*c.time) : kNone;
  const std::size_t weight = c.weight ? column(*c.weight) : kNone;
  const std::size_t sigma = c.sigma ? column(*c.sigma) : kNone;
  std::vector<std::size_t> extra;
  for (const std::string& name : c.extra) extra.push_back(column(name));
  if (time != kNone) {
    const ColumnType t = file.columns()[time].type;
    if (t == ColumnType::Float || t == ColumnType::Double || t == ColumnType::Bool)
      throw UsageError(path + ": the time column '" + *c.time + "' must hold integer nanoseconds or time texts");
    if (t != ColumnType::String && c.time_format == TimeFormat::Iso)
      throw UsageError(path + ": the time column '" + *c.time +
                       "' holds nanosecond counts; use --time-format unix-ns, gps-ns or toc-ns");
  }

  RowBlock block;
  block.file = file_index;
  block.first_row = 1;
  std::uint64_t row = 0;
  for (std::size_t group = 0; group < file.row_groups().size(); ++group) {
    const auto read = [&](std::size_t index) { return index == kNone ? Column() : file.read_column(group, index); };
    const Column lat_col = read(lat), lon_col = read(lon), value_col = read(value);
    const Column time_col = read(time), weight_col = read(weight), sigma_col = read(sigma);
    std::vector<Column> extra_cols;
    extra_cols.reserve(extra.size());
    for (const std::size_t index : extra) extra_cols.push_back(read(index));
    const std::uint64_t rows = file.row_groups()[group].num_rows;
    const auto check_length = [&](const Column& col, std::size_t index) {
      if (index != kNone && col.length != rows)
        throw FormatError(path + ": row group " + std::to_string(group) + ": column '" + file.columns()[index].name +
                              "' holds " + std::to_string(col.length) + " values for " + std::to_string(rows) + " rows",
                          path, "parquet row group");
    };
    check_length(lat_col, lat);
    check_length(lon_col, lon);
    check_length(value_col, value);
    check_length(time_col, time);
    check_length(weight_col, weight);
    check_length(sigma_col, sigma);
    for (std::size_t e = 0; e < extra.size(); ++e) check_length(extra_cols[e], extra[e]);
    for (std::uint64_t i = 0; i < rows; ++i) {
      block.lat.push_back(number_at(lat_col, i));
      block.lon.push_back(number_at(lon_col, i));
      block.value.push_back(number_at(value_col, i));
      if (weight != kNone) block.weight.push_back(number_at(weight_col, i));
      if (sigma != kNone) block.sigma.push_back(number_at(sigma_col, i));
      if (time != kNone) block.time.push_back(time_at(time_col, i, c.time_format));
      for (std::size_t e = 0; e < extra.size(); ++e) block.extra[c.extra[e]].push_back(number_at(extra_cols[e], i));
      ++row;
      if (block.size() == block_rows) {
        sink(block);
        block.clear();
        block.first_row = row + 1;
      }
    }
  }
  if (block.size()) sink(block);
}

}  // namespace tessera::ragged::build::detail
