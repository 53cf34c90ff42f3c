// Localizing obs columns (C1–C6) and taking rows from the cache (§6.9 Take): values equal the
// source, only the requested chunks are read, a second localize reads nothing, errors leave no
// temporary files, reads run on the pool, apache-arrow reads the cache files and files written
// by apache-arrow are used as they are.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "columnar/columnar_support.hpp"
#include "obs_cache/obs_cache_support.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_table.hpp"
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using obs_test::expect_take;
using obs_test::files_containing;
using obs_test::make_obs_dataset;
using obs_test::random_cells;

// (offset, size) of schema column `column`'s chunk in every row group of every shard, tile order.
std::vector<std::pair<std::string, columnar::ColumnChunkInfo>> chunks_of(const obs_test::ObsDataset& d,
                                                                         std::size_t column) {
  std::vector<std::pair<std::string, columnar::ColumnChunkInfo>> out;
  for (std::uint64_t s = 0; s < d.manifest.obs_shard_bytes.size(); ++s) {
    const std::string key = obs_shard_key(s);
    const auto source = io::open_file(d.path + "/" + key);
    const auto file = columnar::ParquetFile::open(*source);
    for (const auto& g : file.row_groups()) out.emplace_back(key, g.columns.at(column));
  }
  return out;
}

bool lock_is_free(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

TEST(ObsLocalize, TakeAfterLocalizeEqualsTheSource) {
  const auto d = make_obs_dataset(1000, 90, 3);
  ASSERT_EQ(d->manifest.obs_shard_bytes.size(), 4u);
  const auto store = d->open();
  const auto names = d->names();
  EXPECT_EQ(store->localize_all(3), names);
  EXPECT_EQ(store->localized_columns(), names);
  // Random cells with repeats, every column, twice (the second from the open-file cache).
  const auto cells = random_cells(1000, 3000, 11);
  for (int round = 0; round < 2; ++round) {
    const auto got = store->take(cells, names);
    ASSERT_EQ(got.size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(got[i].name, names[i]);
      expect_take(*d, got[i], cells);
    }
  }
  // Cells of tiles without nulls keep the stored type; one cell of a tile with nulls makes
  // numeric columns float64 with NaN.
  const std::vector<std::int64_t> clean = {0, 89, 5, 5, 200, 999, 0};
  const std::vector<std::int64_t> mixed = {0, 95, 89};
  const std::vector<std::string> numeric = {"age", "n_genes", "count", "cell type", "age"};
  for (const auto* set : {&clean, &mixed}) {
    const auto got = store->take(*set, numeric);
    ASSERT_EQ(got.size(), numeric.size());
    for (const auto& col : got) expect_take(*d, col, *set);
  }
  EXPECT_EQ(store->take(clean, numeric)[1].values.type, columnar::ColumnType::UInt16);
  EXPECT_EQ(store->take(mixed, numeric)[1].values.type, columnar::ColumnType::Double);
  // No cells: empty columns of the right kinds.
  const auto none = store->take(std::span<const std::int64_t>(), names);
  for (const auto& col : none) EXPECT_EQ(col.values.length, 0u);
  // Another store over the same cache uses the files.
  const auto other = d->open();
  EXPECT_TRUE(other->localize_all().empty());
  for (const auto& col : other->take(cells, names)) expect_take(*d, col, cells);
  EXPECT_TRUE(files_containing(d->cache, ".tmp").empty());
}

TEST(ObsLocalize, CacheFilesDoNotDependOnThreads) {
  const auto d = make_obs_dataset(700, 40, 4);
  const auto one = std::make_unique<ObsStore>(d->store(), d->manifest, ObsOpenOptions{.cache_dir = d->cache + "/one"});
  const auto many =
      std::make_unique<ObsStore>(d->store(), d->manifest, ObsOpenOptions{.cache_dir = d->cache + "/many"});
  one->localize_all(1);
  many->localize_all(8);
  for (const auto& name : d->names()) {
    const std::string file = "/" + quote_column_file_name(name) + ".arrow";
    EXPECT_EQ(testing::read_file_bytes(one->cache_dir() + file), testing::read_file_bytes(many->cache_dir() + file))
        << name;
  }
}

TEST(ObsLocalize, SecondLocalizeReadsNothing) {
  const auto d = make_obs_dataset(500, 60, 2);
  auto inner = d->store();
  const auto counting = std::make_shared<io::CountingStore>(*inner);
  ObsStore store(counting, d->manifest, {.cache_dir = d->cache});
  const std::vector<std::string> cols = {"donor/id", "cell type"};
  EXPECT_EQ(store.localize(cols), cols);
  EXPECT_GT(counting->gets(), 0u);
  counting->reset();
  EXPECT_TRUE(store.localize(cols).empty());  // C2
  EXPECT_EQ(counting->gets() + counting->heads() + counting->lists(), 0u);
  ObsStore fresh(counting, d->manifest, {.cache_dir = d->cache});
  counting->reset();
  EXPECT_TRUE(fresh.localize(cols).empty());
  const std::vector<std::string> one = {"cell type"};
  EXPECT_TRUE(fresh.localize(one).empty());
  EXPECT_EQ(counting->gets() + counting->heads() + counting->lists(), 0u);
  // Take of local columns reads nothing from the dataset either.
  const auto cells = random_cells(500, 100, 2);
  for (const auto& col : fresh.take(cells, cols)) expect_take(*d, col, cells);
  EXPECT_EQ(counting->gets(), 0u);
}

TEST(ObsLocalize, OneColumnReadsFootersAndOneChunkPerTile) {
  const auto d = make_obs_dataset(1000, 90, 5);
  const std::uint64_t n_tiles = d->manifest.n_tiles();
  auto inner = d->store();
  const auto counting = std::make_shared<io::CountingStore>(*inner);
  // The footers alone (column_nbytes opens them).
  std::uint64_t footer_gets = 0;
  {
    ObsStore store(counting, d->manifest, {.cache_dir = d->cache + "/a"});
    counting->reset();
    const auto nbytes = store.column_nbytes();
    footer_gets = counting->gets();
    EXPECT_GT(footer_gets, 0u);
    EXPECT_LE(footer_gets, 3 * d->manifest.obs_shard_bytes.size());
    for (std::size_t c = 0; c < d->names().size(); ++c) {
      std::uint64_t sum = 0;
      for (const auto& [key, info] : chunks_of(*d, c)) sum += info.size;
      EXPECT_EQ(nbytes[c], sum) << d->names()[c];
    }
    // Footers are kept: localizing now reads exactly one chunk per tile, the column's.
    counting->reset();
    const std::vector<std::string> age = {"age"};
    EXPECT_EQ(store.localize(age, 4), age);
    EXPECT_EQ(counting->gets(), n_tiles);
    const auto expected = chunks_of(*d, 1);
    auto log = counting->log();
    std::sort(log.begin(), log.end(),
              [](const auto& a, const auto& b) { return std::tie(a.key, a.offset) < std::tie(b.key, b.offset); });
    ASSERT_EQ(log.size(), expected.size());
    for (std::size_t t = 0; t < log.size(); ++t) {
      EXPECT_EQ(log[t].key, expected[t].first);
      EXPECT_EQ(log[t].offset, expected[t].second.offset) << "tile " << t;
      EXPECT_EQ(log[t].length, expected[t].second.size) << "tile " << t;
    }
  }
  // A fresh store: the footers, then one read per tile.
  ObsStore fresh(counting, d->manifest, {.cache_dir = d->cache + "/b"});
  counting->reset();
  const std::vector<std::string> donor = {"donor/id"};
  EXPECT_EQ(fresh.localize(donor, 2), donor);
  EXPECT_EQ(counting->gets(), footer_gets + n_tiles);
  EXPECT_EQ(fresh.localized_columns(), donor);
}

// A store that records how many reads run at once. Once `meet(n)` is called, until n reads have
// been in flight together each read waits for the next one to start (at most 60 s, so reads that
// really run one at a time end in a failed peak check rather than a hang): overlap is made
// certain, not hoped for from the timing of the threads.
class OverlapStore final : public io::Store {
 public:
  explicit OverlapStore(io::Store& inner) : inner_(inner) {}
  void meet(int n) {
    std::lock_guard lock(mutex_);
    meet_ = n;
    peak_ = now_;
  }
  std::unique_ptr<io::ByteSource> open(const std::string& key) const override {
    auto source = inner_.open(key);
    return source ? std::make_unique<Source>(std::move(source), *this) : nullptr;
  }
  bool exists(const std::string& key) const override { return inner_.exists(key); }
  std::vector<std::string> list(const std::string& prefix) const override { return inner_.list(prefix); }
  void put(const std::string& key, std::span<const std::byte> bytes) override { inner_.put(key, bytes); }
  void erase(const std::string& key) override { inner_.erase(key); }
  const std::string& name() const override { return inner_.name(); }
  int peak() const {
    std::lock_guard lock(mutex_);
    return peak_;
  }

 private:
  class Source final : public io::ByteSource {
   public:
    Source(std::unique_ptr<io::ByteSource> inner, const OverlapStore& store)
        : inner_(std::move(inner)), store_(store) {}
    std::uint64_t size() const override { return inner_->size(); }
    const std::string& name() const override { return inner_->name(); }
    void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
      {
        std::unique_lock lock(store_.mutex_);
        store_.peak_ = std::max(store_.peak_, ++store_.now_);
        store_.met_.notify_all();
        store_.met_.wait_for(lock, std::chrono::seconds(60), [&] { return store_.peak_ >= store_.meet_; });
      }
      inner_->read_at(offset, dst);
      std::lock_guard lock(store_.mutex_);
      --store_.now_;
    }

   private:
    std::unique_ptr<io::ByteSource> inner_;
    const OverlapStore& store_;
  };
  io::Store& inner_;
  mutable int meet_ = 0;
  mutable std::mutex mutex_;
  mutable std::condition_variable met_;
  mutable int now_ = 0;
  mutable int peak_ = 0;
};

