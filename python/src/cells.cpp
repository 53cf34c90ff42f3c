// deltacells bindings: an open dataset (metadata, CSR batches moved into numpy without copying,
// prefetch, statistics), the epoch iterator and the obs store. python/tessera/cells.py builds the
// public objects on these.
//
// Closing: `close()` stops the dataset's fetch threads and drops its caches. A binding-level
// shared mutex lets any number of fetches run at once (the library serializes batch calls
// itself) while `close()` waits for them, so closing from another thread never pulls the
// dataset out from under a running fetch. Every lock is taken with the GIL released.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "tessera/cells/batch_columns.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/epoch.hpp"
#include "tessera/cells/manifest.hpp"
#include "tessera/cells/obs_filter.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/cells/obs_store.hpp"
#include "tessera/cells/var_table.hpp"
#include "tessera/columnar/column.hpp"
#include "tessera/core/error.hpp"

namespace tessera::python {
namespace {

using cells::Dataset;
using cells::Values;

Values parse_values(const std::string& values) {
  if (values == "float32") return Values::Float32;
  if (values == "int32") return Values::Int32;
  throw UsageError("values must be \"float32\" or \"int32\", got \"" + values + "\"");
}

// Recycled batch buffers of one dataset (see VectorPool): a batch's vectors come from here and
// return when Python drops the arrays, so a training loop reuses two or three batches' memory.
struct BatchPools {
  std::shared_ptr<VectorPool<std::int64_t>> int64 = std::make_shared<VectorPool<std::int64_t>>(6);  // cells, indptr
  std::shared_ptr<VectorPool<std::int32_t>> int32 =
      std::make_shared<VectorPool<std::int32_t>>(6);  // indices, int32 values
  std::shared_ptr<VectorPool<float>> float32 = std::make_shared<VectorPool<float>>(3);

  // A batch whose vectors are pooled ones (capacity kept), ready for get_batch(…, SparseBatch&).
  cells::SparseBatch take(Values values) {
    cells::SparseBatch b;
    b.indptr = int64->take();
    b.indices = int32->take();
    if (values == Values::Int32) b.values_int32 = int32->take();
    else b.values_float32 = float32->take();
    return b;
  }
  // The (indptr, indices, values) arrays of a batch; each owns one of its vectors (no copy).
  py::tuple lend(cells::SparseBatch&& b) {
    py::array indptr = int64->lend(std::move(b.indptr));
    py::array indices = int32->lend(std::move(b.indices));
    py::array values = b.values == Values::Int32 ? py::array(int32->lend(std::move(b.values_int32)))
                                                 : py::array(float32->lend(std::move(b.values_float32)));
    return py::make_tuple(indptr, indices, values);
  }
  void clear() {
    int64->clear();
    int32->clear();
    float32->clear();
  }
};

// Non-negative indices (tiles) as uint64; UsageError naming `what` for a negative one.
std::vector<std::uint64_t> as_unsigned(const std::vector<std::int64_t>& values, const char* what) {
  std::vector<std::uint64_t> out;
  out.reserve(values.size());
  for (const auto v : values) {
    if (v < 0) throw UsageError(std::string(what) + " " + std::to_string(v) + " is negative");
    out.push_back(static_cast<std::uint64_t>(v));
  }
  return out;
}

DType dtype_of_column(columnar::ColumnType type) {
  using columnar::ColumnType;
  switch (type) {
    case ColumnType::Int8: return DType::I8;
    case ColumnType::Int16: return DType::I16;
    case ColumnType::Int32: return DType::I32;
    case ColumnType::Int64: return DType::I64;
    case ColumnType::UInt8: return DType::U8;
    case ColumnType::UInt16: return DType::U16;
    case ColumnType::UInt32: return DType::U32;
    case ColumnType::UInt64: return DType::U64;
    case ColumnType::Float: return DType::F32;
    case ColumnType::Double: return DType::F64;
    case ColumnType::Bool: return DType::Bool;
    case ColumnType::String: break;
  }
  throw UsageError("obs column type " + std::string(columnar::column_type_name(type)) + " has no numpy dtype");
}

// One-byte-per-row 0/1 flags as a numpy bool array owning the vector.
py::array bool_array(std::vector<std::uint8_t>&& flags) {
  const auto n = static_cast<py::ssize_t>(flags.size());
  auto* owner = new std::vector<std::uint8_t>(std::move(flags));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<std::uint8_t>*>(p); });
  return py::array(py::dtype("bool"), {n}, owner->data(), free_when_done);
}

