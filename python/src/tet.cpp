// `.tet` bindings: an open file (catalog, footer metadata, strided reads that are views of the
// mapped file when one raw chunk holds the selection), the query engine, synthetic files and the
// writer. python/tessera/tet.py builds the public objects on these.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include "bindings.hpp"
#include "tessera/io/publish.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/synth.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/tet_query/query_document.hpp"
#include "tessera/tet_query/query_engine.hpp"
#include "tessera/tet_query/query_output.hpp"
#include "tessera/tet_query/selection.hpp"

namespace tessera::python {
namespace {

using tet::Box;
using tet::TetFile;

py::dict dataset_info(const TetFile& file, const tet::Dataset& d) {
  py::dict info;
  info["id"] = d.id;
  info["name"] = d.name;
  info["dtype"] = numpy_dtype(d.dtype);
  info["dtype_name"] = std::string(dtype_info(d.dtype).name);
  info["shape"] = py::tuple(py::cast(d.shape));
  info["chunks"] = py::tuple(py::cast(d.chunk_shape));
  info["grid"] = py::tuple(py::cast(d.grid));
  // A dataset's codec is per chunk in the index: its name when every chunk uses one, else "mixed".
  std::optional<tet::Codec> codec;
  bool mixed = false;
  for (auto e : d.entry_of_chunk) {
    const tet::Codec c = tet::entry_codec(file.entry(e));
    mixed = mixed || (codec && *codec != c);
    codec = c;
  }
  info["codec"] = mixed ? "mixed" : std::string(tet::codec_name(codec.value_or(tet::Codec::Raw)));
  py::dict attrs, coords;
  py::object dim_names = py::none();
  if (const auto* md = file.metadata_of(d.name)) {
    for (const auto& [k, v] : md->attrs) attrs[py::str(k)] = v;
    for (const auto& [axis, labels] : md->coords) coords[py::str(axis)] = labels;
    if (md->dim_names) dim_names = py::cast(*md->dim_names);
  }
  info["attrs"] = attrs;
  info["coords"] = coords;
  info["dim_names"] = dim_names;
  return info;
}

const tet::Dataset& find_dataset(const TetFile& file, const std::string& name) {
  const auto* d = file.find(name);
  if (d == nullptr) {
    std::string names;
    for (const auto& x : file.datasets()) names += (names.empty() ? "" : ", ") + tet::quoted_name(x.name);
    throw UsageError("no dataset " + tet::quoted_name(name) + " in the file; datasets: [" + names + "]",
                     file.source().name());
  }
  return *d;
}

Box box_from(const tet::Dataset& d,
             const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>& ranges) {
  if (ranges.size() != d.ndim())
    throw UsageError("selection has " + std::to_string(ranges.size()) + " axes, dataset " + tet::quoted_name(d.name) +
                     " has " + std::to_string(d.ndim()));
  Box box;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto [start, stop, step] = ranges[i];
    if (step == 0) throw UsageError("selection step must be at least 1 (axis " + std::to_string(i) + ")");
    if (stop > d.shape[i] || start > stop)
      throw UsageError("selection [" + std::to_string(start) + ", " + std::to_string(stop) + ") is outside axis " +
                       std::to_string(i) + " of extent " + std::to_string(d.shape[i]));
    box.push_back({start, stop, step});
  }
  return box;
}

// The selection as a read-only numpy view of the mapped file when one raw chunk holds all of it
// (any steps: numpy strides express them); nullopt otherwise. The view keeps the file open.
// With `verify_checksums` the chunk's stored bytes are first compared with their recorded CRC-32C.
std::optional<py::array> chunk_view(const std::shared_ptr<const TetFile>& file, const tet::Dataset& d, const Box& box,
                                    bool verify_checksums) {
  const auto n = d.ndim();
  std::vector<std::uint64_t> coords(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (box[i].count() == 0) return std::nullopt;
    const auto first = box[i].start / d.chunk_shape[i];
    const auto last = (box[i].start + (box[i].count() - 1) * box[i].step) / d.chunk_shape[i];
    if (first != last) return std::nullopt;
    coords[i] = first;
  }
  const std::uint32_t entry_index = d.entry_of_chunk[d.chunk_ordinal(coords)];
  const auto& entry = file->entry(entry_index);
  if (tet::entry_codec(entry) != tet::Codec::Raw) return std::nullopt;  // only raw tiles can be viewed
  const std::byte* base = file->source().view(entry.payload_offset, entry.raw_byte_len);
  if (base == nullptr) return std::nullopt;
  if (verify_checksums) {
    py::gil_scoped_release release;
    file->check_chunk_checksum(entry_index);
  }
  std::vector<std::uint64_t> origin(n), extent(n);
  d.tile_extent(coords, origin, extent);
  // Row-major strides of the (clipped) tile, in bytes.
  std::vector<py::ssize_t> tile_strides(n), shape(n), strides(n);
  py::ssize_t stride = static_cast<py::ssize_t>(d.element_size());
  for (std::size_t i = n; i-- > 0;) {
    tile_strides[i] = stride;
    stride *= static_cast<py::ssize_t>(extent[i]);
  }
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    offset += (box[i].start - origin[i]) * static_cast<std::uint64_t>(tile_strides[i]);
    shape[i] = static_cast<py::ssize_t>(box[i].count());
    strides[i] = tile_strides[i] * static_cast<py::ssize_t>(box[i].step);
  }
  auto* keep = new std::shared_ptr<const TetFile>(file);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<const TetFile>*>(p); });
  // numpy wants a mutable pointer; the array is marked read-only right away (the map is PROT_READ).
  auto* data = const_cast<std::byte*>(base + offset);
  py::array view(numpy_dtype(d.dtype), shape, strides, data, owner);
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

