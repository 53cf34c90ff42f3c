// zagg-ragged/1 bindings: a field of a leaf (or flat store) opened on a local directory store,
// its store-scoped readers (read_cell, read_tensors — collected, or streamed from a reader thread
// through a bounded queue —, the per-cell sweeps, cell_index, axis) and a whole-array sweep of
// populated cells. The hive pieces (manifest, stamps, coverage, leaves, hashes) live in
// ragged_hive.cpp. python/tessera/ragged.py builds the public objects on these.
//
// Every read runs with the GIL released. Reader warnings (`subtree_disjoint`, `flux_integer_cast`)
// are collected while it is released and issued with `warnings.warn` once it is held again, as
// `tessera.ragged.RaggedWarning` instances carrying the warning's `code`.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_array.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/tdigest.hpp"

namespace tessera::python {
namespace {

using ragged::RaggedField;

PyObject* g_warning_type = nullptr;  // tessera.ragged.RaggedWarning (owned by the module)

// Collects reader warnings from any thread; `issue` runs with the GIL held.
class WarningCollector {
 public:
  ragged::WarningSink sink() {
    return [this](const ragged::Warning& w) {
      std::lock_guard<std::mutex> lock(mutex_);
      warnings_.push_back(w);
    };
  }
  void issue() {
    std::vector<ragged::Warning> pending;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending.swap(warnings_);
    }
    if (pending.empty()) return;
    auto warn = py::module_::import("warnings").attr("warn");
    for (const auto& w : pending) {
      py::object instance = py::reinterpret_borrow<py::object>(g_warning_type)(w.code + ": " + w.message);
      instance.attr("code") = w.code;
      warn(instance, py::arg("stacklevel") = 2);  // raises when a filter turns it into an error
    }
  }

 private:
  std::mutex mutex_;
  std::vector<ragged::Warning> warnings_;
};

DType dtype_of(ragged::TensorDType t) {
  switch (t) {
    case ragged::TensorDType::U16: return DType::U16;
    case ragged::TensorDType::U32: return DType::U32;
    case ragged::TensorDType::F32: return DType::F32;
  }
  return DType::U32;
}

py::dict declaration_dict(const std::optional<ragged::Declaration>& d) {
  py::dict out;
  if (!d) return out;
  out["spec"] = d->spec;
  out["shape"] = d->shape;
  out["grammar"] = d->grammar;
  return out;
}

// (chunk_id, row, col, index, values) tuples of a per-cell sweep.
template <typename Cell, typename T>
py::list cell_tuples(std::vector<Cell>&& cells, std::vector<T> Cell::*member) {
  py::list out(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    auto& c = cells[i];
    out[i] = py::make_tuple(c.chunk_id, c.row, c.col, c.index, to_numpy(std::move(c.*member)));
  }
  return out;
}

class PyRaggedField {
 public:
  PyRaggedField(const std::string& path, const std::string& field) {
    py::gil_scoped_release release;
    store_ = std::shared_ptr<io::Store>(io::open_store(path));
    field_ = std::make_shared<const RaggedField>(RaggedField::open(*store_, field));
  }

  const RaggedField& f() const { return *field_; }

  std::string store_path() const { return store_->name(); }
  std::string path() const { return f().payload().path(); }
  std::string group() const { return f().group(); }
  std::uint64_t size() const { return f().payload().size(); }
  std::uint64_t chunk_cells() const { return f().payload().chunk_cells(); }
  bool sharded() const { return f().payload().array().sharded(); }
  bool has_morton() const { return f().has_morton(); }
  bool on_cells_axis() const { return f().payload().on_cells_axis(); }
  std::string weights() const { return f().payload().weights() == ragged::Weights::Flux ? "flux" : "counts"; }
  py::object gain() const {
    const auto& g = f().payload().gain();
    return g ? from_json(*g) : py::object(py::none());
  }
  py::object locations() const {
    const auto& l = f().locations();
    return l ? py::object(py::str(l->path())) : py::object(py::none());
  }
  py::object times() const {
    const auto& t = f().times();
    return t ? py::object(py::str(t->path())) : py::object(py::none());
  }
  py::dict located() const { return declaration_dict(f().payload().located()); }
  py::dict temporal() const { return declaration_dict(f().payload().temporal()); }

  py::dict element() const {
    const auto& e = f().payload().element();
    py::dict out;
    out["dtype"] = numpy_dtype(e.dtype);
    out["dtype_name"] = e.dtype_name;
    out["inner_shape"] = py::tuple(py::cast(e.inner_shape));
    out["row_bytes"] = e.row_bytes;
    out["is_tdigest"] = e.is_tdigest();
    out["is_words"] = e.is_words();
    return out;
  }

