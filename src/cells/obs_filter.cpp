// Selecting cells by obs values (include/tessera/cells/obs_filter.hpp): the where document parsed
// into conditions, every condition checked against the schema before anything is read, then one
// column at a time taken for every cell and folded into a mask.
#include "tessera/cells/obs_filter.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <type_traits>
#include <unordered_set>

#include "tessera/cells/report.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using codec::json::Json;
using columnar::Column;

std::string single_quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

[[noreturn]] void refuse(std::string_view source, std::string_view column, const std::string& message) {
  throw UsageError(std::string(source) + ": obs column " + single_quoted(column) + " " + message);
}

std::optional<ObsValue> scalar_value(const Json& v) {
  if (v.is_string()) return ObsValue{v.get<std::string>()};
  if (v.is_boolean()) return ObsValue{static_cast<long double>(v.get<bool>() ? 1 : 0)};
  if (v.is_number_unsigned()) return ObsValue{static_cast<long double>(v.get<std::uint64_t>())};
  if (v.is_number_integer()) return ObsValue{static_cast<long double>(v.get<std::int64_t>())};
  if (v.is_number_float()) return ObsValue{static_cast<long double>(v.get<double>())};
  return std::nullopt;
}

std::optional<long double> range_bound(std::string_view source, std::string_view column, const Json& range,
                                       const char* key) {
  const auto it = range.find(key);
  if (it == range.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || it->is_boolean())
    refuse(source, column,
           std::string("has a range bound \"") + key + "\" that is neither a number nor null: " + it->dump());
  return static_cast<long double>(it->get<double>());
}

ObsCondition parse_condition(std::string_view source, const std::string& column, const Json& v) {
  ObsCondition c;
  c.column = column;
  if (v.is_null()) {
    c.test = ObsCondition::Test::Missing;
  } else if (v.is_object()) {
    for (const auto& [key, _] : v.items())
      if (key != "ge" && key != "lt")
        refuse(source, column, "takes a range as {\"ge\": lo, \"lt\": hi}; \"" + key + "\" is not a member of one");
    c.test = ObsCondition::Test::Range;
    c.at_least = range_bound(source, column, v, "ge");
    c.below = range_bound(source, column, v, "lt");
  } else if (v.is_array()) {
    for (const Json& item : v) {
      const auto value = scalar_value(item);
      if (!value) refuse(source, column, "has a list of values that may hold only values, got " + v.dump());
      c.members.push_back(*value);
    }
  } else {
    c.members.push_back(*scalar_value(v));
  }
  return c;
}

// Whether the row holds a value (the conventions of ObsStore::take: category code -1, NaN in a
// numeric column, a cleared validity bit).
bool present(const ObsTakeColumn& taken, std::uint64_t row) {
  const Column& col = taken.values;
  if (!col.is_valid(row)) return false;
  switch (taken.kind) {
    case ObsKind::Category:
      return columnar::visit_value_type(col.type, [&](auto t) { return col.value<decltype(t)>(row) >= 0; });
    case ObsKind::Numeric:
      return columnar::visit_value_type(col.type, [&](auto t) {
        const auto v = col.value<decltype(t)>(row);
        if constexpr (std::is_floating_point_v<decltype(t)>) return !std::isnan(v);
        return true;
      });
    case ObsKind::Bool:
    case ObsKind::String: return true;
  }
  throw UsageError("obs column " + single_quoted(taken.name) + " has an unknown kind");
}

long double number_at(const Column& col, std::uint64_t row) {
  return columnar::visit_value_type(col.type,
                                    [&](auto t) { return static_cast<long double>(col.value<decltype(t)>(row)); });
}

// Refuses, before any read, a condition the column's kind cannot take.
void check_condition(const ObsCondition& c, const ObsColumnSchema& column) {
  const bool numeric = column.kind == ObsKind::Numeric, bool_kind = column.kind == ObsKind::Bool;
  if (c.test == ObsCondition::Test::Range && !numeric)
    refuse("where", c.column, "is " + std::string(obs_kind_name(column.kind)) + ": a range needs a numeric column");
  if (c.test == ObsCondition::Test::Members && (numeric || bool_kind))
    for (const ObsValue& v : c.members)
      if (std::holds_alternative<std::string>(v))
        refuse("where", c.column,
               "is " + std::string(obs_kind_name(column.kind)) + ": compare it with numbers, not strings (" +
                   single_quoted(std::get<std::string>(v)) + ")");
}

