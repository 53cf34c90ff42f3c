// The deltacells obs sidecar (docs/performance.md): what localizing a few columns reads, and how
// fast `take` gathers rows from the local Arrow cache.
//
// The dataset (written once into DATA_DIR/cells-obs-bench/, seeded and deterministic): 1,000,000
// cells in 100 tiles of 10,000 (one nonzero per cell: the tiles are not what is measured), obs of
// 50 columns in shards of 10 tiles — 15 categoricals (vocabularies of 3 to 5,000 entries), 25
// numerics (float64 QC metrics, float32 scores, int32 and int64 counts; about 2 % missing), 5
// bools and 5 strings (barcodes, unique; sample ids, 200 distinct). Column draws are independent.
//
//   (a) localize: `ObsStore::localize` of 3 of the 50 columns (a categorical, a numeric, a bool)
//       into an empty cache through a counting store: bytes read against the shards' total size
//       (target ≤ 10 %), ranged reads, wall time;
//   (b) take: `take` of 5,000 random cells (repeats allowed) from a localized categorical column,
//       median of R rounds (target ≤ 1 ms); the same for the numeric and a string column, for
//       all three at once, and for one column of each of the four kinds at once (categorical,
//       numeric, bool, string; target ≤ 20 ms).
//
// Usage: bench_cells_obs --data-dir DIR [--repeat R]
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/cells/obs_table.hpp"
#include "tessera/io/store.hpp"

namespace fs = std::filesystem;
using namespace tessera;
using columnar::Column;
using columnar::ColumnType;

