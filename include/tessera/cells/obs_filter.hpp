// Selecting cells by their obs values: the `where` of `tessera cells get --where` and of Python's
// `Obs.filter` / `TorchDataset(where=...)`, one implementation for both.
//
// A where document is a JSON object `{column: condition}`; the conditions are combined with AND:
//   value            the column equals it (a string for category and string columns, a number or
//                    boolean for numeric and bool columns)
//   [v1, v2, ...]    the column equals one of them
//   {"ge": lo, "lt": hi}  numeric columns: lo <= value < hi (either bound may be left out)
//   null             the value is missing
// A missing value meets only `null`. A value that is not among a category column's categories
// matches no cell (it is not an error: a filter written for one dataset runs on another).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/cells/obs_store.hpp"

namespace tessera::cells {

// One value a condition names: text, or a number (booleans are 0 and 1, as numpy compares them).
// Numbers are long double, whose 64-bit significand holds every int64 and uint64 value exactly.
using ObsValue = std::variant<std::string, long double>;

struct ObsCondition {
  enum class Test : std::uint8_t { Missing, Members, Range };
  std::string column;
  Test test = Test::Members;
  std::vector<ObsValue> members;             // Members: the values the column may equal
  std::optional<long double> at_least = {};  // Range: lo (inclusive), if any
  std::optional<long double> below = {};     // Range: hi (exclusive), if any
};

// Parses the JSON text of a where document; UsageError naming `source` and the column for a
// document that is not an object or a condition of no known form.
[[nodiscard]] std::vector<ObsCondition> parse_obs_where(std::string_view text, std::string_view source = "--where");

// The cells (sorted, ascending) of `n_cells` whose obs values meet every condition; the columns
// are localized first. UsageError for a column the schema lacks or a condition its kind cannot
// take (a range on a string column, a string compared with a numeric column).
[[nodiscard]] std::vector<std::int64_t> filter_cells(ObsStore& store, std::int64_t n_cells,
                                                     std::span<const ObsCondition> where);

}  // namespace tessera::cells