TEST(ObsLocalize, ReadsRunOnTheThreadPool) {
  const auto d = make_obs_dataset(1000, 40, 6);
  auto inner = d->store();
  for (const int threads : {1, 3}) {
    const auto overlap = std::make_shared<OverlapStore>(*inner);
    ObsStore store(overlap, d->manifest, {.cache_dir = d->cache + "/" + std::to_string(threads)});
    store.column_nbytes();  // the shard footers, read one after another; kept for localize
    overlap->meet(std::min(threads, 2));
    const std::vector<std::string> cols = {"age", "donor/id", "is_doublet"};
    EXPECT_EQ(store.localize(cols, threads), cols);
    EXPECT_LE(overlap->peak(), threads);
    if (threads > 1) {
      EXPECT_GT(overlap->peak(), 1) << "reads ran one at a time";
    }
    const auto cells = random_cells(1000, 500, 4);
    for (const auto& col : store.take(cells, cols)) expect_take(*d, col, cells);
  }
}

TEST(ObsLocalize, StaleTemporaryFilesAreRemovedUnderTheLock) {
  const auto d = make_obs_dataset(300, 100, 2);
  const auto store = d->open();
  std::filesystem::create_directories(store->cache_dir());
  const std::string stale = store->cache_dir() + "/age.arrow.tmp999999";
  const std::string other = store->cache_dir() + "/notes.txt";
  testing::write_file_text(stale, "partial");
  testing::write_file_text(other, "kept");
  const std::vector<std::string> cols = {"count"};
  EXPECT_EQ(store->localize(cols), cols);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(store->localized_columns(), cols);
}

