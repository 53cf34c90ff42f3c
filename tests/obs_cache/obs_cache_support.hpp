// Helpers of the obs cache tests: a small dataset with obs of every kind written by
// cells::write_dataset (several shards, nulls in some tiles only, non-ASCII text), the values a
// `take` must return for given cells (§6.9 Take), and environment save/restore.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/csr_source.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/columnar/column.hpp"
#include "tessera/io/store.hpp"

namespace tessera::cells::obs_test {

using columnar::Column;
using columnar::ColumnType;

// Sets (or, with nullopt, unsets) environment variables and restores them when destroyed.
class EnvGuard {
 public:
  EnvGuard(std::initializer_list<std::pair<const char*, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) ::setenv(name, value->c_str(), 1);
      else ::unsetenv(name);
    }
  }
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A dataset with obs, in its own temporary directory, and a cache directory beside it.
struct ObsDataset {
  testing::TempDir tmp{"tessera-obs-cache"};
  std::string path;   // the dataset directory
  std::string cache;  // a cache root for the tests
  Manifest manifest;
  std::shared_ptr<ObsWriteInput> obs;  // the source values (whole columns)
  std::uint64_t tile_size = 0;

  std::shared_ptr<io::DirectoryStore> store() const { return std::make_shared<io::DirectoryStore>(path); }
  std::unique_ptr<ObsStore> open(std::function<void(const std::string&)> warn = {}) const {
    return std::make_unique<ObsStore>(store(), manifest, ObsOpenOptions{.cache_dir = cache, .warn = std::move(warn)});
  }
  const ObsColumnSchema& schema_of(const std::string& name) const {
    for (const auto& c : obs->schema.columns)
      if (c.name == name) return c;
    throw std::runtime_error("no column " + name);
  }
  const Column& source_of(const std::string& name) const {
    for (std::size_t i = 0; i < obs->schema.columns.size(); ++i)
      if (obs->schema.columns[i].name == name) return obs->columns[i];
    throw std::runtime_error("no column " + name);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& c : obs->schema.columns) out.push_back(c.name);
    return out;
  }
};

// The columns of the standard test dataset; `tiles_with_nulls(t)` says which tiles have nulls.
inline bool tile_has_nulls(std::uint64_t tile) { return tile % 3 == 1; }

// `n_cells` cells in tiles of `tile_size`, obs shards of `tiles_per_file` tiles. Columns:
//   "cell type"  category int8 (non-ASCII category, -1 codes)
//   "age"        numeric double, nulls only in tiles t % 3 == 1
//   "n_genes"    numeric uint16, nulls only in tiles t % 3 == 1
//   "count"      numeric int64, no nulls
//   "is_doublet" bool, nulls only in tiles t % 3 == 1
//   "donor/id"   string, nulls only in tiles t % 3 == 1, non-ASCII and empty values
inline std::unique_ptr<ObsDataset> make_obs_dataset(std::uint64_t n_cells = 1000, std::uint64_t tile_size = 90,
                                                    std::uint64_t tiles_per_file = 3, std::uint64_t seed = 7,
                                                    std::vector<std::string> extra_names = {}) {
  auto d = std::make_unique<ObsDataset>();
  d->path = (d->tmp / "dataset").string();
  d->cache = (d->tmp / "cache").string();
  d->tile_size = tile_size;
  auto obs = std::make_shared<ObsWriteInput>();
  obs->tiles_per_file = tiles_per_file;
  obs->zstd_level = 1;
  const std::vector<std::string> vocab = {"alpha", "beta", "grün", "日本", "T cell"};
  obs->schema.columns = {
      {"cell type", ObsKind::Category, ColumnType::Int8, vocab}, {"age", ObsKind::Numeric, ColumnType::Double, {}},
      {"n_genes", ObsKind::Numeric, ColumnType::UInt16, {}},     {"count", ObsKind::Numeric, ColumnType::Int64, {}},
      {"is_doublet", ObsKind::Bool, ColumnType::Bool, {}},       {"donor/id", ObsKind::String, ColumnType::String, {}},
  };
  for (const auto& name : extra_names) obs->schema.columns.push_back({name, ObsKind::Numeric, ColumnType::Int32, {}});
  std::mt19937_64 rng(seed);
  Column cat(ColumnType::Int8), age(ColumnType::Double), genes(ColumnType::UInt16), count(ColumnType::Int64),
      dbl(ColumnType::Bool), donor(ColumnType::String);
  std::vector<Column> extras(extra_names.size(), Column(ColumnType::Int32));
  static const std::vector<std::string> words = {"", "d1", "Zürich", "東京-7", "a much longer donor name", "x\ty"};
  for (std::uint64_t i = 0; i < n_cells; ++i) {
    const bool nully = tile_has_nulls(i / tile_size) && rng() % 4 == 0;
    cat.append<std::int8_t>(static_cast<std::int8_t>(static_cast<int>(rng() % 6) - 1));
    age.append<double>(nully ? std::nullopt : std::optional<double>(static_cast<double>(rng() % 10000) / 7.0));
    genes.append<std::uint16_t>(nully ? std::nullopt : std::optional<std::uint16_t>(static_cast<std::uint16_t>(rng())));
    count.append<std::int64_t>(static_cast<std::int64_t>(rng()));
    dbl.append<std::uint8_t>(nully ? std::nullopt : std::optional<std::uint8_t>(rng() & 1));
    const std::string w = words[rng() % words.size()] + (i % 2 ? std::to_string(i) : "");
    donor.append_string(nully ? std::nullopt : std::optional<std::string_view>(w));
    for (auto& e : extras) e.append<std::int32_t>(static_cast<std::int32_t>(i));
  }
  obs->columns = {cat, age, genes, count, dbl, donor};
  for (auto& e : extras) obs->columns.push_back(std::move(e));

  CsrBlock matrix;
  std::vector<std::int64_t> values;
  for (std::uint64_t i = 0; i < n_cells; ++i) {
    matrix.indices.push_back(static_cast<std::int64_t>(i % 5));
    values.push_back(static_cast<std::int64_t>(i % 7 + 1));
    matrix.indptr.push_back(static_cast<std::int64_t>(matrix.indices.size()));
  }
  matrix.values = values;
  MemoryCsrSource source(5, matrix);
  DatasetWriteOptions o;
  o.tile_size = tile_size;
  o.level = 1;
  o.workers = 1;
  o.obs = obs;
  d->manifest = write_dataset(source, d->path, o);
  d->obs = obs;
  return d;
}