// A library column as Python holds it: (values, validity or None). Strings are a list of str
// with None for missing values; everything else an array owning the library's buffer.
std::pair<py::object, py::object> column_to_python(columnar::Column& v) {
  py::object values, validity = py::none();
  if (v.type == columnar::ColumnType::String) {
    py::list strings(static_cast<py::size_t>(v.length));
    for (std::uint64_t i = 0; i < v.length; ++i) {
      if (!v.is_valid(i)) {
        strings[i] = py::none();
      } else {
        const auto text = v.string(i);
        strings[i] = py::str(text.data(), text.size());
      }
    }
    values = strings;
  } else {
    values = bytes_to_numpy(std::move(v.data), dtype_of_column(v.type), {static_cast<py::ssize_t>(v.length)});
  }
  if (!v.validity.empty()) validity = bool_array(std::move(v.validity));
  return {values, validity};
}

// The open dataset. `ds_` lives as long as this object (metadata stays readable after close);
// `closed_` turns every fetch into a UsageError.
class PyCellsDataset {
 public:
  PyCellsDataset(const std::string& path, int max_cached_tiles, std::uint64_t decoded_cache_bytes,
                 int max_prefetch_tiles, int io_threads, int decode_threads, bool verify_crc)
      : path_(path) {
    cells::OpenOptions options;
    options.max_cached_tiles = max_cached_tiles;
    options.decoded_cache_bytes = decoded_cache_bytes;
    options.max_prefetch_tiles = max_prefetch_tiles;
    options.io_threads = io_threads;
    options.decode_threads = decode_threads;
    options.verify_crc = verify_crc;
    py::gil_scoped_release release;
    ds_ = Dataset::open(path, options);
  }

  const std::string& path() const { return path_; }
  std::uint64_t n_cells() const { return ds_->n_cells(); }
  std::uint64_t n_genes() const { return ds_->n_genes(); }
  std::uint64_t n_tiles() const { return ds_->n_tiles(); }
  std::uint64_t tile_size() const { return ds_->tile_size(); }
  py::tuple fetch_depth() const { return py::make_tuple(ds_->options().io_threads, ds_->options().max_prefetch_tiles); }
  std::uint32_t version() const { return ds_->version(); }
  bool has_obs() const { return ds_->manifest().has_obs; }
  bool has_var_names() const { return ds_->manifest().has_var_names; }
  bool has_gene_order() const { return ds_->manifest().has_gene_order; }
  bool closed() const { return closed_.load(); }
  py::array limits() const { return to_numpy(std::vector<std::uint64_t>(ds_->limits())); }
  py::array tile_cells() const { return to_numpy(std::vector<std::uint64_t>(ds_->manifest().tile_cells)); }
  py::array tile_nnz() const { return to_numpy(std::vector<std::uint64_t>(ds_->manifest().tile_nnz)); }

  py::tuple tile_bounds(std::int64_t tile) const {
    if (tile < 0) throw UsageError("tile " + std::to_string(tile) + " outside [0, " + std::to_string(n_tiles()) + ")");
    const auto [start, stop] = ds_->tile_bounds(static_cast<std::uint64_t>(tile));
    return py::make_tuple(start, stop);
  }

  // An int gives an int; a sequence or array gives an int64 array of tiles.
  py::object tile_of(const py::handle& cells) const {
    if (py::isinstance<py::int_>(cells)) return py::int_(tile_of_one(cells.cast<std::int64_t>()));
    const auto v = as_index_vector(cells);
    std::vector<std::int64_t> out;
    out.reserve(v.size());
    for (const auto c : v) out.push_back(static_cast<std::int64_t>(tile_of_one(c)));
    return to_numpy(std::move(out));
  }

  py::list var_names() {
    std::vector<std::string> names;
    {
      py::gil_scoped_release release;
      const auto lock = open_lock();
      std::lock_guard lazy(lazy_mutex_);
      names = ds_->var_names();
    }
    return py::cast(names);
  }