TEST(ObsLocalize, TakeValidatesCellsFirst) {
  const auto d = make_obs_dataset(300, 100, 2);
  const auto store = d->open();
  const std::vector<std::string> cols = {"age"};
  for (const std::int64_t bad : {std::int64_t{-1}, std::int64_t{300}, std::int64_t{1} << 40}) {
    const std::vector<std::int64_t> cells = {0, bad};
    try {
      store->take(cells, cols);
      FAIL() << "expected a UsageError for " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("[0, 300)"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(std::filesystem::exists(store->cache_dir()));
}

TEST(ObsLocalize, TakeLocalizesMissingColumnsWithAWarning) {
  const auto d = make_obs_dataset(300, 100, 2);
  std::vector<std::string> warnings;
  const auto store = d->open([&](const std::string& w) { warnings.push_back(w); });
  const std::vector<std::string> first = {"cell type"};
  store->localize(first);
  const std::vector<std::string> cols = {"cell type", "is_doublet", "donor/id"};
  const auto cells = random_cells(300, 50, 5);
  for (const auto& col : store->take(cells, cols)) expect_take(*d, col, cells);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "obs columns ['is_doublet', 'donor/id'] were not local and were localized now; localize them before "
            "training (tessera cells obs localize)");
  for (const auto& col : store->take(cells, cols)) expect_take(*d, col, cells);
  EXPECT_EQ(warnings.size(), 1u);
  // Without a callback nothing is reported and nothing fails.
  const auto quiet = std::make_unique<ObsStore>(d->store(), d->manifest, ObsOpenOptions{.cache_dir = d->cache + "/q"});
  for (const auto& col : quiet->take(cells, cols)) expect_take(*d, col, cells);
}

TEST(ObsLocalize, ShardOfTheWrongSizeIsAFormatErrorNamingIt) {
  const auto d = make_obs_dataset(500, 50, 3);
  {
    std::ofstream out(d->path + "/obs/obs_0001.parquet", std::ios::app | std::ios::binary);
    out << 'x';
  }
  const auto store = d->open();
  const std::vector<std::string> cols = {"age"};
  try {
    store->localize(cols);
    FAIL() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(e.describe().find("obs/obs_0001.parquet"), std::string::npos) << e.describe();
  }
  EXPECT_TRUE(files_containing(d->cache, ".tmp").empty());
  EXPECT_TRUE(files_containing(d->cache, ".arrow").empty());
  EXPECT_TRUE(lock_is_free(d->cache + "/" + d->manifest.obs_fingerprint + "/.lock"));
}

TEST(ObsLocalize, FailureMidwayLeavesNoTemporaryFiles) {
  const auto d = make_obs_dataset(1000, 90, 3);
  // Garble the "donor/id" chunk of the last tile (same size, so P1 still holds).
  const std::uint64_t last = d->manifest.obs_shard_bytes.size() - 1;
  const std::string shard = d->path + "/" + obs_shard_key(last);
  auto bytes = testing::read_file_bytes(shard);
  const auto source = io::open_file(shard);
  const auto file = columnar::ParquetFile::open(*source);
  const auto info = file.row_groups().back().columns.at(5);
  std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(info.offset), info.size, std::byte{0xFF});
  testing::write_file_bytes(shard, bytes);

  for (const int threads : {1, 4}) {
    const auto store = d->open();
    const std::vector<std::string> cols = {"age", "donor/id"};
    try {
      store->localize(cols, threads);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(obs_shard_key(last) + ": row group " + std::to_string(file.row_groups().size() - 1) +
                          " column 'donor/id'"),
                std::string::npos)
          << what;
    }
    EXPECT_TRUE(files_containing(d->cache, ".tmp").empty());
    EXPECT_TRUE(files_containing(d->cache, ".arrow").empty());
    EXPECT_TRUE(lock_is_free(d->cache + "/" + d->manifest.obs_fingerprint + "/.lock"));
    // Columns whose chunks are intact still localize.
    const std::vector<std::string> age = {"age"};
    EXPECT_EQ(store->localize(age, threads), age);
    std::filesystem::remove_all(d->cache);
  }
}