  std::vector<py::ssize_t> row_shape(std::uint64_t rows) const {
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(rows)};
    for (auto d : f().payload().element().inner_shape) shape.push_back(static_cast<py::ssize_t>(d));
    return shape;
  }

  py::array read_cell(std::int64_t index) const {
    ragged::RaggedCell cell;
    {
      py::gil_scoped_release release;
      cell = f().read_cell(index);
    }
    return bytes_to_numpy(std::move(cell.bytes), f().payload().element().dtype, row_shape(cell.rows));
  }

  // Every populated cell of the payload, ascending: (index, rows). Each stored object is read
  // once (a whole-array sweep; works on per-chunk companions too).
  py::list read_populated() const {
    std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> cells;
    std::vector<std::uint64_t> rows;
    {
      py::gil_scoped_release release;
      const auto& payload = f().payload();
      const auto& array = payload.array();
      const std::uint64_t c = payload.chunk_cells();
      for (const auto& object : array.list_stored_objects()) {
        const auto stored = array.read_object(object);
        for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
          const auto chunk = stored.read_vlen_chunk(inner);
          const std::uint64_t start = array.read_chunk_of(object, inner)[0] * c;
          for (std::size_t i = 0; i < chunk.size(); ++i) {
            const auto bytes = chunk[i];
            if (bytes.empty() || start + i >= payload.size()) continue;
            rows.push_back(payload.rows_of(bytes, start + i));
            cells.emplace_back(start + i, std::vector<std::byte>(bytes.begin(), bytes.end()));
          }
        }
      }
    }
    py::list out(cells.size());
    const DType dtype = f().payload().element().dtype;
    for (std::size_t i = 0; i < cells.size(); ++i)
      out[i] = py::make_tuple(cells[i].first, bytes_to_numpy(std::move(cells[i].second), dtype, row_shape(rows[i])));
    return out;
  }

  // Populated cells, total rows and (t-digests) the sum over cells of numpy's pairwise sum of the
  // weights: what `tessera ragged info --deep` reports.
  py::dict summary() const {
    std::uint64_t populated = 0, total_rows = 0;
    double weight_sum = 0;
    const bool digest = f().payload().element().is_tdigest();
    {
      py::gil_scoped_release release;
      const auto& payload = f().payload();
      const auto& array = payload.array();
      ragged::tdigest::Digest d;
      for (const auto& object : array.list_stored_objects()) {
        const auto stored = array.read_object(object);
        for (std::uint64_t inner = 0; inner < stored.chunk_count(); ++inner) {
          const auto chunk = stored.read_vlen_chunk(inner);
          const std::uint64_t start = array.read_chunk_of(object, inner)[0] * payload.chunk_cells();
          for (std::size_t i = 0; i < chunk.size(); ++i) {
            const auto bytes = chunk[i];
            if (bytes.empty() || start + i >= payload.size()) continue;
            ++populated;
            total_rows += payload.rows_of(bytes, start + i);
            if (digest) {
              ragged::tdigest::decode_into(bytes, payload.path(), d);
              weight_sum += ragged::tdigest::pairwise_sum(d.weights);
            }
          }
        }
      }
    }
    py::dict out;
    out["populated_cells"] = populated;
    out["rows"] = total_rows;
    out["weight_sum"] = digest ? py::object(py::float_(weight_sum)) : py::object(py::none());
    return out;
  }

  // All blocks at once.
  py::list read_tensors(std::uint32_t n_bins, double resolution, double bottom, double top, const std::string& fit,
                        const std::string& dtype, std::optional<int> block_order, std::optional<std::uint64_t> subtree,
                        std::uint64_t max_block_bytes, unsigned threads) const {
    auto o =
        tensor_options(n_bins, resolution, bottom, top, fit, dtype, block_order, subtree, max_block_bytes, threads);
    WarningCollector warnings;
    o.warn = warnings.sink();
    std::vector<ragged::TensorBlock> blocks;
    {
      py::gil_scoped_release release;
      blocks = f().read_tensors(o);
    }
    warnings.issue();
    py::list out(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) out[i] = block_tuple(std::move(blocks[i]));
    return out;
  }

  static ragged::TensorOptions tensor_options(std::uint32_t n_bins, double resolution, double bottom, double top,
                                              const std::string& fit, const std::string& dtype,
                                              std::optional<int> block_order, std::optional<std::uint64_t> subtree,
                                              std::uint64_t max_block_bytes, unsigned threads) {
    ragged::TensorOptions o;
    o.n_bins = n_bins;
    o.resolution = resolution;
    o.bottom = bottom;
    o.top = top;
    o.fit = ragged::parse_fit_policy(fit);
    o.dtype = ragged::parse_tensor_dtype(dtype);
    o.block_order = block_order;
    o.subtree = subtree;
    o.max_block_bytes = max_block_bytes;
    o.threads = threads;
    return o;
  }

  // (tensor, mask, offset, gain, morton, start, order, side, n_bins, populated, observed_empty,
  // weight_in_window); the arrays take the block's vectors.
  static py::tuple block_tuple(ragged::TensorBlock&& b) {
    const auto side = static_cast<py::ssize_t>(b.side);
    py::array tensor =
        bytes_to_numpy(std::move(b.tensor), dtype_of(b.dtype), {side, side, static_cast<py::ssize_t>(b.n_bins)});
    py::array mask = to_numpy(std::move(b.mask), {side, side});
    return py::make_tuple(tensor, mask, b.offset, b.gain, b.morton, b.start, b.order, b.side, b.n_bins, b.populated,
                          b.observed_empty, b.weight_in_window);
  }

  const std::shared_ptr<io::Store>& store() const { return store_; }
  const std::shared_ptr<const RaggedField>& field() const { return field_; }

  py::list read_raw_values(std::optional<std::uint64_t> subtree, unsigned threads) const {
    return sweep_cells(&RaggedField::read_raw_values, &ragged::CellValues::values, subtree, threads);
  }
  py::list read_locations(std::optional<std::uint64_t> subtree, unsigned threads) const {
    return sweep_cells(&RaggedField::read_locations, &ragged::CellWords::words, subtree, threads);
  }
  py::list read_times(std::optional<std::uint64_t> subtree, unsigned threads) const {
    return sweep_cells(&RaggedField::read_times, &ragged::CellWords::words, subtree, threads);
  }

  std::uint64_t cell_index(std::uint64_t chunk_id, std::int64_t row, std::int64_t col) const {
    py::gil_scoped_release release;
    return f().cell_index(chunk_id, row, col);
  }

  py::dict axis() const {
    ragged::CellsAxis a;
    {
      py::gil_scoped_release release;
      a = f().axis();
    }
    py::dict out;
    out["length"] = a.length;
    out["chunk_cells"] = a.chunk_cells;
    out["cell_order"] = a.cell_order;
    out["chunk_order"] = a.chunk_order;
    out["flat"] = a.flat;
    out["root"] = a.root;
    out["root_decimal"] =
        a.flat || a.root == 0 ? py::object(py::none()) : py::object(py::str(ragged::morton::to_decimal(a.root)));
    out["depth"] = a.depth;
    out["root_start"] = a.root_start;
    return out;
  }

 private:
  // One per-cell sweep (raw values, locations or times) without the GIL, warnings re-issued after.
  template <typename Cell, typename Values>
  py::list sweep_cells(std::vector<Cell> (RaggedField::*read)(const ragged::SweepOptions&) const, Values Cell::*member,
                       std::optional<std::uint64_t> subtree, unsigned threads) const {
    WarningCollector warnings;
    std::vector<Cell> cells;
    {
      py::gil_scoped_release release;
      cells = (f().*read)(sweep(subtree, threads, warnings));
    }
    warnings.issue();
    return cell_tuples(std::move(cells), member);
  }

  static ragged::SweepOptions sweep(std::optional<std::uint64_t> subtree, unsigned threads,
                                    WarningCollector& warnings) {
    ragged::SweepOptions o;
    o.subtree = subtree;
    o.threads = threads;
    o.warn = warnings.sink();
    return o;
  }

  // Declared first so it is destroyed last: the field refers to the store.
  std::shared_ptr<io::Store> store_;
  std::shared_ptr<const RaggedField> field_;
};