  // var.parquet in stored gene order, or None without one: (index name, index values,
  // [(name, values, validity or None)]). An empty index name means an unnamed index.
  py::object var_table() {
    if (!ds_->manifest().has_var_table) return py::none();
    cells::VarTable table;
    {
      py::gil_scoped_release release;
      const auto lock = open_lock();
      const auto source = ds_->store().open("var.parquet");
      if (!source)
        throw FormatError("var.parquet: is missing (the manifest says the dataset has a var table) (P8)",
                          "var.parquet");
      table = cells::read_var_parquet(*source, ds_->n_genes());
    }
    py::list columns;
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      auto [values, validity] = column_to_python(table.columns[i]);
      columns.append(py::make_tuple(table.column_names[i], values, validity));
    }
    py::object index = py::none();
    if (table.index.length > 0) index = column_to_python(table.index).first;
    return py::make_tuple(table.index_name, index, columns);
  }

  py::array gene_order() {
    std::vector<std::int32_t> order;
    {
      py::gil_scoped_release release;
      const auto lock = open_lock();
      std::lock_guard lazy(lazy_mutex_);
      order = ds_->gene_order();
    }
    return to_numpy(std::move(order));
  }

  std::size_t prefetch(const py::handle& tiles) {
    const auto t = as_unsigned(as_index_vector(tiles), "tile");
    py::gil_scoped_release release;
    const auto lock = open_lock();
    return ds_->prefetch(t);
  }

  std::size_t prefetch_cells(const py::handle& cells) {
    const auto c = as_index_vector(cells);
    py::gil_scoped_release release;
    const auto lock = open_lock();
    return ds_->prefetch_cells(c);
  }

  std::uint64_t batch_nnz(const py::handle& cells) {
    const auto c = as_index_vector(cells);
    py::gil_scoped_release release;
    const auto lock = open_lock();
    return ds_->batch_nnz(c);
  }

  // `positions` (stored columns, or None): only those columns, in that order (select_columns).
  py::tuple get_batch(const py::handle& cells, const std::string& values, const py::handle& positions) {
    const auto c = as_index_vector(cells);
    const Values v = parse_values(values);
    const auto columns = positions.is_none() ? std::vector<std::int64_t>{} : as_index_vector(positions);
    cells::SparseBatch batch = pools_.take(v);
    {
      py::gil_scoped_release release;
      const auto lock = open_lock();
      if (positions.is_none()) ds_->get_batch(c, v, batch);
      else ds_->get_batch(c, columns, v, batch);
    }
    return pools_.lend(std::move(batch));
  }

  py::dict stats() const {
    const auto s = ds_->stats();
    py::dict out;
    out["tiles_fetched"] = s.tiles_fetched;
    out["fetch_seconds"] = s.fetch_seconds;
    out["stall_seconds"] = s.stall_seconds;
    out["tiles_decoded"] = s.tiles_decoded;
    out["decode_seconds"] = s.decode_seconds;
    out["tile_cache_hits"] = s.tile_cache_hits;
    out["decoded_cache_hits"] = s.decoded_cache_hits;
    out["gene_indexes_built"] = s.gene_indexes_built;
    out["gene_projections_built"] = s.gene_projections_built;
    return out;
  }

  void close() {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_);
    if (closed_) return;
    closed_ = true;
    ds_->close();
    pools_.clear();
  }

  // For the epoch iterator and the obs store (callers hold open_lock()).
  Dataset& dataset() { return *ds_; }
  std::shared_ptr<Dataset> shared() { return ds_; }
  BatchPools& pools() { return pools_; }
  // A shared lock that keeps the dataset open; UsageError once closed. Take it without the GIL.
  std::shared_lock<std::shared_mutex> open_lock() const {
    std::shared_lock lock(mutex_);
    if (closed_) throw UsageError("the dataset is closed", path_);
    return lock;
  }

 private:
  std::uint64_t tile_of_one(std::int64_t cell) const {
    if (cell < 0)
      throw UsageError("cell " + std::to_string(cell) + " outside the valid range [0, " + std::to_string(n_cells()) +
                       ")");
    return ds_->tile_of(static_cast<std::uint64_t>(cell));
  }

  std::string path_;
  std::shared_ptr<Dataset> ds_;
  mutable std::shared_mutex mutex_;
  std::mutex lazy_mutex_;  // var_names / gene_order load lazily
  std::atomic<bool> closed_{false};
  BatchPools pools_;
};