namespace {

constexpr std::uint64_t kCells = 1000000, kTile = 10000;

struct Args {
  fs::path data_dir;
  int repeat = 201;
};

cells::InputObsTable generate_obs() {
  std::mt19937_64 rng(20241201);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  cells::InputObsTable t{"generated", kCells, {}, {}};
  const std::uint64_t vocab_sizes[] = {3, 5, 8, 12, 20, 30, 50, 80, 120, 200, 400, 800, 1500, 3000, 5000};
  for (int i = 0; i < 15; ++i) {
    cells::InputObsColumn c{"cat_" + std::to_string(i), cells::ObsKind::Category, Column(ColumnType::Int32), {}};
    for (std::uint64_t k = 0; k < vocab_sizes[i]; ++k) c.categories.push_back("category " + std::to_string(k));
    c.values.data.resize(kCells * 4);
    c.values.length = kCells;
    for (std::uint64_t r = 0; r < kCells; ++r) {
      // Skewed toward small codes, as real labels are; about 1 % missing.
      const auto code = unit(rng) < 0.01 ? -1 : static_cast<std::int32_t>(std::pow(unit(rng), 3) * vocab_sizes[i]);
      std::memcpy(c.values.data.data() + r * 4, &code, 4);
    }
    t.columns.push_back(std::move(c));
  }
  const ColumnType numeric_types[] = {ColumnType::Double, ColumnType::Float, ColumnType::Int32, ColumnType::Int64};
  for (int i = 0; i < 25; ++i) {
    const ColumnType type = numeric_types[i % 4];
    cells::InputObsColumn c{"num_" + std::to_string(i), cells::ObsKind::Numeric, Column(type), {}};
    for (std::uint64_t r = 0; r < kCells; ++r) {
      const bool missing = unit(rng) < 0.02;
      const double x = std::exp(unit(rng) * 8);
      columnar::visit_value_type(type, [&](auto tag) {
        using T = decltype(tag);
        c.values.append<T>(missing ? std::optional<T>() : std::optional<T>(static_cast<T>(x)));
      });
    }
    t.columns.push_back(std::move(c));
  }
  for (int i = 0; i < 5; ++i) {
    cells::InputObsColumn c{"flag_" + std::to_string(i), cells::ObsKind::Bool, Column(ColumnType::Bool), {}};
    for (std::uint64_t r = 0; r < kCells; ++r)
      c.values.append<std::uint8_t>(unit(rng) < 0.01 ? std::optional<std::uint8_t>()
                                                     : std::optional<std::uint8_t>(unit(rng) < 0.3));
    t.columns.push_back(std::move(c));
  }
  for (int i = 0; i < 5; ++i) {
    cells::InputObsColumn c{"text_" + std::to_string(i), cells::ObsKind::String, Column(ColumnType::String), {}};
    for (std::uint64_t r = 0; r < kCells; ++r) {
      const std::string v = i == 0 ? "AAACCTGAGC" + std::to_string(r) + "-1" : "sample-" + std::to_string(rng() % 200);
      c.values.append_string(v);
    }
    t.columns.push_back(std::move(c));
  }
  return t;
}

void write_if_missing(const fs::path& dir) {
  if (fs::exists(dir / "manifest.json")) return;
  std::printf("generating %s ...\n", dir.c_str());
  cells::CsrBlock m;
  std::vector<std::int64_t> values;
  for (std::uint64_t r = 0; r < kCells; ++r) {
    m.indices.push_back(static_cast<std::int64_t>(r % 100));
    values.push_back(1);
    m.indptr.push_back(static_cast<std::int64_t>(r + 1));
  }
  m.values = std::move(values);
  cells::MemoryCsrSource src(100, std::move(m));
  const cells::InputObsTable table = generate_obs();
  auto obs = std::make_shared<cells::ObsWriteInput>();
  const std::vector<cells::InputObsTable> tables = {table};
  obs->schema = cells::infer_obs_schema(tables);
  obs->columns = cells::encode_obs_table(table, obs->schema);
  obs->tiles_per_file = 10;
  cells::DatasetWriteOptions o;
  o.tile_size = kTile;
  o.level = 1;
  o.n_chunks = 1;
  o.obs = obs;
  o.overwrite = true;
  cells::write_dataset(src, dir.string(), o);
}

int run(const Args& a) {
  const fs::path dir = a.data_dir / "cells-obs-bench";
  write_if_missing(dir);
  const cells::Manifest manifest = cells::Dataset::open(dir.string())->manifest();
  std::uint64_t shard_bytes = 0;
  for (const auto b : manifest.obs_shard_bytes) shard_bytes += b;
  const fs::path cache = a.data_dir / "cells-obs-bench-cache";
  fs::remove_all(cache);

  io::DirectoryStore directory(dir.string());
  auto counting = std::make_shared<io::CountingStore>(directory);
  cells::ObsStore obs(counting, manifest, {.cache_dir = cache.string(), .warn = {}, .threads = 8});
  const std::vector<std::string> wanted = {"cat_4", "num_0", "flag_1"};
  auto t0 = std::chrono::steady_clock::now();
  const auto fetched = obs.localize(wanted);
  const double localize_s = bench::seconds_since(t0);
  std::printf("obs: %llu cells, %zu columns, %zu shards, %.1f MB\n", static_cast<unsigned long long>(manifest.n_cells),
              obs.columns().size(), manifest.obs_shard_bytes.size(), static_cast<double>(shard_bytes) / 1e6);
  std::printf(
      "(a) localize %zu of %zu columns: %.2f MB read in %llu GETs = %.2f %% of the shard bytes (target <= 10 %%), "
      "%.3f s\n",
      fetched.size(), obs.columns().size(), static_cast<double>(counting->bytes()) / 1e6,
      static_cast<unsigned long long>(counting->gets()),
      100.0 * static_cast<double>(counting->bytes()) / static_cast<double>(shard_bytes), localize_s);

  std::mt19937_64 rng(7);
  std::vector<std::int64_t> cells(5000);
  const auto time_take = [&](const std::vector<std::string>& columns) {
    std::vector<double> times;
    for (int r = 0; r < a.repeat; ++r) {
      for (auto& c : cells) c = static_cast<std::int64_t>(rng() % kCells);
      t0 = std::chrono::steady_clock::now();
      const auto got = obs.take(cells, columns);
      times.push_back(bench::seconds_since(t0));
      if (got.size() != columns.size()) std::abort();
    }
    return bench::median(times) * 1e3;
  };
  (void)obs.take(cells, wanted);  // maps the files once
  std::printf(
      "(b) take 5,000 random cells, median of %d: categorical %.3f ms (target <= 1 ms), numeric %.3f ms, "
      "bool %.3f ms, all three %.3f ms\n",
      a.repeat, time_take({"cat_4"}), time_take({"num_0"}), time_take({"flag_1"}), time_take(wanted));
  obs.localize(std::vector<std::string>{"text_0"});
  std::printf("    string column (unique barcodes): %.3f ms\n", time_take({"text_0"}));
  std::printf("    four kinds at once (categorical, numeric, bool, string): %.3f ms (target <= 20 ms)\n",
              time_take({"cat_4", "num_0", "flag_1", "text_0"}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("bench_cells_obs", [&] {
    Args a;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--data-dir" && i + 1 < argc) a.data_dir = argv[++i];
      else if (arg == "--repeat" && i + 1 < argc) a.repeat = std::atoi(argv[++i]);
      else {
        std::fprintf(stderr, "usage: bench_cells_obs --data-dir DIR [--repeat R]\n");
        return 2;
      }
    }
    if (a.data_dir.empty() || a.repeat < 1) {
      std::fprintf(stderr, "usage: bench_cells_obs --data-dir DIR [--repeat R]\n");
      return 2;
    }
    return run(a);
  });
}
