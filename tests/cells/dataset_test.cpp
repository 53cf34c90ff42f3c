// Datasets: dataset_small opens and answers expected_dataset_small.json; writing its source
// matrix as version 1 reproduces every object byte for byte; manifests re-serialize exactly;
// writer determinism across worker counts, overwrite policy, reader caches and batches.
#include <gtest/gtest.h>
#include <zstd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/dataset_writer.hpp"
#include "tessera/cells/gene_files.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;
using Json = codec::json::Json;
using tessera::testing::read_file_bytes;
using tessera::testing::read_file_text;
using tessera::testing::TempDir;

fs::path dc_dir() { return tessera::testing::conformance_dir() / "deltacells"; }
fs::path small_dir() { return dc_dir() / "dataset_small"; }
Json expected_small() { return codec::json::parse_strict(read_file_text(dc_dir() / "expected_dataset_small.json")); }

std::vector<std::int64_t> parse_cells(const std::string& key) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= key.size()) {
    const auto comma = key.find(',', start);
    out.push_back(std::stoll(key.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The source matrix of expected_dataset_small.json as CSR (source gene order).
MemoryCsrSource small_source(const Json& e) {
  CsrBlock b;
  std::vector<std::int64_t> values;
  for (const auto& row : e["source_matrix_dense_source_gene_order"]) {
    for (std::size_t g = 0; g < row.size(); ++g) {
      if (row[g].get<std::int64_t>() != 0) {
        b.indices.push_back(static_cast<std::int64_t>(g));
        values.push_back(row[g].get<std::int64_t>());
      }
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  b.values = values;
  return MemoryCsrSource(6, b);
}

TEST(DatasetSmall, OpensAndAnswersExpected) {
  const Json e = expected_small();
  for (const int decode_threads : {1, 2}) {
    auto ds = Dataset::open(small_dir().string(),
                            {.max_cached_tiles = 1, .max_prefetch_tiles = 2, .decode_threads = decode_threads});
    EXPECT_EQ(ds->n_cells(), 10u);
    EXPECT_EQ(ds->n_genes(), 6u);
    EXPECT_EQ(ds->version(), 1u);
    EXPECT_EQ(ds->limits(), e["limits"].get<std::vector<std::uint64_t>>());
    for (const auto& [cell, tile] : e["tile_of"].items())
      EXPECT_EQ(ds->tile_of(std::stoull(cell)), tile.get<std::uint64_t>());
    EXPECT_EQ(ds->gene_order(), e["gene_order"].get<std::vector<std::int32_t>>());
    EXPECT_EQ(ds->var_names(), e["var_names_stored_order"].get<std::vector<std::string>>());
    for (const auto& [key, want] : e["get_batch"].items()) {
      SCOPED_TRACE(key);
      const auto cells = parse_cells(key);
      EXPECT_EQ(ds->batch_nnz(cells), want["indices"].size());
      const SparseBatch bi = ds->get_batch(cells, Values::Int32);
      EXPECT_EQ(bi.indptr, want["indptr"].get<std::vector<std::int64_t>>());
      EXPECT_EQ(bi.indices, want["indices"].get<std::vector<std::int32_t>>());
      EXPECT_EQ(bi.values_int32, want["values"].get<std::vector<std::int32_t>>());
      const SparseBatch bf = ds->get_batch(cells);
      EXPECT_EQ(bf.indices, bi.indices);
      for (std::size_t i = 0; i < bf.values_float32.size(); ++i)
        EXPECT_EQ(bf.values_float32[i], static_cast<float>(bi.values_int32[i]));
    }
    // The stored matrix, cell by cell.
    const auto dense = e["stored_matrix_dense"];
    for (std::int64_t c = 0; c < 10; ++c) {
      const std::int64_t one[] = {c};
      const SparseBatch b = ds->get_batch(one, Values::Int32);
      std::vector<std::int64_t> row(6, 0);
      for (std::size_t j = 0; j < b.indices.size(); ++j) row[b.indices[j]] = b.values_int32[j];
      EXPECT_EQ(row, dense[c].get<std::vector<std::int64_t>>());
    }
    const auto s = ds->stats();
    EXPECT_GE(s.tiles_decoded, 3u);
    EXPECT_GE(s.decoded_cache_hits + s.tile_cache_hits, 1u);
  }
}

TEST(DatasetSmall, ManifestReserializesByteForByte) {
  const std::string text = read_file_text(small_dir() / "manifest.json");
  const Manifest m = Manifest::parse(text);
  EXPECT_EQ(m.serialize(), text);
  EXPECT_TRUE(m.unknown_keys.empty());
}

TEST(DatasetSmall, OutOfRangeCellsAreUsageErrors) {
  auto ds = Dataset::open(small_dir().string());
  const std::vector<std::int64_t> bad{1, 10};
  EXPECT_THROW(ds->get_batch(bad), UsageError);
  const std::vector<std::int64_t> neg{-1};
  EXPECT_THROW(ds->get_batch(neg), UsageError);
  EXPECT_EQ(ds->stats().tiles_fetched, 0u);
  EXPECT_EQ(ds->get_batch({}).indptr, std::vector<std::int64_t>{0});
  std::vector<std::int32_t> small(1);
  const std::vector<std::int64_t> cells{4};
  EXPECT_THROW(ds->get_batch_into(cells, small, small), UsageError);
  EXPECT_THROW(Dataset::open("ftp://host/x"), UnsupportedError);
  EXPECT_THROW(Dataset::open(small_dir().string(), {.io_threads = -1}), UsageError);
  EXPECT_THROW(Dataset::open(small_dir().string(), {.decode_threads = 0}), UsageError);
}

TEST(DatasetOpen, FetchDepthCoversTheRoundTripsOfARemoteStore) {
  const OpenOptions chosen{};
  // A local disk: 4 fetch threads, 8 tiles, whatever the tiles hold.
  EXPECT_EQ(fetch_depth(chosen, false, 1).io_threads, 4);
  EXPECT_EQ(fetch_depth(chosen, false, 1).max_prefetch_tiles, 8);
  // A remote store: kRemoteBytesInFlight of tiles under way, 4 to 32 fetches, two tiles more kept.
  EXPECT_EQ(fetch_depth(chosen, true, kRemoteBytesInFlight / 10).io_threads, 10);
  EXPECT_EQ(fetch_depth(chosen, true, kRemoteBytesInFlight / 10).max_prefetch_tiles, 12);
  EXPECT_EQ(fetch_depth(chosen, true, 1000).io_threads, 32);
  EXPECT_EQ(fetch_depth(chosen, true, 0).io_threads, 32);
  EXPECT_EQ(fetch_depth(chosen, true, kRemoteBytesInFlight * 3).io_threads, 4);
  // What the caller sets is kept.
  const OpenOptions set = fetch_depth({.max_prefetch_tiles = 3, .io_threads = 2}, true, 1000);
  EXPECT_EQ(set.io_threads, 2);
  EXPECT_EQ(set.max_prefetch_tiles, 3);
  // Dataset::open reports what it chose.
  EXPECT_EQ(Dataset::open(small_dir().string())->options().io_threads, 4);
}

TEST(DatasetWriter, ReproducesDatasetSmallByteForByte) {
  const Json e = expected_small();
  TempDir tmp;
  for (const unsigned workers : {1u, 2u}) {
    const fs::path out = tmp / ("out" + std::to_string(workers));
    auto src = small_source(e);
    const auto order = order_by_decreasing_total(gene_totals(src));
    EXPECT_EQ(order, e["gene_order"].get<std::vector<std::int32_t>>());
    DatasetWriteOptions o;
    o.version = 1;
    o.tile_size = 4;
    o.n_chunks = 2;
    o.level = 19;
    o.workers = workers;
    o.max_in_flight = 2;
    o.gene_order = order;
    for (const auto i : order)
      o.var_names.push_back(e["source_var_names"][static_cast<std::size_t>(i)].get<std::string>());
    o.metadata = Json::object({{"source", "hand-made fixture"}});
    std::vector<std::uint64_t> seen;
    o.on_tile = [&](const TileWritten& t) { seen.push_back(t.index); };
    write_dataset(src, out.string(), o);
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2}));
    std::vector<std::string> names{"manifest.json", "gene_order.npy", "var_names.txt"};
    if (ZSTD_versionNumber() == 10504)
      for (int t = 0; t < 3; ++t) names.push_back(tile_key(t));
    for (const auto& name : names) {
      SCOPED_TRACE(name);
      EXPECT_EQ(read_file_bytes(out / name), read_file_bytes(small_dir() / name));
    }
    // Nothing but the dataset's objects is left behind.
    std::size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(out)) files += entry.is_regular_file();
    EXPECT_EQ(files, 6u);
  }
}

TEST(DatasetWriter, OverwritePolicy) {
  const Json e = expected_small();
  TempDir tmp;
  const fs::path out = tmp / "ds";
  auto src = small_source(e);
  DatasetWriteOptions o;
  o.tile_size = 3;
  o.level = 3;
  write_dataset(src, out.string(), o);
  // Non-empty without overwrite: refused before anything is written.
  o.tile_size = 5;
  try {
    write_dataset(src, out.string(), o);
    FAIL();
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("is not empty; pass --overwrite to replace it"), std::string::npos);
  }
  EXPECT_EQ(Dataset::open(out.string())->n_tiles(), 4u);
  // A failing overwrite leaves the old dataset untouched and no temporary directory.
  CsrBlock bad;
  bad.indptr = {0, 1};
  bad.indices = {0};
  bad.values = std::vector<double>{1.5};
  MemoryCsrSource bad_src(6, bad);
  o.overwrite = true;
  EXPECT_THROW(write_dataset(bad_src, out.string(), o), FormatError);
  EXPECT_EQ(Dataset::open(out.string())->n_tiles(), 4u);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1u);
  // A successful overwrite swaps in the new dataset.
  write_dataset(src, out.string(), o);
  EXPECT_EQ(Dataset::open(out.string())->n_tiles(), 2u);
  // A file in the way is an error.
  tessera::testing::write_file_text(tmp / "file", "x");
  EXPECT_THROW(write_dataset(src, (tmp / "file").string(), o), UsageError);
  // A failed write into a fresh path removes what it created.
  EXPECT_THROW(write_dataset(bad_src, (tmp / "fresh").string(), o), FormatError);
  EXPECT_FALSE(fs::exists(tmp / "fresh"));
}