// The take of 5,000 cells of the size the speed targets are set for (docs/performance.md,
// bench/bench_cells_obs.cpp measures them): one localize reads each column once, and every take
// after it — a categorical alone and one column of each kind — reads nothing from the dataset
// and returns the source's values.
TEST(ObsLocalize, TakeOfLocalizedColumnsReadsOnlyTheCache) {
  const auto d = make_obs_dataset(50000, 5000, 4);
  d->tile_size = 5000;
  auto inner = d->store();
  const auto counting = std::make_shared<io::CountingStore>(*inner);
  ObsStore store(counting, d->manifest, {.cache_dir = d->cache});
  const std::vector<std::string> mixed = {"cell type", "age", "is_doublet", "donor/id"};
  EXPECT_EQ(store.localize(mixed), mixed);
  EXPECT_EQ(store.localized_columns().size(), mixed.size());
  counting->reset();
  const auto cells = random_cells(50000, 5000, 99);
  const std::vector<std::string> categorical = {"cell type"};
  for (int round = 0; round < 3; ++round) {
    const auto got = store.take(cells, categorical);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].values.length, 5000u);
    expect_take(*d, got[0], cells);
  }
  const auto got = store.take(cells, mixed);
  ASSERT_EQ(got.size(), mixed.size());
  for (const auto& col : got) expect_take(*d, col, cells);
  EXPECT_EQ(counting->gets() + counting->heads() + counting->lists(), 0u)
      << "a take of localized columns read the dataset";
}