class PyTetFile {
 public:
  // `verify_checksums`: every read compares the chunks it touches with the CRC-32C the footer
  // extension records (tet::ReadOptions::verify_checksums).
  PyTetFile(const std::string& path, bool verify_checksums) : verify_checksums_(verify_checksums) {
    py::gil_scoped_release release;
    file_ = std::make_shared<const TetFile>(TetFile::open(path));
  }

  std::string path() const { return file_->source().name(); }
  std::uint64_t size() const { return file_->source().size(); }

  py::list datasets() const {
    py::list out;
    for (const auto& d : file_->datasets()) out.append(dataset_info(*file_, d));
    return out;
  }

  py::list history() const {
    py::list out;
    if (!file_->layout().footer) return out;
    for (const auto& row : file_->layout().footer->history) {
      py::dict r;
      r["op"] = row.op;
      r["source"] = row.source;
      r["at"] = row.at;
      r["parents"] = row.parents;
      r["params"] = row.params;
      out.append(r);
    }
    return out;
  }

  py::dict file_metadata() const {
    py::dict out;
    const auto& footer = file_->layout().footer;
    if (footer && footer->metadata.file) {
      const auto& f = *footer->metadata.file;
      if (f.tool) out["tool"] = *f.tool;
      if (f.library_version) out["library_version"] = *f.library_version;
      if (f.created_at) out["created_at"] = *f.created_at;
    }
    return out;
  }

  // The footer's tessera extension as its JSON text (typed attributes, applied CF encoding,
  // chunk checksums), or None for a file without one; the Python package decodes it.
  py::object extension_json() const {
    const auto& footer = file_->layout().footer;
    if (!footer || !footer->extension) return py::none();
    return py::str(tet::serialize_footer_extension(*footer->extension));
  }

  // Resolves a query-document `selection` (JSON text, labels allowed) to (start, stop, step) triples.
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> resolve(
      const std::string& name, const std::string& selection_json) const {
    const auto& d = find_dataset(*file_, name);
    const auto selection = tet::parse_selection_text(selection_json);
    const tet::DatasetMetadata* md = file_->metadata_of(name);
    const auto labelled = tet::selects_by_label(selection) ? tet::with_coordinate_labels(*file_, d, md) : std::nullopt;
    const auto box = tet::resolve_selection(d, labelled ? &*labelled : md, selection);
    std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> out;
    for (const auto& r : box) out.emplace_back(r.start, r.stop, r.step);
    return out;
  }