TEST(DatasetWriter, CanonicalizesAndChecksValues) {
  // Duplicates summed, unsorted genes sorted, zeros dropped, integral floats accepted.
  CsrBlock b;
  b.indptr = {0, 4, 5};
  b.indices = {3, 1, 3, 0, 2};
  b.values = std::vector<double>{1.0, 2.0, 4.0, 0.0, 7.0};
  MemoryCsrSource src(4, b);
  TempDir tmp;
  write_dataset(src, (tmp / "a").string(), {.tile_size = 10, .level = 1});
  auto ds = Dataset::open((tmp / "a").string());
  const std::vector<std::int64_t> cells{0, 1};
  const auto batch = ds->get_batch(cells, Values::Int32);
  EXPECT_EQ(batch.indptr, (std::vector<std::int64_t>{0, 2, 3}));
  EXPECT_EQ(batch.indices, (std::vector<std::int32_t>{1, 3, 2}));
  EXPECT_EQ(batch.values_int32, (std::vector<std::int32_t>{2, 5, 7}));
  const auto fails = [&](std::variant<std::vector<std::int64_t>, std::vector<double>> values, std::uint32_t version) {
    CsrBlock c;
    c.indptr = {0, 1};
    c.indices = {2};
    c.values = std::move(values);
    MemoryCsrSource s(4, c);
    TempDir t;
    write_dataset(s, (t / "x").string(), {.version = version, .tile_size = 10, .level = 1});
  };
  EXPECT_THROW(fails(std::vector<double>{-1.0}, 2), FormatError);
  EXPECT_THROW(fails(std::vector<double>{0.5}, 2), FormatError);
  EXPECT_THROW(fails(std::vector<double>{std::nan("")}, 2), FormatError);
  EXPECT_THROW(fails(std::vector<std::int64_t>{65536}, 1), LimitError);
  EXPECT_NO_THROW(fails(std::vector<std::int64_t>{65536}, 2));
  EXPECT_THROW(fails(std::vector<std::int64_t>{2147483648}, 2), LimitError);
}

