// The dataset writer: output directory policy, the read → encode → commit pipeline and the
// closing objects (spec deltacells.md §4.7, §4.8, §7.8).
#include "tessera/cells/dataset_writer.hpp"

#include <unistd.h>

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>

#include "rules.hpp"
#include "tessera/cells/gene_files.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/cells/tile_encoder.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/test_hooks.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/staging.hpp"
#include "tessera/io/store.hpp"

namespace fs = std::filesystem;

namespace tessera::cells {
namespace {

std::string tile_key(std::uint64_t t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "tiles/tile_%06llu.dct", static_cast<unsigned long long>(t));
  return buf;
}

// Where the dataset is built and how it becomes visible (§7.8).
class OutputDir {
 public:
  OutputDir(const std::string& output, bool overwrite) : final_(output) {
    std::error_code ec;
    const auto status = fs::status(final_, ec);
    if (fs::exists(status) && !fs::is_directory(status))
      throw UsageError(output + " exists and is not a directory", output);
    const bool non_empty = fs::is_directory(status) && !fs::is_empty(final_, ec);
    if (non_empty && !overwrite) throw UsageError(output + " is not empty; pass --overwrite to replace it", output);
    if (non_empty) {
      // Build beside the old dataset, swap when complete. Siblings a killed writer left
      // (`<out>.tmp<pid>` of a process that is gone) are removed first.
      if (!final_.filename().empty())
        io::remove_stale_temporaries(final_.parent_path(), final_.filename().string() + ".tmp");
      root_ = fs::path(final_.string() + ".tmp" + std::to_string(::getpid()));
      fs::remove_all(root_, ec);
      make_dir(root_);
      created_root_ = true;
      swap_ = true;
    } else {
      root_ = final_;
      if (!fs::exists(status)) {
        make_dir(root_);
        created_root_ = true;
      }
    }
    make_dir(root_ / "tiles");
  }
  ~OutputDir() {
    if (committed_) return;
    std::error_code ec;
    if (created_root_) {
      fs::remove_all(root_, ec);
    } else {
      for (const auto& entry : fs::directory_iterator(root_, ec)) fs::remove_all(entry.path(), ec);
    }
  }
  const fs::path& root() const { return root_; }
  void commit() {
    if (swap_) {
      io::replace_directory(root_.string(), final_.string(), [this] {
        committed_ = true;
        test_hooks::point("cells.dataset_swapped");
      });
      return;
    }
    committed_ = true;
  }

 private:
  static void make_dir(const fs::path& p) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) throw IoError("cannot create directory: " + ec.message(), p.string());
  }
  fs::path final_;
  fs::path root_;
  bool created_root_ = false;
  bool swap_ = false;
  bool committed_ = false;
};

struct Job {
  std::uint64_t index = 0;
  std::uint64_t first = 0;
  CsrBlock block;
  TileWritten written;
};