  py::array read(const std::string& name,
                 const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>& ranges, unsigned threads,
                 bool allow_view) const {
    const auto& d = find_dataset(*file_, name);
    const auto box = box_from(d, ranges);
    if (allow_view) {
      if (auto view = chunk_view(file_, d, box, verify_checksums_)) return *view;
    }
    std::vector<py::ssize_t> shape;
    std::uint64_t count = 1;
    for (const auto& r : box) {
      shape.push_back(static_cast<py::ssize_t>(r.count()));
      count *= r.count();
    }
    py::array out(numpy_dtype(d.dtype), shape);
    auto* dst = static_cast<std::byte*>(out.mutable_data());
    {
      py::gil_scoped_release release;
      file_->read_box(d, box, {dst, count * d.element_size()}, {threads, verify_checksums_});
    }
    return out;
  }

  // Whether `read(name, ranges)` would return a view of the mapped file (no copy).
  bool is_view(const std::string& name,
               const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>& ranges) const {
    const auto& d = find_dataset(*file_, name);
    return chunk_view(file_, d, box_from(d, ranges), false).has_value();
  }

 private:
  std::shared_ptr<const TetFile> file_;
  bool verify_checksums_ = false;
};

// A numeric array of a query response's `execution` block, taken out of the tree as the numpy
// array `np.asarray` would make of its JSON list (tessera/tet.py `_arrays_in_response`): bools as
// bool; integers as int64 (uint64 when one exceeds int64 and none is negative); anything with a
// float or a null as float64, nulls as NaN. A partial result can hold millions of numbers; going
// through JSON text and Python floats cost more than the fold that computed them.
struct ResultArray {
  std::string key;
  char kind = 'f';  // 'f' float64, 'i' int64, 'u' uint64, 'b' bool, 's' a scalar (f64[0])
  std::vector<double> f64;
  std::vector<std::int64_t> i64;
  std::vector<std::uint64_t> u64;
  std::vector<std::uint8_t> flags;
};

// The kind `values` converts to, or 0 when it must go through Python (strings, nesting, bools
// mixed with numbers, negative integers beside ones above int64).
char result_array_kind(const codec::json::Json& values) {
  using codec::json::Json;
  bool any_float = false, any_null = false, any_bool = false, any_int = false, any_negative = false, any_big = false;
  for (const Json& v : values) {
    switch (v.type()) {
      case Json::value_t::number_float: any_float = true; break;
      case Json::value_t::number_integer:
        any_int = true;
        any_negative |= v.get<std::int64_t>() < 0;
        break;
      case Json::value_t::number_unsigned:
        any_int = true;
        any_big |= v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX);
        break;
      case Json::value_t::boolean: any_bool = true; break;
      case Json::value_t::null: any_null = true; break;
      default: return 0;
    }
  }
  if (any_bool) return any_float || any_int || any_null ? 0 : 'b';
  if (any_float || any_null) return 'f';
  if (any_big) return any_negative ? 0 : 'u';
  return 'i';
}

// Moves the convertible arrays (partial results and previews) out of `execution`, leaving null
// in their place so the text stays small; shapes and indices stay for tet.py, as before. Scalars
// that JSON can only write as null (NaN, ±inf) come out too, as Python floats.
std::vector<ResultArray> take_result_arrays(codec::json::Json& tree) {
  std::vector<ResultArray> out;
  if (!tree.is_object() || !tree.contains("execution") || !tree["execution"].is_object()) return out;
  for (auto& [key, values] : tree["execution"].items()) {
    if (values.is_number_float() && !std::isfinite(values.get<double>())) {
      out.push_back({key, 's', {values.get<double>()}, {}, {}, {}});
      continue;
    }
    if (!values.is_array() || values.empty() || key == "operation_reduced_shape" ||
        key == "transform_div_by_zero_indices")
      continue;
    ResultArray a;
    a.key = key;
    a.kind = result_array_kind(values);
    if (a.kind == 0) continue;
    for (const auto& v : values) {
      switch (a.kind) {
        case 'b': a.flags.push_back(v.get<bool>() ? 1 : 0); break;
        case 'i': a.i64.push_back(v.get<std::int64_t>()); break;
        case 'u': a.u64.push_back(v.get<std::uint64_t>()); break;
        default: a.f64.push_back(v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>());
      }
    }
    codec::json::release(values);
    out.push_back(std::move(a));
  }
  return out;
}

