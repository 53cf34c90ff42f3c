// Building the obs schema from input tables and encoding them (spec deltacells.md §6.4).
#include "tessera/cells/obs_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using columnar::Column;
using columnar::ColumnType;

unsigned bits_of(ColumnType t) { return static_cast<unsigned>(columnar::column_type_width(t) * 8); }

ColumnType signed_of(unsigned bits) {
  switch (bits) {
    case 8: return ColumnType::Int8;
    case 16: return ColumnType::Int16;
    case 32: return ColumnType::Int32;
    default: return ColumnType::Int64;
  }
}

ColumnType unsigned_of(unsigned bits) {
  switch (bits) {
    case 8: return ColumnType::UInt8;
    case 16: return ColumnType::UInt16;
    case 32: return ColumnType::UInt32;
    default: return ColumnType::UInt64;
  }
}

bool is_numeric(ColumnType t) { return t != ColumnType::Bool && t != ColumnType::String; }

// Converts every value of a numeric column to `target` (NaN → null), keeping nulls.
Column convert_numeric(const Column& in, ColumnType target) {
  Column out(target);
  out.length = in.length;
  out.validity = in.validity;
  out.data.resize(in.length * columnar::column_type_width(target));
  bool any_nan_null = false;
  std::vector<std::uint8_t> nan_rows;
  columnar::visit_value_type(in.type, [&](auto src_tag) {
    using S = decltype(src_tag);
    columnar::visit_value_type(target, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      for (std::uint64_t i = 0; i < in.length; ++i) {
        S v;
        std::memcpy(&v, in.data.data() + i * sizeof(S), sizeof(S));
        D d{};
        if constexpr (std::is_floating_point_v<S>) {
          if (std::isnan(v)) {
            if (!any_nan_null) {
              any_nan_null = true;
              nan_rows.assign(in.length, 0);
            }
            nan_rows[i] = 1;
            std::memcpy(out.data.data() + i * sizeof(D), &d, sizeof(D));
            continue;
          }
        }
        if (in.is_valid(i)) d = static_cast<D>(v);
        std::memcpy(out.data.data() + i * sizeof(D), &d, sizeof(D));
      }
    });
  });
  if (any_nan_null) {
    if (out.validity.empty()) out.validity.assign(in.length, 1);
    for (std::uint64_t i = 0; i < in.length; ++i)
      if (nan_rows[i]) out.validity[i] = 0;
  }
  return out;
}