// read_tensors as a stream: the reader runs on its own thread (GIL-free) and hands blocks over
// through a queue of at most `capacity` blocks, so memory stays bounded by a few blocks however
// many the field yields. `next` waits with the GIL released; `close` (also on destruction) stops
// the reader at its next block and joins it.
class PyTensorStream {
 public:
  PyTensorStream(const PyRaggedField& field, ragged::TensorOptions options, std::size_t capacity)
      : store_(field.store()), field_(field.field()), capacity_(std::max<std::size_t>(1, capacity)) {
    options.warn = warnings_.sink();
    thread_ = std::thread([this, o = std::move(options)] {
      try {
        field_->read_tensors(o, [this](ragged::TensorBlock&& b) {
          std::unique_lock<std::mutex> lock(mutex_);
          space_.wait(lock, [&] { return cancelled_ || queue_.size() < capacity_; });
          if (cancelled_) throw Cancelled{};
          queue_.push_back(std::move(b));
          ready_.notify_all();
        });
      } catch (const Cancelled&) {
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      ready_.notify_all();
    });
  }
  PyTensorStream(const PyTensorStream&) = delete;
  PyTensorStream& operator=(const PyTensorStream&) = delete;
  ~PyTensorStream() {
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      stop();
    } else {
      stop();
    }
  }