void check_options(const CsrBlockSource& source, const DatasetWriteOptions& o) {
  if (!is_known_version(o.version)) throw UsageError("format version must be 1 or 2");
  if (o.tile_size < 1) throw UsageError("tile size must be at least 1");
  if (o.n_chunks < 1) throw UsageError("chunks per tile must be at least 1");
  if (o.level < kMinZstdLevel || o.level > kMaxZstdLevel)
    throw UsageError("zstd level " + std::to_string(o.level) + " outside " + std::to_string(kMinZstdLevel) + ".." +
                     std::to_string(kMaxZstdLevel));
  if (source.n_cells() < 1) throw UsageError("a dataset needs at least one cell");
  if (source.n_genes() < 1 || source.n_genes() > max_genes(o.version))
    throw LimitError("n_genes " + std::to_string(source.n_genes()) + " outside 1.." +
                     std::to_string(max_genes(o.version)) +
                     (o.version == kVersion1 ? " for version 1; write version 2 (--format-version 2)" : ""));
  if (!o.gene_order.empty() && o.gene_order.size() != source.n_genes())
    throw UsageError("gene order has " + std::to_string(o.gene_order.size()) + " entries for " +
                     std::to_string(source.n_genes()) + " genes");
  if (!o.var_names.empty() && o.var_names.size() != source.n_genes())
    throw UsageError("var names has " + std::to_string(o.var_names.size()) + " entries for " +
                     std::to_string(source.n_genes()) + " genes");
  if (!o.metadata.is_object()) throw UsageError("metadata must be a JSON object");
  if (o.obs) {
    o.obs->schema.validate("obs schema");
    if (o.obs->columns.size() != o.obs->schema.columns.size())
      throw UsageError("obs has " + std::to_string(o.obs->columns.size()) + " columns for a schema of " +
                       std::to_string(o.obs->schema.columns.size()));
    for (std::size_t i = 0; i < o.obs->columns.size(); ++i)
      if (o.obs->columns[i].length != source.n_cells())
        throw UsageError("obs column '" + o.obs->schema.columns[i].name + "' has " +
                         std::to_string(o.obs->columns[i].length) + " rows for " + std::to_string(source.n_cells()) +
                         " cells");
  }
  if (o.var_table) {
    bool rows_match = o.var_table->index.length == source.n_genes();
    for (const auto& c : o.var_table->columns) rows_match = rows_match && c.length == source.n_genes();
    if (!rows_match)
      throw UsageError("the var table does not have one row per gene (" + std::to_string(source.n_genes()) + ")");
  }
}

// Encodes tiles [first, last) of `source` into `<root>/tiles/` and appends their entries to `m`,
// in tile order, through the read → encode → commit pipeline.
void encode_tiles(CsrBlockSource& source, const fs::path& root, const DatasetWriteOptions& o, Manifest& m,
                  const std::vector<std::uint32_t>& stored_of_source, std::uint64_t first_tile,
                  std::uint64_t last_tile) {
  const std::uint64_t n_cells = source.n_cells();
  const std::uint64_t n_tiles = (n_cells + o.tile_size - 1) / o.tile_size;
  const unsigned workers = o.workers ? o.workers : std::max(1u, std::thread::hardware_concurrency());
  const std::size_t in_flight = o.max_in_flight ? o.max_in_flight : 4 * std::size_t{workers};
  std::uint64_t next = first_tile;
  // The jobs in flight are owned here, and the pipeline passes plain pointers: when a filter
  // throws (an interrupt, a bad row), oneTBB drops the items it holds without destroying them,
  // so an owning item (a shared_ptr) would leak; these are freed with `jobs` either way.
  std::mutex jobs_mutex;
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs;
  tbb::task_arena arena(detail::arena_size(workers));
  arena.execute([&] {
    tbb::parallel_pipeline(
        in_flight,
        tbb::make_filter<void, Job*>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> Job* {
          if (next >= last_tile) {
            fc.stop();
            return nullptr;
          }
          if (o.interrupted && o.interrupted()) throw Interrupted("interrupted; the partial output was removed");
          Job* job = nullptr;
          {
            const std::lock_guard lock(jobs_mutex);
            job = jobs.emplace(next, std::make_unique<Job>()).first->second.get();
          }
          job->index = next;
          job->first = next * o.tile_size;
          const std::uint64_t count = std::min(o.tile_size, n_cells - job->first);
          source.read_rows(job->first, count, job->block);
          if (job->block.n_rows() != count)
            throw FormatError("source returned " + std::to_string(job->block.n_rows()) + " rows for " +
                              std::to_string(count) + " requested");
          ++next;
          return job;
        }) & tbb::make_filter<Job*, Job*>(tbb::filter_mode::parallel, [&](Job* job) {
          const std::string key = tile_key(job->index);
          CanonicalizeOptions co;
          co.n_genes = m.n_genes;
          co.max_value = max_count(o.version);
          co.stored_of_source = stored_of_source;
          co.tile_name = key;
          co.first_cell = job->first;
          co.version = o.version;
          co.locate = [&source](std::uint64_t cell) { return source.locate(cell); };
          CanonicalTile tile = canonicalize(job->block, co);
          job->block = CsrBlock{};  // release the input early: memory stays bounded
          const auto bytes = encode_tile(
              {tile.indptr, tile.indices, tile.values, m.n_genes},
              {.version = o.version, .level = o.level, .n_chunks = o.n_chunks, .threads = o.threads, .name = key});
          io::write_file_atomic((root / key).string(), bytes);
          test_hooks::point("cells.tile_written");
          job->written = {job->index, n_tiles, tile.indptr.size() - 1, static_cast<std::uint64_t>(tile.indptr.back()),
                          bytes.size()};
          return job;
        }) & tbb::make_filter<Job*, void>(tbb::filter_mode::serial_in_order, [&](Job* job) {
          m.tile_cells.push_back(job->written.n_cells);
          m.tile_nnz.push_back(job->written.nnz);
          m.tile_bytes.push_back(job->written.bytes);
          if (o.on_tile) o.on_tile(job->written);
          const std::lock_guard lock(jobs_mutex);
          jobs.erase(job->index);
        }));
  });
}