// One (rank, worker) pair's epochs. The Python object keeps the dataset object alive
// (keep_alive); closing the dataset makes next() a UsageError.
class PyEpochIterator {
 public:
  PyEpochIterator(PyCellsDataset& ds, std::uint64_t batch_size, bool shuffle, std::int64_t seed, bool drop_last,
                  std::uint64_t prefetch_tiles, std::uint64_t rank, std::uint64_t world_size, std::uint64_t worker,
                  std::uint64_t num_workers, bool even_batches, const std::string& values, bool decode_ahead)
      : ds_(ds) {
    cells::EpochOptions o;
    o.shuffle = shuffle;
    o.seed = seed;
    o.drop_last = drop_last;
    o.prefetch_tiles = prefetch_tiles;
    o.rank = rank;
    o.world_size = world_size;
    o.worker = worker;
    o.num_workers = num_workers;
    o.even_batches = even_batches;
    o.values = parse_values(values);
    values_ = o.values;
    o.decode_ahead = decode_ahead;
    py::gil_scoped_release release;
    const auto lock = ds_.open_lock();
    it_.emplace(ds_.dataset(), batch_size, o);
  }

  void set_epoch(std::uint64_t epoch) {
    py::gil_scoped_release release;
    std::lock_guard guard(mutex_);
    it_->set_epoch(epoch);
    epoch_ = epoch;
  }
  std::uint64_t epoch() const { return epoch_; }

  std::uint64_t batch_count() {
    py::gil_scoped_release release;
    std::lock_guard guard(mutex_);
    return it_->batch_count();
  }

  py::array tiles() {
    std::vector<std::uint64_t> t;
    {
      py::gil_scoped_release release;
      std::lock_guard guard(mutex_);
      t = it_->tiles();
    }
    return to_numpy(std::move(t));
  }

  // None at the end of the epoch, else (cells, indptr, indices, values), in pooled buffers.
  py::object next() {
    auto& pools = ds_.pools();
    cells::EpochBatch b;
    b.cells = pools.int64->take();
    b.batch = pools.take(values_);
    bool more = false;
    {
      py::gil_scoped_release release;
      std::lock_guard guard(mutex_);
      const auto lock = ds_.open_lock();
      more = it_->next(b);
    }
    if (!more) {  // the buffers go back unused
      pools.int64->give(std::move(b.cells));
      pools.lend(std::move(b.batch));
      return py::none();
    }
    py::array cells = pools.int64->lend(std::move(b.cells));
    py::tuple arrays = pools.lend(std::move(b.batch));
    return py::make_tuple(cells, arrays[0], arrays[1], arrays[2]);
  }

 private:
  PyCellsDataset& ds_;
  std::optional<cells::EpochIterator> it_;
  std::mutex mutex_;
  std::uint64_t epoch_ = 0;
  Values values_ = Values::Float32;
};

// The obs store of a dataset with a cache root. Library warnings (columns localized inside a
// take, corrupt cache files rebuilt) are collected and re-issued as Python warnings.
class PyCellsObs {
 public:
  PyCellsObs(PyCellsDataset& ds, const std::string& cache_dir, int threads) : ds_(ds) {
    if (!ds.has_obs()) throw UsageError("this dataset has no obs", ds.path());
    auto warnings = warnings_;
    cells::ObsOpenOptions options;
    options.cache_dir = cache_dir;
    options.threads = threads;
    options.warn = [warnings](const std::string& w) {
      std::lock_guard guard(warnings->mutex);
      warnings->messages.push_back(w);
    };
    py::gil_scoped_release release;
    const auto lock = ds.open_lock();
    auto shared = ds.shared();
    obs_ = std::make_unique<cells::ObsStore>(std::shared_ptr<const io::Store>(shared, &shared->store()),
                                             shared->manifest(), std::move(options));
  }

  std::vector<std::string> columns() const {
    const auto lock = obs_lock();
    return obs_->columns();
  }
  std::string cache_root() const {
    const auto lock = obs_lock();
    return obs_->cache_root();
  }
  std::string cache_dir() const {
    const auto lock = obs_lock();
    return obs_->cache_dir();
  }
  std::string schema_text() const {
    const auto lock = obs_lock();
    return obs_->schema_text();
  }

