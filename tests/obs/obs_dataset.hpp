// A small dataset with obs for the obs tests: random counts, and obs columns of every kind
// (category, numeric with nulls, bool with nulls, non-ASCII strings with nulls, obs_names).
#pragma once

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/obs_table.hpp"

namespace tessera::cells::test {

inline InputObsTable random_obs_table(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  InputObsTable t{"memory", n, {}, {}};
  InputObsColumn ct{"cell_type",
                    ObsKind::Category,
                    columnar::Column(columnar::ColumnType::Int32),
                    {"T cell", "B cell", "Müller glia", "NK"}};
  InputObsColumn age{"age", ObsKind::Numeric, columnar::Column(columnar::ColumnType::Double), {}};
  InputObsColumn count{"n_counts", ObsKind::Numeric, columnar::Column(columnar::ColumnType::Int64), {}};
  InputObsColumn ok{"is_doublet", ObsKind::Bool, columnar::Column(columnar::ColumnType::Bool), {}};
  InputObsColumn donor{"donor", ObsKind::String, columnar::Column(columnar::ColumnType::String), {}};
  InputObsColumn names{"obs_names", ObsKind::String, columnar::Column(columnar::ColumnType::String), {}};
  const char* donors[] = {"d1", "Zoë", "日本", ""};
  for (std::uint64_t i = 0; i < n; ++i) {
    ct.values.append<std::int32_t>(static_cast<std::int32_t>(rng() % 5) - 1);
    const bool age_missing = rng() % 7 == 0;
    age.values.append<double>(age_missing ? std::optional<double>() : std::optional<double>(double(rng() % 1000) / 8));
    count.values.append<std::int64_t>(static_cast<std::int64_t>(rng() % 100000) - 5);
    ok.values.append<std::uint8_t>(rng() % 5 == 0 ? std::optional<std::uint8_t>()
                                                  : std::optional<std::uint8_t>(rng() % 2));
    donor.values.append_string(rng() % 6 == 0 ? std::optional<std::string_view>()
                                              : std::optional<std::string_view>(donors[rng() % 4]));
    const std::string name = "cell-" + std::to_string(i);
    names.values.append_string(name);
  }
  t.columns = {ct, age, count, ok, donor, names};
  return t;
}

inline CsrBlock random_counts(std::uint64_t n_cells, std::uint64_t n_genes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrBlock m;
  std::vector<std::int64_t> values;
  for (std::uint64_t i = 0; i < n_cells; ++i) {
    for (std::uint64_t g = 0; g < n_genes; ++g)
      if (rng() % 4 == 0) {
        m.indices.push_back(static_cast<std::int64_t>(g));
        values.push_back(static_cast<std::int64_t>(rng() % 50 + 1));
      }
    m.indptr.push_back(static_cast<std::int64_t>(m.indices.size()));
  }
  m.values = values;
  return m;
}

// Writes a dataset of `n_cells` cells with obs from random_obs_table into `dir`.
inline Manifest write_obs_dataset(const std::filesystem::path& dir, std::uint64_t n_cells, std::uint64_t tile_size,
                                  std::uint64_t tiles_per_file, std::uint64_t seed = 1) {
  MemoryCsrSource src(12, random_counts(n_cells, 12, seed));
  const InputObsTable table = random_obs_table(n_cells, seed);
  auto obs = std::make_shared<ObsWriteInput>();
  const std::vector<InputObsTable> tables = {table};
  obs->schema = infer_obs_schema(tables);
  obs->columns = encode_obs_table(table, obs->schema);
  obs->tiles_per_file = tiles_per_file;
  DatasetWriteOptions o;
  o.tile_size = tile_size;
  o.n_chunks = 2;
  o.level = 3;
  o.obs = obs;
  return write_dataset(src, dir.string(), o);
}

}  // namespace tessera::cells::test