// Takes the tiles a distributed convert's tasks wrote into `<from>/tiles/` as this dataset's
// tiles, each checked first (see DatasetWriteOptions::tiles_from).
void adopt_tiles(const std::string& from, const fs::path& root, const DatasetWriteOptions& o, Manifest& m,
                 std::uint64_t n_tiles) {
  for (std::uint64_t t = 0; t < n_tiles; ++t) {
    const std::string key = tile_key(t);
    const fs::path staged = fs::path(from) / key;
    const auto source = io::open_file(staged.string(), io::OpenMode::Pread);
    std::vector<std::byte> bytes(checked_size(source->size(), "tile"));
    source->read_at(0, bytes);
    const Tile tile = Tile::parse(std::move(bytes), staged.string());
    const std::uint64_t cells = std::min(o.tile_size, m.n_cells - t * o.tile_size);
    if (tile.version() != m.version || tile.n_genes() != m.n_genes || tile.n_cells() != cells)
      throw FormatError(staged.string() + ": a tile of version " + std::to_string(tile.version()) + ", " +
                            std::to_string(tile.n_genes()) + " genes and " + std::to_string(tile.n_cells()) +
                            " cells, where this dataset's tile has version " + std::to_string(m.version) + ", " +
                            std::to_string(m.n_genes) + " genes and " + std::to_string(cells) +
                            " cells (was it encoded with other options?)",
                        staged.string(), "tile");
    std::error_code ec;
    fs::create_hard_link(staged, root / key, ec);
    if (ec) {
      fs::copy_file(staged, root / key, fs::copy_options::overwrite_existing, ec);
      if (ec) throw IoError("cannot copy " + staged.string() + ": " + ec.message(), (root / key).string());
    }
    const TileWritten written{t, n_tiles, tile.n_cells(), tile.nnz(), tile.size()};
    m.tile_cells.push_back(written.n_cells);
    m.tile_nnz.push_back(written.nnz);
    m.tile_bytes.push_back(written.bytes);
    if (o.on_tile) o.on_tile(written);
  }
}

}  // namespace

