// Helpers of the columnar tests: deterministic random columns of every stored type, running the
// npm cross-check scripts in tests/columnar/node, and comparing a Column with the values an
// independent reader printed (every value as JavaScript's String(v), null for nulls).
#pragma once

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/columnar/column.hpp"

namespace tessera::columnar::test {

inline const std::vector<ColumnType>& all_types() {
  static const std::vector<ColumnType> types = {ColumnType::Int8,   ColumnType::Int16,  ColumnType::Int32,
                                                ColumnType::Int64,  ColumnType::UInt8,  ColumnType::UInt16,
                                                ColumnType::UInt32, ColumnType::UInt64, ColumnType::Float,
                                                ColumnType::Double, ColumnType::Bool,   ColumnType::String};
  return types;
}

// `n` rows of `type`; each row null with probability `null_rate`; integers span the type's
// whole range (extremes included), strings include empty and non-ASCII values.
inline Column random_column(ColumnType type, std::size_t n, double null_rate, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  static const std::vector<std::string> words = {
      "",       "alpha",   "beta",         "grün",
      "日本語", "emoji 😀", "tab\tquote\"", "a much longer value that repeats a few words a few words"};
  Column c(type);
  for (std::size_t i = 0; i < n; ++i) {
    const bool valid = unit(rng) >= null_rate;
    const std::uint64_t bits = i < 2 ? (i == 0 ? 0 : ~std::uint64_t{0}) : rng();
    switch (type) {
      case ColumnType::Int8:
        c.append<std::int8_t>(valid ? std::optional(static_cast<std::int8_t>(bits)) : std::nullopt);
        break;
      case ColumnType::Int16:
        c.append<std::int16_t>(valid ? std::optional(static_cast<std::int16_t>(bits)) : std::nullopt);
        break;
      case ColumnType::Int32:
        c.append<std::int32_t>(valid ? std::optional(static_cast<std::int32_t>(bits)) : std::nullopt);
        break;
      case ColumnType::Int64:
        c.append<std::int64_t>(valid ? std::optional(static_cast<std::int64_t>(bits)) : std::nullopt);
        break;
      case ColumnType::UInt8:
        c.append<std::uint8_t>(valid ? std::optional(static_cast<std::uint8_t>(bits)) : std::nullopt);
        break;
      case ColumnType::UInt16:
        c.append<std::uint16_t>(valid ? std::optional(static_cast<std::uint16_t>(bits)) : std::nullopt);
        break;
      case ColumnType::UInt32:
        c.append<std::uint32_t>(valid ? std::optional(static_cast<std::uint32_t>(bits)) : std::nullopt);
        break;
      case ColumnType::UInt64: c.append<std::uint64_t>(valid ? std::optional(bits) : std::nullopt); break;
      case ColumnType::Float:
        c.append<float>(valid ? std::optional(static_cast<float>((unit(rng) - 0.5) * 1e4)) : std::nullopt);
        break;
      case ColumnType::Double: c.append<double>(valid ? std::optional((unit(rng) - 0.5) * 1e12) : std::nullopt); break;
      case ColumnType::Bool:
        c.append<std::uint8_t>(valid ? std::optional<std::uint8_t>(bits & 1) : std::nullopt);
        break;
      case ColumnType::String: {
        const std::string s = words[bits % words.size()] + (bits % 3 == 0 ? std::to_string(bits % 97) : "");
        c.append_string(valid ? std::optional<std::string_view>(s) : std::nullopt);
        break;
      }
    }
  }
  return c;
}

// Row `r` as JavaScript would print it (numbers are compared by value, see expect_same_values).
inline std::string js_string(const Column& c, std::uint64_t r) {
  switch (c.type) {
    case ColumnType::Int8: return std::to_string(c.value<std::int8_t>(r));
    case ColumnType::Int16: return std::to_string(c.value<std::int16_t>(r));
    case ColumnType::Int32: return std::to_string(c.value<std::int32_t>(r));
    case ColumnType::Int64: return std::to_string(c.value<std::int64_t>(r));
    case ColumnType::UInt8: return std::to_string(c.value<std::uint8_t>(r));
    case ColumnType::UInt16: return std::to_string(c.value<std::uint16_t>(r));
    case ColumnType::UInt32: return std::to_string(c.value<std::uint32_t>(r));
    case ColumnType::UInt64: return std::to_string(c.value<std::uint64_t>(r));
    case ColumnType::Bool: return c.value<std::uint8_t>(r) ? "true" : "false";
    case ColumnType::String: return std::string(c.string(r));
    default: return {};
  }
}

// Compares `c` with a JSON array of strings/nulls printed by an npm reader.
// Column `index` of every part (row groups or record batches) in order, as one column.
inline Column concat_parts(const std::vector<std::vector<Column>>& parts, std::size_t index, ColumnType type) {
  Column all(type);
  for (const auto& columns : parts) {
    const Column& part = columns[index];
    for (std::uint64_t r = 0; r < part.length; ++r) {
      if (part.type == ColumnType::String) {
        all.append_string(part.is_valid(r) ? std::optional(part.string(r)) : std::nullopt);
      } else {
        const std::size_t w = column_type_width(part.type);
        all.data.insert(all.data.end(), part.data.begin() + r * w, part.data.begin() + (r + 1) * w);
        all.push_validity(part.is_valid(r));
      }
    }
  }
  return all;
}

inline void expect_same_values(const Column& c, const nlohmann::json& theirs, const std::string& what) {
  ASSERT_TRUE(theirs.is_array()) << what;
  ASSERT_EQ(theirs.size(), c.length) << what;
  for (std::uint64_t r = 0; r < c.length; ++r) {
    const auto& t = theirs[r];
    if (!c.is_valid(r)) {
      ASSERT_TRUE(t.is_null()) << what << " row " << r << ": expected null, got " << t.dump();
      continue;
    }
    ASSERT_TRUE(t.is_string()) << what << " row " << r << ": expected a value, got " << t.dump();
    const std::string s = t.get<std::string>();
    if (c.type == ColumnType::Float || c.type == ColumnType::Double) {
      const double mine = c.type == ColumnType::Float ? static_cast<double>(c.value<float>(r)) : c.value<double>(r);
      ASSERT_EQ(std::strtod(s.c_str(), nullptr), mine) << what << " row " << r << ": " << s;
    } else {
      ASSERT_EQ(s, js_string(c, r)) << what << " row " << r;
    }
  }
}

// The same rows and values (bit for bit; null slots ignored).
inline void expect_same_column(const Column& mine, const Column& theirs, const std::string& what) {
  ASSERT_EQ(mine.type, theirs.type) << what;
  ASSERT_EQ(mine.length, theirs.length) << what;
  for (std::uint64_t r = 0; r < mine.length; ++r) {
    ASSERT_EQ(mine.is_valid(r), theirs.is_valid(r)) << what << " row " << r;
    if (!mine.is_valid(r)) continue;
    if (mine.type == ColumnType::String) {
      ASSERT_EQ(mine.string(r), theirs.string(r)) << what << " row " << r;
    } else {
      const std::size_t w = column_type_width(mine.type);
      ASSERT_EQ(0, std::memcmp(mine.data.data() + r * w, theirs.data.data() + r * w, w)) << what << " row " << r;
    }
  }
}

inline std::filesystem::path node_dir() { return testing::source_dir() / "tests/columnar/node"; }

// Empty when the npm packages can be used; otherwise the reason to skip.
inline std::string node_unavailable() {
  if (!std::filesystem::exists(node_dir() / "node_modules/hyparquet") ||
      !std::filesystem::exists(node_dir() / "node_modules/apache-arrow"))
    return "npm packages missing: run `npm ci --prefix tests/columnar/node`";
  if (testing::run_process({"node", "--version"}).rc != 0) return "node is not on PATH";
  return {};
}

// Runs tests/columnar/node/<script> with `args` and parses its JSON output (if any).
inline nlohmann::json run_node(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"node", (node_dir() / script).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto run = testing::run_process(argv);
  if (run.rc != 0) throw std::runtime_error(script + " failed: " + run.err);
  if (run.out.empty()) return nullptr;
  return nlohmann::json::parse(run.out);
}

// The column's valid values as JSON for the npm writers (64-bit integers as decimal strings).
inline nlohmann::json json_values(const Column& c) {
  nlohmann::json out = nlohmann::json::array();
  for (std::uint64_t r = 0; r < c.length; ++r) {
    if (!c.is_valid(r)) {
      out.push_back(nullptr);
      continue;
    }
    switch (c.type) {
      case ColumnType::Int64:
      case ColumnType::UInt64:
      case ColumnType::String: out.push_back(js_string(c, r)); break;
      case ColumnType::Bool: out.push_back(c.value<std::uint8_t>(r) != 0); break;
      case ColumnType::Float: out.push_back(static_cast<double>(c.value<float>(r))); break;
      case ColumnType::Double: out.push_back(c.value<double>(r)); break;
      default: out.push_back(std::stoll(js_string(c, r)));
    }
  }
  return out;
}

}  // namespace tessera::columnar::test