TEST(DatasetWriter, DeterministicAcrossWorkersAndThreads) {
  std::mt19937_64 rng(3);
  CsrBlock b;
  std::vector<std::int64_t> values;
  for (int r = 0; r < 700; ++r) {
    std::vector<std::int64_t> genes;
    for (int k = 0; k < 30; ++k) genes.push_back(static_cast<std::int64_t>(rng() % 2000));
    std::sort(genes.begin(), genes.end());
    genes.erase(std::unique(genes.begin(), genes.end()), genes.end());
    for (auto g : genes) {
      b.indices.push_back(g);
      values.push_back(1 + static_cast<std::int64_t>(rng() % (rng() % 100 == 0 ? 200000 : 50)));
    }
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  b.values = values;
  TempDir tmp;
  std::vector<std::vector<std::byte>> manifests;
  for (const auto& [workers, threads] : {std::pair{1u, 1u}, std::pair{2u, 2u}, std::pair{3u, 1u}}) {
    MemoryCsrSource src(2000, b);
    const fs::path out = tmp / ("w" + std::to_string(workers) + "t" + std::to_string(threads));
    write_dataset(
        src, out.string(),
        {.tile_size = 64, .n_chunks = 3, .level = 3, .workers = workers, .threads = threads, .max_in_flight = 3});
    manifests.push_back(read_file_bytes(out / "manifest.json"));
    for (int t = 0; t < 11; ++t)
      EXPECT_EQ(read_file_bytes(out / tile_key(t)), read_file_bytes(tmp / "w1t1" / tile_key(t)));
    auto ds = Dataset::open(out.string(), {.max_cached_tiles = 2, .max_prefetch_tiles = 3, .io_threads = 2});
    std::vector<std::int64_t> cells(700);
    std::iota(cells.begin(), cells.end(), 0);
    std::shuffle(cells.begin(), cells.end(), rng);
    const auto batch = ds->get_batch(cells, Values::Int32);
    for (std::size_t i = 0; i < cells.size(); i += 37) {
      const auto r = static_cast<std::size_t>(cells[i]);
      ASSERT_EQ(batch.indptr[i + 1] - batch.indptr[i], b.indptr[r + 1] - b.indptr[r]);
      for (std::int64_t j = 0; j < b.indptr[r + 1] - b.indptr[r]; ++j) {
        EXPECT_EQ(batch.indices[batch.indptr[i] + j], b.indices[b.indptr[r] + j]);
        EXPECT_EQ(batch.values_int32[batch.indptr[i] + j], values[b.indptr[r] + j]);
      }
    }
  }
  EXPECT_EQ(manifests[0], manifests[1]);
  EXPECT_EQ(manifests[0], manifests[2]);
}

TEST(Manifest, ValidationRules) {
  const std::string base = read_file_text(small_dir() / "manifest.json");
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    s.replace(pos, from.size(), to);
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ \"a\": 1, \"a\": 2 }", "(M1)"},
      {"[1]", "(M1)"},
      {with("\"deltacells-dataset\"", "\"other\""), "(M2)"},
      {with("\"version\": 1", "\"version\": 3"), "(M3)"},
      {with("\"version\": 1", "\"version\": true"), "(M3)"},
      {with("\"version\": 1", "\"version\": 1.0"), "(M3)"},
      {with("\"n_chunks\": 2,", ""), "(M4)"},
      {with("\"n_chunks\": 2", "\"n_chunks\": 2.0"), "(M5)"},
      {with("\"has_obs\": false", "\"has_obs\": 0"), "(M5)"},
      {with("\"n_genes\": 6", "\"n_genes\": 65537"), "(M6)"},
      {with("\"n_chunks\": 2", "\"n_chunks\": 0"), "(M6)"},
      {with("\"tile_nnz\": [\n    5,", "\"tile_nnz\": [\n"), "(M7)"},
      {with("\"n_cells\": 10", "\"n_cells\": 11"), "(M8)"},
      {with("\"tile_size\": 4", "\"tile_size\": 5"), "(M9)"},
      {with("\"tile_nnz\": [\n    5", "\"tile_nnz\": [\n    25"), "(M10)"},
      {with("\"has_obs\": false", "\"has_obs\": true"), "(M11)"},
  };
  for (const auto& [text, rule] : cases) {
    try {
      Manifest::parse(text);
      ADD_FAILURE() << "accepted: " << rule;
    } catch (const FormatError& err) {
      EXPECT_NE(std::string(err.what()).find(rule), std::string::npos) << err.what();
    }
  }
  // v2 allows 2^31 genes; unknown keys are tolerated and reported.
  const Manifest m = Manifest::parse(with("\"format\"", "\"extra\": 1, \"format\""));
  EXPECT_EQ(m.unknown_keys, std::vector<std::string>{"extra"});
  EXPECT_EQ(m.serialize(), base);
  const Manifest v2 = Manifest::parse(with("\"version\": 1", "\"version\": 2"));
  EXPECT_EQ(v2.version, 2u);
}

