// Shared pieces of the `tessera._tessera` extension: the per-format binding entry points, numpy
// arrays that take ownership of library vectors (no copy), and the dtype mapping.
//
// Rules every binding follows:
//  - the GIL is released around all I/O, decoding and encoding (py::gil_scoped_release), so
//    Python threads, Dask's threaded scheduler and DataLoader threads overlap;
//  - results move out of the library's vectors into numpy arrays without copying;
//  - library errors propagate as their C++ types; module.cpp translates them to tessera.*Error.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/dtype.hpp"

namespace tessera::python {

namespace py = pybind11;

void bind_tet(py::module_& m);
void bind_cells(py::module_& m);
void bind_cells_batch(py::module_& m);
void bind_ragged(py::module_& m);
void bind_ragged_hive(py::module_& m);

// A JSON tree as the Python object json.loads makes of it.
inline py::object from_json(const codec::json::Json& tree) {
  return py::module_::import("json").attr("loads")(codec::json::dump(tree));
}

inline py::object optional_str(const std::optional<std::string>& s) {
  return s ? py::object(py::str(*s)) : py::object(py::none());
}

// A 1-d (or `shape`-d) numpy array that owns `values`: the vector moves into a capsule, so the
// array's memory is the vector's and nothing is copied.
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape = {}) {
  auto* owner = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  if (shape.empty()) shape.push_back(static_cast<py::ssize_t>(owner->size()));
  return py::array_t<T>(shape, owner->data(), free_when_done);
}

// A pool of vectors lent to numpy: when an array made by `lend` dies, its vector (capacity and
// pages intact) comes back here instead of being freed, and the next `take` reuses it. A loop of
// large batches then reuses memory that is already mapped and faulted in, instead of mapping,
// faulting and unmapping fresh buffers every call (for 200 MB batches that halves the rate).
// Arrays still own their memory exclusively while they live: nothing is shared or copied.
template <typename T>
class VectorPool : public std::enable_shared_from_this<VectorPool<T>> {
 public:
  explicit VectorPool(std::size_t keep) : keep_(keep) {}

  std::vector<T> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return {};
    std::vector<T> v = std::move(free_.back());
    free_.pop_back();
    return v;
  }
  void give(std::vector<T>&& v) {
    std::lock_guard lock(mutex_);
    if (free_.size() < keep_) free_.push_back(std::move(v));
  }
  // Drops the pooled vectors (arrays alive keep theirs).
  void clear() {
    std::lock_guard lock(mutex_);
    free_.clear();
  }

  py::array_t<T> lend(std::vector<T>&& values) {
    struct Loan {
      std::vector<T> values;
      std::shared_ptr<VectorPool> pool;
    };
    auto* loan = new Loan{std::move(values), this->shared_from_this()};
    py::capsule give_back(loan, [](void* p) {
      auto* l = static_cast<Loan*>(p);
      l->pool->give(std::move(l->values));
      delete l;
    });
    return py::array_t<T>({static_cast<py::ssize_t>(loan->values.size())}, loan->values.data(), give_back);
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<T>> free_;
  std::size_t keep_;
};

// The same for raw bytes of element type `dtype` (f16 as numpy float16, bool as numpy bool).
py::array bytes_to_numpy(std::vector<std::byte>&& bytes, DType dtype, std::vector<py::ssize_t> shape);

// numpy dtype of a tessera element type, and back (UsageError for types tessera has no tag for).
py::dtype numpy_dtype(DType dtype);
DType dtype_of_numpy(const py::dtype& dtype);

// An int64 index vector from any integer sequence or array (copied once, GIL held).
std::vector<std::int64_t> as_index_vector(const py::handle& cells);

}  // namespace tessera::python