TEST(ObsLocalize, ApacheArrowReadsTheCacheFiles) {
  const auto d = make_obs_dataset(600, 70, 3);
  const auto store = d->open();
  store->localize_all();
  if (const auto why = columnar::test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  std::vector<nlohmann::json> expected_batches;
  for (const auto n : d->manifest.tile_cells) expected_batches.push_back(n);
  for (const auto& name : d->names()) {
    const std::string path = store->cache_dir() + "/" + quote_column_file_name(name) + ".arrow";
    const auto theirs = columnar::test::run_node("read_arrow.mjs", {path});
    ASSERT_EQ(theirs["fields"].size(), 1u) << name;
    EXPECT_EQ(theirs["fields"][0]["name"], name);
    EXPECT_EQ(theirs["fields"][0]["nullable"], true);
    EXPECT_EQ(theirs["batches"], nlohmann::json(expected_batches)) << name;
    columnar::test::expect_same_values(d->source_of(name), theirs["columns"][name], "apache-arrow " + name);
  }
}

// The cache is shared with other writers (the Python reference writes it with pyarrow): files
// written by apache-arrow are accepted as they are, without a rebuild or a read of the dataset.
TEST(ObsLocalize, CacheFilesOfAnotherArrowWriterAreUsed) {
  if (const auto why = columnar::test::node_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const auto d = make_obs_dataset(500, 60, 3);
  auto inner = d->store();
  const auto counting = std::make_shared<io::CountingStore>(*inner);
  std::vector<std::string> warnings;
  ObsStore store(counting, d->manifest,
                 {.cache_dir = d->cache, .warn = [&](const std::string& w) { warnings.push_back(w); }});
  std::filesystem::create_directories(store.cache_dir());
  const auto names = d->names();
  for (const auto& name : names) {
    const auto& schema = d->schema_of(name);
    nlohmann::json spec;
    std::uint64_t first = 0;
    for (const auto n : d->manifest.tile_cells) {
      const auto part = slice_rows(d->source_of(name), first, n);
      first += n;
      spec["batches"].push_back({{"columns",
                                  {{{"name", name},
                                    {"type", std::string(columnar::column_type_name(schema.type))},
                                    {"data", columnar::test::json_values(part)}}}}});
    }
    testing::write_file_text(d->tmp / "spec.json", spec.dump());
    columnar::test::run_node("write_arrow.mjs", {store.cache_dir() + "/" + quote_column_file_name(name) + ".arrow",
                                                 (d->tmp / "spec.json").string()});
  }
  counting->reset();
  EXPECT_EQ(store.localized_columns(), names);
  EXPECT_TRUE(store.localize_all().empty());
  const auto cells = random_cells(500, 800, 21);
  for (const auto& col : store.take(cells, names)) expect_take(*d, col, cells);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(counting->gets(), 0u);
}

}  // namespace
}  // namespace tessera::cells