// (response JSON text, {key: numpy array}) for tet.py to join.
py::tuple run_query(const std::string& document, const std::optional<std::string>& path, bool execute,
                    std::uint64_t preview, unsigned threads, const std::optional<std::string>& device) {
  std::string text;
  std::vector<ResultArray> arrays;
  {
    py::gil_scoped_release release;
    const auto doc = tet::parse_query_json(document);
    tet::QueryOptions options;
    options.tet_path = path;
    options.execute = execute;
    options.preview = preview;
    options.threads = threads;
    options.device = device;
    tet::QueryResponse response = tet::run_query(doc, options);
    arrays = take_result_arrays(response.tree);
    text = tet::dump_query_json(response.tree, false);
  }
  py::dict by_key;
  for (ResultArray& a : arrays) {
    if (a.kind == 's') {
      by_key[py::str(a.key)] = py::float_(a.f64.front());
      continue;
    }
    py::array array;
    switch (a.kind) {
      case 'b': array = to_numpy(std::move(a.flags)).attr("view")(py::dtype("bool")); break;
      case 'i': array = to_numpy(std::move(a.i64)); break;
      case 'u': array = to_numpy(std::move(a.u64)); break;
      default: array = to_numpy(std::move(a.f64));
    }
    by_key[py::str(a.key)] = array;
  }
  return py::make_tuple(text, by_key);
}

py::dict synth(const std::string& path, const std::vector<std::string>& specs, std::uint64_t seed, unsigned threads,
               const std::string& source, const std::string& at) {
  tet::SynthOptions options;
  for (const auto& s : specs) options.datasets.push_back(tet::parse_synth_spec(s));
  options.seed = seed;
  options.threads = threads;
  options.source = source;
  options.at = at;
  tet::SynthSummary summary;
  {
    py::gil_scoped_release release;
    // A bucket output is written to a staging file and uploaded (docs/remote.md).
    io::OutputTarget target(path, io::OutputTarget::Shape::File);
    summary = tet::synth_write(target.local_path(), options);
    (void)target.publish();
  }
  py::dict out;
  out["datasets"] = summary.datasets;
  out["chunks"] = summary.chunks;
  out["bytes"] = summary.bytes;
  return out;
}

// TetWriter with numpy input. The public writer (tet.py) checks shapes and dtypes first; the
// library re-checks sizes and order.
class PyTetWriter {
 public:
  PyTetWriter(const std::string& path, std::uint16_t budget_bps, std::uint32_t budget_bytes, unsigned threads)
      : target_(std::in_place, path, io::OutputTarget::Shape::File) {
    tet::WriterOptions options;
    options.memory_budget_percent_bps = budget_bps;
    options.memory_budget_bytes = budget_bytes;
    options.threads = threads;
    writer_.emplace(target_->local_path(), std::move(options));
  }

  std::uint32_t add_dataset(const std::string& name, const py::dtype& dtype, std::vector<std::uint64_t> shape,
                            std::vector<std::uint64_t> chunks, const std::string& codec, int level) {
    tet::DatasetSpec spec;
    spec.name = name;
    spec.dtype = dtype_of_numpy(dtype);
    spec.shape = std::move(shape);
    spec.chunk_shape = std::move(chunks);
    const auto chosen = tet::codec_named(codec);
    if (!chosen) throw UsageError("codec must be \"raw\" or \"zstd\", got \"" + codec + "\"");
    spec.codec = *chosen;
    spec.zstd_level = level;
    return live().add_dataset(spec);
  }