const InputObsColumn* find_column(const InputObsTable& t, const std::string& name) {
  for (const auto& c : t.columns)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

ColumnType promote_numeric(ColumnType a, ColumnType b) {
  if (!is_numeric(a) || !is_numeric(b)) throw UsageError("promote_numeric: not numeric types");
  if (a == b) return a;
  if (a == ColumnType::Double || b == ColumnType::Double) return ColumnType::Double;
  if (a == ColumnType::Float || b == ColumnType::Float) {
    const ColumnType other = a == ColumnType::Float ? b : a;
    return bits_of(other) <= 16 ? ColumnType::Float : ColumnType::Double;
  }
  const bool sa = columnar::is_signed_integer(a), sb = columnar::is_signed_integer(b);
  if (sa == sb) {
    const unsigned bits = std::max(bits_of(a), bits_of(b));
    return sa ? signed_of(bits) : unsigned_of(bits);
  }
  const unsigned s = sa ? bits_of(a) : bits_of(b), u = sa ? bits_of(b) : bits_of(a);
  if (u < s) return signed_of(s);
  if (2 * u <= 64) return signed_of(2 * u);
  return ColumnType::Double;
}

ObsSchema infer_obs_schema(std::span<const InputObsTable> tables, const ObsBuildOptions& options) {
  if (tables.empty()) throw UsageError("obs: no input tables");
  const std::set<std::string> excluded(options.exclude.begin(), options.exclude.end());
  for (const auto& name : excluded) {
    bool found = false;
    for (const auto& t : tables)
      found = found || find_column(t, name) != nullptr ||
              std::find(t.skipped.begin(), t.skipped.end(), name) != t.skipped.end();
    if (!found) throw UsageError("--obs-exclude names '" + name + "', which no obs table has");
  }
  std::vector<std::string> order;
  for (const auto& c : tables.front().columns)
    if (!excluded.contains(c.name)) order.push_back(c.name);
  const std::set<std::string> wanted(order.begin(), order.end());

  ObsSchema schema;
  for (const auto& t : tables) {
    std::size_t kept = 0;
    for (const auto& c : t.columns) {
      if (excluded.contains(c.name)) continue;
      ++kept;
      if (!wanted.contains(c.name))
        throw FormatError(t.source + ": obs has the column '" + c.name + "', which " + tables.front().source +
                              " does not have (every input needs the same obs columns)",
                          t.source, "obs");
      if (c.values.length != t.n_rows)
        throw FormatError(t.source + ": obs column '" + c.name + "' has " + std::to_string(c.values.length) +
                              " rows for " + std::to_string(t.n_rows) + " cells",
                          t.source, "obs");
    }
    if (kept != order.size()) {
      for (const auto& name : order)
        if (!find_column(t, name))
          throw FormatError(t.source + ": obs has no column '" + name + "' (" + tables.front().source +
                                " has it; every input needs the same obs columns)",
                            t.source, "obs");
    }
  }
  for (const auto& name : order) {
    ObsColumnSchema col;
    col.name = name;
    std::map<std::string, std::size_t> index;  // vocabulary union, first appearance order
    for (std::size_t ti = 0; ti < tables.size(); ++ti) {
      const InputObsColumn& c = *find_column(tables[ti], name);
      if (ti == 0) {
        col.kind = c.kind;
        col.type = c.values.type;
      } else if (c.kind != col.kind) {
        throw FormatError(tables[ti].source + ": obs column '" + name + "' is " + std::string(obs_kind_name(c.kind)) +
                              " but " + std::string(obs_kind_name(col.kind)) + " in " + tables.front().source,
                          tables[ti].source, "obs");
      } else if (col.kind == ObsKind::Numeric) {
        col.type = promote_numeric(col.type, c.values.type);
      }
      if (c.kind == ObsKind::Category)
        for (const auto& v : c.categories)
          if (index.emplace(v, col.categories.size()).second) col.categories.push_back(v);
    }
    if (col.kind == ObsKind::Category) {
      if (col.categories.size() > options.max_categories) {
        col.kind = ObsKind::String;
        col.type = ColumnType::String;
        col.categories.clear();
      } else {
        col.type = category_code_type(col.categories.size());
      }
    } else if (col.kind == ObsKind::Bool) {
      col.type = ColumnType::Bool;
    } else if (col.kind == ObsKind::String) {
      col.type = ColumnType::String;
    }
    schema.columns.push_back(std::move(col));
  }
  schema.validate("obs schema");
  return schema;
}

std::vector<Column> encode_obs_table(const InputObsTable& table, const ObsSchema& schema) {
  std::vector<Column> out;
  out.reserve(schema.columns.size());
  for (const auto& col : schema.columns) {
    const InputObsColumn* c = find_column(table, col.name);
    if (!c) throw FormatError(table.source + ": obs has no column '" + col.name + "'", table.source, "obs");
    if (c->values.length != table.n_rows)
      throw FormatError(table.source + ": obs column '" + col.name + "' has " + std::to_string(c->values.length) +
                            " rows for " + std::to_string(table.n_rows) + " cells",
                        table.source, "obs");
    c->values.check_shape();
    if (c->kind == ObsKind::Category) {
      if (c->values.type != ColumnType::Int32)
        throw UsageError("obs: category codes of '" + col.name + "' must be int32");
      // Table code → stored code (global vocabulary), or the text when the column became string.
      std::vector<std::int32_t> global;
      if (col.kind == ObsKind::Category) {
        std::unordered_map<std::string_view, std::int32_t> index;
        for (std::size_t i = 0; i < col.categories.size(); ++i)
          index.emplace(col.categories[i], static_cast<std::int32_t>(i));
        for (const auto& v : c->categories) {
          const auto it = index.find(v);
          if (it == index.end())
            throw FormatError(
                table.source + ": obs column '" + col.name + "': category '" + v + "' is not in the vocabulary",
                table.source, "obs");
          global.push_back(it->second);
        }
      }
      Column enc(col.type);
      for (std::uint64_t i = 0; i < c->values.length; ++i) {
        const std::int32_t code = c->values.value<std::int32_t>(i);
        if (code < -1 || code >= static_cast<std::int64_t>(c->categories.size()))
          throw FormatError(table.source + ": obs column '" + col.name + "': code " + std::to_string(code) +
                                " at row " + std::to_string(i) + " is outside -1.." +
                                std::to_string(c->categories.size() - 1),
                            table.source, "obs");
        if (col.kind == ObsKind::String) {
          if (code < 0) enc.append_string(std::nullopt);
          else enc.append_string(c->categories[static_cast<std::size_t>(code)]);
          continue;
        }
        const std::int32_t g = code < 0 ? -1 : global[static_cast<std::size_t>(code)];
        columnar::visit_value_type(col.type,
                                   [&](auto tag) { enc.append<decltype(tag)>(static_cast<decltype(tag)>(g)); });
      }
      out.push_back(std::move(enc));
    } else if (col.kind == ObsKind::Numeric) {
      out.push_back(convert_numeric(c->values, col.type));
    } else {
      if (c->values.type != col.type)
        throw UsageError("obs: column '" + col.name + "' holds " +
                         std::string(columnar::column_type_name(c->values.type)) + " values for kind " +
                         std::string(obs_kind_name(col.kind)));
      out.push_back(c->values);
    }
  }
  return out;
}

}  // namespace tessera::cells