  // The next block as a tuple (see block_tuple), or None at the end; rethrows the reader's error.
  py::object next() {
    std::optional<ragged::TensorBlock> block;
    std::exception_ptr error;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return !queue_.empty() || done_; });
      if (!queue_.empty()) {
        block.emplace(std::move(queue_.front()));
        queue_.pop_front();
        space_.notify_all();
      } else {
        std::swap(error, error_);
      }
    }
    warnings_.issue();
    if (error) std::rethrow_exception(error);
    if (!block) return py::none();
    return PyRaggedField::block_tuple(std::move(*block));
  }

  void close() {
    py::gil_scoped_release release;
    stop();
  }

 private:
  struct Cancelled {};
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
      queue_.clear();
    }
    space_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::shared_ptr<io::Store> store_;
  std::shared_ptr<const RaggedField> field_;
  WarningCollector warnings_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<ragged::TensorBlock> queue_;
  bool done_ = false, cancelled_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once everything above exists
};

std::unique_ptr<PyTensorStream> tensor_stream(const PyRaggedField& field, std::uint32_t n_bins, double resolution,
                                              double bottom, double top, const std::string& fit,
                                              const std::string& dtype, std::optional<int> block_order,
                                              std::optional<std::uint64_t> subtree, std::uint64_t max_block_bytes,
                                              unsigned threads, std::size_t capacity) {
  auto o = PyRaggedField::tensor_options(n_bins, resolution, bottom, top, fit, dtype, block_order, subtree,
                                         max_block_bytes, threads);
  return std::make_unique<PyTensorStream>(field, std::move(o), capacity);
}

}  // namespace

void bind_ragged(py::module_& m) {
  g_warning_type = PyErr_NewExceptionWithDoc("tessera.ragged.RaggedWarning",
                                             "A non-fatal condition a ragged reader reports; `code` names it "
                                             "(subtree_disjoint, flux_integer_cast).",
                                             PyExc_UserWarning, nullptr);
  if (g_warning_type == nullptr) throw py::error_already_set();
  m.add_object("RaggedWarning", py::handle(g_warning_type));

  py::class_<PyRaggedField>(m, "RaggedField")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"), py::arg("field"))
      .def_property_readonly("store_path", &PyRaggedField::store_path)
      .def_property_readonly("path", &PyRaggedField::path)
      .def_property_readonly("group", &PyRaggedField::group)
      .def_property_readonly("size", &PyRaggedField::size)
      .def_property_readonly("chunk_cells", &PyRaggedField::chunk_cells)
      .def_property_readonly("sharded", &PyRaggedField::sharded)
      .def_property_readonly("has_morton", &PyRaggedField::has_morton)
      .def_property_readonly("on_cells_axis", &PyRaggedField::on_cells_axis)
      .def_property_readonly("weights", &PyRaggedField::weights)
      .def_property_readonly("gain", &PyRaggedField::gain)
      .def_property_readonly("locations", &PyRaggedField::locations)
      .def_property_readonly("times", &PyRaggedField::times)
      .def_property_readonly("located", &PyRaggedField::located)
      .def_property_readonly("temporal", &PyRaggedField::temporal)
      .def("element", &PyRaggedField::element)
      .def("read_cell", &PyRaggedField::read_cell, py::arg("index"))
      .def("read_populated", &PyRaggedField::read_populated)
      .def("summary", &PyRaggedField::summary)
      .def("read_tensors", &PyRaggedField::read_tensors, py::arg("n_bins"), py::arg("resolution"), py::arg("bottom"),
           py::arg("top"), py::arg("fit"), py::arg("dtype"), py::arg("block_order"), py::arg("subtree"),
           py::arg("max_block_bytes"), py::arg("threads"))
      .def("read_raw_values", &PyRaggedField::read_raw_values, py::arg("subtree"), py::arg("threads"))
      .def("read_locations", &PyRaggedField::read_locations, py::arg("subtree"), py::arg("threads"))
      .def("read_times", &PyRaggedField::read_times, py::arg("subtree"), py::arg("threads"))
      .def("cell_index", &PyRaggedField::cell_index, py::arg("chunk_id"), py::arg("row"), py::arg("col"))
      .def("axis", &PyRaggedField::axis)
      .def("tensor_stream", &tensor_stream, py::arg("n_bins"), py::arg("resolution"), py::arg("bottom"), py::arg("top"),
           py::arg("fit"), py::arg("dtype"), py::arg("block_order"), py::arg("subtree"), py::arg("max_block_bytes"),
           py::arg("threads"), py::arg("capacity") = 4);

  py::class_<PyTensorStream>(m, "RaggedTensorStream")
      .def("next", &PyTensorStream::next)
      .def("close", &PyTensorStream::close);
}

}  // namespace tessera::python