// Clears mask[row] for every row of `taken` that does not meet `c`.
void apply(const ObsCondition& c, const ObsTakeColumn& taken, std::vector<std::uint8_t>& mask) {
  const Column& col = taken.values;
  const auto n = static_cast<std::uint64_t>(mask.size());
  switch (c.test) {
    case ObsCondition::Test::Missing:
      for (std::uint64_t r = 0; r < n; ++r) mask[r] &= present(taken, r) ? 0 : 1;
      return;
    case ObsCondition::Test::Range:
      for (std::uint64_t r = 0; r < n; ++r) {
        if (!mask[r]) continue;
        const bool ok = present(taken, r) && (!c.at_least || number_at(col, r) >= *c.at_least) &&
                        (!c.below || number_at(col, r) < *c.below);
        mask[r] = ok ? 1 : 0;
      }
      return;
    case ObsCondition::Test::Members: break;
  }
  switch (taken.kind) {
    case ObsKind::Category: {
      // The codes of the wanted categories; a value that names no category matches nothing.
      std::unordered_set<std::int64_t> codes;
      for (const ObsValue& v : c.members)
        if (const auto* s = std::get_if<std::string>(&v))
          for (std::size_t k = 0; k < taken.categories.size(); ++k)
            if (taken.categories[k] == *s) codes.insert(static_cast<std::int64_t>(k));
      for (std::uint64_t r = 0; r < n; ++r)
        if (mask[r])
          mask[r] = present(taken, r) && codes.contains(static_cast<std::int64_t>(number_at(col, r))) ? 1 : 0;
      return;
    }
    case ObsKind::String: {
      std::unordered_set<std::string_view> wanted;
      for (const ObsValue& v : c.members)
        if (const auto* s = std::get_if<std::string>(&v)) wanted.insert(*s);
      for (std::uint64_t r = 0; r < n; ++r)
        if (mask[r]) mask[r] = present(taken, r) && wanted.contains(col.string(r)) ? 1 : 0;
      return;
    }
    case ObsKind::Numeric:
    case ObsKind::Bool: {
      std::vector<long double> wanted;
      for (const ObsValue& v : c.members) wanted.push_back(std::get<long double>(v));
      std::sort(wanted.begin(), wanted.end());  // JSON holds no NaN, so the values sort
      for (std::uint64_t r = 0; r < n; ++r)
        if (mask[r])
          mask[r] = present(taken, r) && std::binary_search(wanted.begin(), wanted.end(), number_at(col, r)) ? 1 : 0;
      return;
    }
  }
}

}  // namespace

std::vector<ObsCondition> parse_obs_where(std::string_view text, std::string_view source) {
  Json doc;
  try {
    doc = codec::json::parse_strict(text, source);
  } catch (const FormatError& e) {
    throw UsageError(std::string(source) + ": not a JSON where document: " + e.what());
  }
  if (!doc.is_object())
    throw UsageError(std::string(source) +
                     ": a where document is a JSON object {column: condition}, got: " + std::string(text));
  std::vector<ObsCondition> out;
  for (const auto& [column, condition] : doc.items()) out.push_back(parse_condition(source, column, condition));
  return out;
}

std::vector<std::int64_t> filter_cells(ObsStore& store, std::int64_t n_cells, std::span<const ObsCondition> where) {
  const ObsSchema& schema = store.schema();
  std::vector<std::string> unknown, columns;
  for (const ObsCondition& c : where) {
    if (!schema.find(c.column)) unknown.push_back(c.column);
    else if (std::find(columns.begin(), columns.end(), c.column) == columns.end()) columns.push_back(c.column);
  }
  if (!unknown.empty())
    throw UsageError("unknown obs columns " + python_list_repr(unknown) + " in where; the obs columns are " +
                     python_list_repr(schema.names()));
  for (const ObsCondition& c : where) check_condition(c, schema.column(c.column));

  std::vector<std::int64_t> all(static_cast<std::size_t>(n_cells));
  std::iota(all.begin(), all.end(), std::int64_t{0});
  if (where.empty()) return all;
  store.localize(columns);
  std::vector<std::uint8_t> mask(all.size(), 1);
  // One column at a time, so a filter over many columns holds one column of every cell at once.
  for (const std::string& name : columns) {
    const std::vector<ObsTakeColumn> taken = store.take(all, std::span(&name, 1));
    for (const ObsCondition& c : where)
      if (c.column == name) apply(c, taken.front(), mask);
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) out.push_back(static_cast<std::int64_t>(i));
  return out;
}

}  // namespace tessera::cells
