// Reading the point inputs of `ragged build` (private to the ragged module): CSV files with a
// header row (RFC 4180), Parquet files, or directories holding one `.npy` file per column,
// delivered in blocks of rows.
// Values are widened to float64; a field that does not parse is NaN (and its row is refused by
// the caller with the reason of that column); times become toc words (0 when unparsable).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ragged/build.hpp"

namespace tessera::ragged::build::detail {

struct Columns {
  std::string lat, lon, value;
  std::optional<std::string> time, weight, sigma;
  TimeFormat time_format = TimeFormat::Iso;
  std::vector<std::string> extra;  // read into PointBlock::extra under their names
};

using RowBlock = PointBlock;

// Calls `sink` for each block of at most `block_rows` rows of input `path`. UsageError: a
// requested column is missing; FormatError: a malformed file (ragged CSV row, bad .npy, columns
// of different lengths); IoError: unreadable.
void read_input(const std::string& path, std::size_t file_index, const Columns& columns, std::size_t block_rows,
                const std::function<void(RowBlock&)>& sink);

// One Parquet file (build_input_parquet.cpp), for read_input.
void read_parquet(const std::string& path, std::size_t file_index, const Columns& columns, std::size_t block_rows,
                  const std::function<void(RowBlock&)>& sink);

// A number field as text (surrounding blanks and a leading '+' allowed); NaN when it does not parse.
double parse_number(std::string_view text) noexcept;

// Runs `produce(sink)` on a thread of its own and hands every block it emits to `consume` on the
// calling thread, at most `depth` blocks ahead, so reading and decoding the next block (gzip
// chunks of a granule, CSV parsing) overlaps the geocoding of this one. An exception on either
// side stops both and is rethrown here, after the reading thread has ended.
void read_ahead(const std::function<void(const PointSink&)>& produce, const std::function<void(RowBlock&)>& consume,
                std::size_t depth = 2);

// The number of rows when known without parsing (.npy directories), for progress reports.
std::optional<std::uint64_t> row_count(const std::string& path, const Columns& columns);

// A toc word of a time text in `format` (0 when it does not parse or is out of range).
std::uint64_t parse_time(std::string_view text, TimeFormat format) noexcept;
// A toc word of an integer nanosecond count in `format` (not Iso).
std::uint64_t time_of_ns(std::int64_t ns, TimeFormat format) noexcept;

}  // namespace tessera::ragged::build::detail