  // [{name, kind, type, categories}] in schema order.
  py::list schema() const {
    const auto lock = obs_lock();
    py::list out;
    for (const auto& c : obs_->schema().columns) {
      py::dict d;
      d["name"] = c.name;
      d["kind"] = std::string(cells::obs_kind_name(c.kind));
      d["type"] = std::string(columnar::column_type_name(c.type));
      d["categories"] = py::cast(c.categories);
      out.append(d);
    }
    return out;
  }

  std::vector<std::string> localize(const std::optional<std::vector<std::string>>& columns, int threads) {
    std::vector<std::string> fetched;
    {
      py::gil_scoped_release release;
      const auto lock = obs_lock();
      const auto ds_lock = ds_.open_lock();
      fetched = columns ? obs_->localize(*columns, threads) : obs_->localize_all(threads);
    }
    flush_warnings();
    return fetched;
  }

  std::vector<std::string> localized_columns() const {
    py::gil_scoped_release release;
    const auto lock = obs_lock();
    return obs_->localized_columns();
  }

  std::vector<std::uint64_t> column_nbytes() const {
    py::gil_scoped_release release;
    const auto lock = obs_lock();
    return obs_->column_nbytes();
  }

  // [(name, kind, values, validity or None, categories)] in request order. Strings come as a
  // list of str with None for missing values; everything else as arrays owning the library's
  // buffers.
  py::list take(const py::handle& cells, const std::vector<std::string>& columns) {
    const auto c = as_index_vector(cells);
    std::vector<cells::ObsTakeColumn> taken;
    {
      py::gil_scoped_release release;
      const auto lock = obs_lock();
      const auto ds_lock = ds_.open_lock();
      taken = obs_->take(c, columns);
    }
    flush_warnings();
    py::list out;
    for (auto& col : taken) {
      auto [values, validity] = column_to_python(col.values);
      out.append(py::make_tuple(col.name, std::string(cells::obs_kind_name(col.kind)), values, validity,
                                py::cast(col.categories)));
    }
    return out;
  }

  // Sorted int64 cells meeting the where document (JSON text, include/tessera/cells/obs_filter.hpp).
  py::array filter(const std::string& where_json) {
    const auto where = cells::parse_obs_where(where_json, "where");
    std::vector<std::int64_t> out;
    {
      py::gil_scoped_release release;
      const auto lock = obs_lock();
      const auto ds_lock = ds_.open_lock();
      out = cells::filter_cells(*obs_, static_cast<std::int64_t>(ds_.shared()->n_cells()), where);
    }
    flush_warnings();
    return to_numpy(std::move(out));
  }

  // Drops the store and its memory-mapped cache files.
  void close() {
    py::gil_scoped_release release;
    std::unique_lock lock(mutex_);
    obs_.reset();
  }

 private:
  struct Warnings {
    std::mutex mutex;
    std::vector<std::string> messages;
  };

  // A shared lock that keeps the store open; UsageError once closed.
  std::shared_lock<std::shared_mutex> obs_lock() const {
    std::shared_lock lock(mutex_);
    if (!obs_) throw UsageError("the obs store is closed", ds_.path());
    return lock;
  }

  void flush_warnings() {
    std::vector<std::string> messages;
    {
      std::lock_guard guard(warnings_->mutex);
      messages.swap(warnings_->messages);
    }
    for (const auto& m : messages) {
      if (PyErr_WarnEx(PyExc_UserWarning, m.c_str(), 2) != 0) throw py::error_already_set();
    }
  }

  PyCellsDataset& ds_;
  std::shared_ptr<Warnings> warnings_ = std::make_shared<Warnings>();
  std::unique_ptr<cells::ObsStore> obs_;
  mutable std::shared_mutex mutex_;
};

}  // namespace