// Checks one `take` column against the source values for `cells` (§6.9 Take).
inline void expect_take(const ObsDataset& d, const ObsTakeColumn& got, std::span<const std::int64_t> cells) {
  const ObsColumnSchema& schema = d.schema_of(got.name);
  const Column& src = d.source_of(got.name);
  const Column& v = got.values;
  ASSERT_EQ(got.kind, schema.kind) << got.name;
  ASSERT_EQ(v.length, cells.size()) << got.name;
  v.check_shape();
  if (schema.kind == ObsKind::Category) EXPECT_EQ(got.categories, schema.categories) << got.name;
  else EXPECT_TRUE(got.categories.empty()) << got.name;
  // Whether a tile of a requested cell has a null in this column (from the source values).
  bool touched_nulls = false;
  for (const auto c : cells) {
    const std::uint64_t first = static_cast<std::uint64_t>(c) / d.tile_size * d.tile_size;
    const std::uint64_t end = std::min<std::uint64_t>(first + d.tile_size, src.length);
    for (std::uint64_t r = first; r < end && !touched_nulls; ++r) touched_nulls = !src.is_valid(r);
  }
  if (schema.kind == ObsKind::Numeric) {
    EXPECT_TRUE(v.validity.empty()) << got.name;
    const bool as_double = touched_nulls;
    ASSERT_EQ(v.type, as_double ? ColumnType::Double : schema.type) << got.name;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto c = static_cast<std::uint64_t>(cells[i]);
      if (!as_double) {
        const std::size_t w = columnar::column_type_width(v.type);
        ASSERT_EQ(0, std::memcmp(v.data.data() + i * w, src.data.data() + c * w, w)) << got.name << " cell " << c;
        continue;
      }
      const double x = v.value<double>(i);
      if (!src.is_valid(c)) {
        ASSERT_TRUE(std::isnan(x)) << got.name << " cell " << c;
      } else {
        const double want = columnar::visit_value_type(
            schema.type, [&](auto t) { return static_cast<double>(src.value<decltype(t)>(c)); });
        ASSERT_EQ(x, want) << got.name << " cell " << c;
      }
    }
    return;
  }
  ASSERT_EQ(v.type, schema.type) << got.name;
  bool any_null = false;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto c = static_cast<std::uint64_t>(cells[i]);
    any_null |= !src.is_valid(c);
    ASSERT_EQ(v.is_valid(i), src.is_valid(c)) << got.name << " cell " << c;
    if (!src.is_valid(c)) {
      if (v.type == ColumnType::String) {
        ASSERT_TRUE(v.string(i).empty());
      }
      continue;
    }
    if (v.type == ColumnType::String) {
      ASSERT_EQ(v.string(i), src.string(c)) << got.name << " cell " << c;
    } else {
      const std::size_t w = columnar::column_type_width(v.type);
      ASSERT_EQ(0, std::memcmp(v.data.data() + i * w, src.data.data() + c * w, w)) << got.name << " cell " << c;
    }
  }
  EXPECT_EQ(v.validity.empty(), !any_null) << got.name << ": validity is empty exactly when every row is valid";
}

inline std::vector<std::int64_t> random_cells(std::uint64_t n_cells, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out(n);
  for (auto& c : out) c = static_cast<std::int64_t>(rng() % n_cells);
  return out;
}

// Every file name under `dir` (recursively) that contains `part`.
inline std::vector<std::string> files_containing(const std::string& dir, const std::string& part) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(part) != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace tessera::cells::obs_test