TEST(GeneFiles, NpyHeaderAndVarNames) {
  const Json v = codec::json::parse_strict(read_file_text(dc_dir() / "vectors.json"));
  const std::vector<std::int32_t> order{3, 5, 0, 1, 2, 4};
  const auto bytes = encode_gene_order(order);
  static const char* d = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < 64; ++i) {
    hex += d[std::to_integer<int>(bytes[i]) >> 4];
    hex += d[std::to_integer<int>(bytes[i]) & 15];
  }
  EXPECT_EQ(hex, v["npy_gene_order_header_hex"].get<std::string>());
  const auto src = io::memory_source(bytes);
  EXPECT_EQ(decode_gene_order(*src, 6), order);
  EXPECT_THROW(decode_gene_order(*src, 5), FormatError);
  const std::vector<std::int32_t> dup{0, 0};
  EXPECT_THROW(encode_gene_order(dup), UsageError);
  EXPECT_THROW(encode_var_names(std::vector<std::string>{"a\rb"}), UsageError);
  EXPECT_THROW(encode_var_names(std::vector<std::string>{"a\xe2\x80\xa8"}), UsageError);
  EXPECT_EQ(decode_var_names("a\n\nc", 3), (std::vector<std::string>{"a", "", "c"}));
  EXPECT_THROW(decode_var_names("a\nb\n", 3), FormatError);
  EXPECT_TRUE(splitlines_differs("a\rb\n"));
  EXPECT_FALSE(splitlines_differs("a\nb\n"));
}

}  // namespace
}  // namespace tessera::cells