void bind_cells(py::module_& m) {
  py::class_<PyCellsDataset>(m, "CellsDataset")
      .def(py::init<const std::string&, int, std::uint64_t, int, int, int, bool>(), py::arg("path"),
           py::arg("max_cached_tiles") = cells::OpenOptions{}.max_cached_tiles,
           py::arg("decoded_cache_bytes") = cells::OpenOptions{}.decoded_cache_bytes, py::arg("max_prefetch_tiles") = 0,
           py::arg("io_threads") = 0, py::arg("decode_threads") = 1, py::arg("verify_crc") = true)
      .def_property_readonly("fetch_depth", &PyCellsDataset::fetch_depth)
      .def_property_readonly("path", &PyCellsDataset::path)
      .def_property_readonly("n_cells", &PyCellsDataset::n_cells)
      .def_property_readonly("n_genes", &PyCellsDataset::n_genes)
      .def_property_readonly("n_tiles", &PyCellsDataset::n_tiles)
      .def_property_readonly("tile_size", &PyCellsDataset::tile_size)
      .def_property_readonly("version", &PyCellsDataset::version)
      .def_property_readonly("limits", &PyCellsDataset::limits)
      .def_property_readonly("tile_cells", &PyCellsDataset::tile_cells)
      .def_property_readonly("tile_nnz", &PyCellsDataset::tile_nnz)
      .def_property_readonly("has_obs", &PyCellsDataset::has_obs)
      .def_property_readonly("has_var_names", &PyCellsDataset::has_var_names)
      .def_property_readonly("has_gene_order", &PyCellsDataset::has_gene_order)
      .def_property_readonly("closed", &PyCellsDataset::closed)
      .def("tile_bounds", &PyCellsDataset::tile_bounds, py::arg("tile"))
      .def("tile_of", &PyCellsDataset::tile_of, py::arg("cells"))
      .def("var_names", &PyCellsDataset::var_names)
      .def("var_table", &PyCellsDataset::var_table)
      .def("gene_order", &PyCellsDataset::gene_order)
      .def("prefetch", &PyCellsDataset::prefetch, py::arg("tiles"))
      .def("prefetch_cells", &PyCellsDataset::prefetch_cells, py::arg("cells"))
      .def("batch_nnz", &PyCellsDataset::batch_nnz, py::arg("cells"))
      .def("get_batch", &PyCellsDataset::get_batch, py::arg("cells"), py::arg("values") = "float32",
           py::arg("positions") = py::none())
      .def("stats", &PyCellsDataset::stats)
      .def("close", &PyCellsDataset::close);

  py::class_<PyEpochIterator>(m, "CellsEpochIterator")
      .def(py::init<PyCellsDataset&, std::uint64_t, bool, std::int64_t, bool, std::uint64_t, std::uint64_t,
                    std::uint64_t, std::uint64_t, std::uint64_t, bool, const std::string&, bool>(),
           py::arg("dataset"), py::arg("batch_size"), py::arg("shuffle") = true, py::arg("seed") = 0,
           py::arg("drop_last") = false, py::arg("prefetch_tiles") = 2, py::arg("rank") = 0, py::arg("world_size") = 1,
           py::arg("worker") = 0, py::arg("num_workers") = 1, py::arg("even_batches") = false,
           py::arg("values") = "float32", py::arg("decode_ahead") = true, py::keep_alive<1, 2>())
      .def("set_epoch", &PyEpochIterator::set_epoch, py::arg("epoch"))
      .def_property_readonly("epoch", &PyEpochIterator::epoch)
      .def("batch_count", &PyEpochIterator::batch_count)
      .def("tiles", &PyEpochIterator::tiles)
      .def("next", &PyEpochIterator::next);

  py::class_<PyCellsObs>(m, "CellsObs")
      .def(py::init<PyCellsDataset&, const std::string&, int>(), py::arg("dataset"), py::arg("cache_dir") = "",
           py::arg("threads") = 8, py::keep_alive<1, 2>())
      .def("columns", &PyCellsObs::columns)
      .def("schema", &PyCellsObs::schema)
      .def("schema_text", &PyCellsObs::schema_text)
      .def("cache_root", &PyCellsObs::cache_root)
      .def("cache_dir", &PyCellsObs::cache_dir)
      .def("localize", &PyCellsObs::localize, py::arg("columns") = py::none(), py::arg("threads") = 0)
      .def("localized_columns", &PyCellsObs::localized_columns)
      .def("column_nbytes", &PyCellsObs::column_nbytes)
      .def("take", &PyCellsObs::take, py::arg("cells"), py::arg("columns"))
      .def("filter", &PyCellsObs::filter, py::arg("where_json"))
      .def("close", &PyCellsObs::close);
}

}  // namespace tessera::python