Manifest write_dataset(CsrBlockSource& source, const std::string& output, const DatasetWriteOptions& o) {
  check_options(source, o);
  // Closing objects are encoded first so that bad names or orders fail before any tile work.
  const std::vector<std::byte> gene_order_bytes =
      o.gene_order.empty() ? std::vector<std::byte>{} : encode_gene_order(o.gene_order);
  const std::string var_names_text = o.var_names.empty() ? std::string() : encode_var_names(o.var_names);
  std::vector<std::uint32_t> stored_of_source;
  if (!o.gene_order.empty()) {
    stored_of_source.resize(o.gene_order.size());
    for (std::size_t j = 0; j < o.gene_order.size(); ++j)
      stored_of_source[static_cast<std::size_t>(o.gene_order[j])] = static_cast<std::uint32_t>(j);
  }

  const std::uint64_t n_cells = source.n_cells();
  const std::uint64_t n_tiles = (n_cells + o.tile_size - 1) / o.tile_size;
  Manifest m;
  m.version = o.version;
  m.n_cells = n_cells;
  m.n_genes = source.n_genes();
  m.tile_size = o.tile_size;
  m.n_chunks = o.n_chunks;
  m.zstd_level = o.level;
  m.has_gene_order = !o.gene_order.empty();
  m.has_var_names = !o.var_names.empty();
  m.metadata = o.metadata;
  (void)m.serialize();  // refuses non-finite metadata before any work

  if (o.tile_range) {
    if (o.tile_range->first >= o.tile_range->last || o.tile_range->last > n_tiles)
      throw UsageError("tile range " + std::to_string(o.tile_range->first) + ":" + std::to_string(o.tile_range->last) +
                       " is not within the dataset's " + std::to_string(n_tiles) + " tiles");
    std::error_code ec;
    fs::create_directories(fs::path(output) / "tiles", ec);
    if (ec) throw IoError("cannot create directory: " + ec.message(), (fs::path(output) / "tiles").string());
    encode_tiles(source, output, o, m, stored_of_source, o.tile_range->first, o.tile_range->last);
    return m;
  }
  OutputDir out(output, o.overwrite);
  if (o.tiles_from.empty()) encode_tiles(source, out.root(), o, m, stored_of_source, 0, n_tiles);
  else adopt_tiles(o.tiles_from, out.root(), o, m, n_tiles);
  test_hooks::point("cells.tiles_done");

  m.validate();
  if (!gene_order_bytes.empty()) io::write_file_atomic((out.root() / "gene_order.npy").string(), gene_order_bytes);
  if (!var_names_text.empty())
    io::write_file_atomic((out.root() / "var_names.txt").string(),
                          {reinterpret_cast<const std::byte*>(var_names_text.data()), var_names_text.size()});
  if (o.obs) {
    io::DirectoryStore store(out.root().string());
    record_obs(m, write_obs(store, *o.obs, m.tile_cells), o.obs->tiles_per_file);
  }
  if (o.var_table) {
    io::AtomicFileSink sink((out.root() / "var.parquet").string());
    write_var_parquet(sink, *o.var_table);
    m.has_var_table = true;
  }
  m.validate();
  const std::string manifest_text = m.serialize();
  io::write_file_atomic((out.root() / "manifest.json").string(),
                        {reinterpret_cast<const std::byte*>(manifest_text.data()), manifest_text.size()});
  test_hooks::point("cells.manifest_written");
  out.commit();
  return m;
}

std::vector<std::uint64_t> gene_totals(CsrBlockSource& source, std::uint64_t block_rows,
                                       const std::function<bool()>& interrupted) {
  const std::uint64_t n_genes = source.n_genes();
  std::vector<std::uint64_t> totals(static_cast<std::size_t>(n_genes), 0);
  CsrBlock block;
  CanonicalizeOptions co;
  co.n_genes = n_genes;
  co.max_value = kMaxCountV2;
  co.tile_name = "gene totals";
  co.locate = [&source](std::uint64_t cell) { return source.locate(cell); };
  for (std::uint64_t first = 0; first < source.n_cells(); first += block_rows) {
    if (interrupted && interrupted()) throw Interrupted("interrupted");
    const std::uint64_t count = std::min(block_rows, source.n_cells() - first);
    source.read_rows(first, count, block);
    co.first_cell = first;
    const CanonicalTile t = canonicalize(block, co);
    for (std::size_t j = 0; j < t.indices.size(); ++j) totals[t.indices[j]] += t.values[j];
  }
  return totals;
}

std::vector<std::int32_t> order_by_decreasing_total(const std::vector<std::uint64_t>& totals) {
  std::vector<std::int32_t> order(totals.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return totals[a] > totals[b]; });
  return order;
}

}  // namespace tessera::cells