  void write_dataset(std::uint32_t id, const py::buffer& data) {
    const auto bytes = contiguous_bytes(data);
    py::gil_scoped_release release;
    live().write_dataset(id, bytes);
  }

  void write_chunk_row(std::uint32_t id, std::uint64_t row, const py::buffer& data) {
    const auto bytes = contiguous_bytes(data);
    py::gil_scoped_release release;
    live().write_chunk_row(id, row, bytes);
  }

  std::uint64_t chunk_rows(std::uint32_t id) { return live().chunk_rows(id); }

  void set_metadata(const std::string& metadata_json) {
    live().metadata() = tet::parse_spilled_metadata(metadata_json);
  }

  void add_history(const std::string& op, const std::string& source, const std::string& at,
                   const std::vector<std::string>& parents, const std::map<std::string, std::string>& params) {
    live().history().push_back({op, source, at, parents, params});
  }

  // Commits the file; a bucket output is then uploaded, and appears only once complete.
  std::uint64_t commit() {
    py::gil_scoped_release release;
    live().commit();
    const auto size = writer_->file_size();
    writer_.reset();
    (void)target_->publish();
    target_.reset();
    return size;
  }

  // Drops the writer without committing: the destination is untouched.
  void abort() {
    writer_.reset();
    target_.reset();
  }

 private:
  tet::TetWriter& live() {
    if (!writer_) throw UsageError("the writer is closed (committed or aborted)");
    return *writer_;
  }
  static std::span<const std::byte> contiguous_bytes(const py::buffer& data) {
    const auto info = data.request();
    if (!PyBuffer_IsContiguous(info.view(), 'C'))
      throw UsageError("array data must be C-contiguous (use numpy.ascontiguousarray)");
    return {static_cast<const std::byte*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize)};
  }
  std::optional<io::OutputTarget> target_;  // declared first: the writer's file lives in its staging
  std::optional<tet::TetWriter> writer_;
};

}  // namespace

void bind_tet(py::module_& m) {
  py::class_<PyTetFile>(m, "TetFile")
      .def(py::init<const std::string&, bool>(), py::arg("path"), py::arg("verify_checksums") = false)
      .def_property_readonly("path", &PyTetFile::path)
      .def_property_readonly("size", &PyTetFile::size)
      .def("datasets", &PyTetFile::datasets)
      .def("history", &PyTetFile::history)
      .def("file_metadata", &PyTetFile::file_metadata)
      .def("extension_json", &PyTetFile::extension_json)
      .def("resolve", &PyTetFile::resolve, py::arg("name"), py::arg("selection_json"))
      .def("read", &PyTetFile::read, py::arg("name"), py::arg("ranges"), py::arg("threads") = 0,
           py::arg("allow_view") = true)
      .def("is_view", &PyTetFile::is_view, py::arg("name"), py::arg("ranges"));

  m.def("tet_query", &run_query, py::arg("document"), py::arg("path"), py::arg("execute"), py::arg("preview"),
        py::arg("threads"), py::arg("device"));
  m.def("tet_synth", &synth, py::arg("path"), py::arg("specs"), py::arg("seed"), py::arg("threads"), py::arg("source"),
        py::arg("at"));

  py::class_<PyTetWriter>(m, "TetWriter")
      .def(py::init<const std::string&, std::uint16_t, std::uint32_t, unsigned>(), py::arg("path"),
           py::arg("budget_bps"), py::arg("budget_bytes"), py::arg("threads"))
      .def("add_dataset", &PyTetWriter::add_dataset)
      .def("write_dataset", &PyTetWriter::write_dataset)
      .def("write_chunk_row", &PyTetWriter::write_chunk_row)
      .def("chunk_rows", &PyTetWriter::chunk_rows)
      .def("set_metadata", &PyTetWriter::set_metadata)
      .def("add_history", &PyTetWriter::add_history)
      .def("commit", &PyTetWriter::commit)
      .def("abort", &PyTetWriter::abort);
}

}  // namespace tessera::python
