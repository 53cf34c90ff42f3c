// The `tessera._tessera` extension module: exception types, the per-format bindings, and the
// shared conversions of bindings.hpp. The public API is the pure-Python package around it.
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <new>

#include "bindings.hpp"
#include "tessera/core/error.hpp"
#include "tessera/version.hpp"

namespace tessera::python {

py::dtype numpy_dtype(DType dtype) {
  if (dtype == DType::Bool) return py::dtype("bool");
  return py::dtype(std::string(dtype_info(dtype).numpy_descr));
}

DType dtype_of_numpy(const py::dtype& dtype) {
  if (dtype.kind() == 'b') return DType::Bool;
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  const std::string descr = std::string("<") + (kind == 'f' ? 'f' : kind == 'i' ? 'i' : 'u') + std::to_string(size);
  if (size == 1 && (kind == 'i' || kind == 'u')) {
    if (auto t = dtype_from_numpy_descr(std::string("|") + kind + "1")) return *t;
  }
  if (kind == 'f' || kind == 'i' || kind == 'u') {
    if (auto t = dtype_from_numpy_descr(descr)) {
      if (dtype.byteorder() == '>')
        throw UsageError("big-endian numpy arrays are not supported; use .astype('" + descr + "')");
      return *t;
    }
  }
  throw UsageError("numpy dtype " + py::str(static_cast<const py::handle&>(dtype)).cast<std::string>() +
                   " has no tessera element type (bool, uint8..64, int8..64, float16/32/64)");
}

py::array bytes_to_numpy(std::vector<std::byte>&& bytes, DType dtype, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<std::byte>(std::move(bytes));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<std::byte>*>(p); });
  return py::array(numpy_dtype(dtype), shape, owner->data(), free_when_done);
}

std::vector<std::int64_t> as_index_vector(const py::handle& cells) {
  // Inspect the input's own dtype first: a forced cast would turn 0.5 into cell 0 and wrap
  // uint64 values above 2^63 into negative (or wrong) cells.
  const py::array raw = py::array::ensure(cells);
  if (!raw) throw UsageError("cells must be a sequence of integers");
  if (raw.ndim() != 1)
    throw UsageError("cells must be one-dimensional, got " + std::to_string(raw.ndim()) + " dimensions");
  const char kind = raw.dtype().kind();
  if (raw.size() > 0 && kind != 'i' && kind != 'u')
    throw UsageError("cells must be integers, got numpy dtype " +
                     py::str(static_cast<const py::handle&>(raw.dtype())).cast<std::string>());
  if (kind == 'u' && raw.dtype().itemsize() == 8) {
    const auto u = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>::ensure(raw);
    for (py::ssize_t i = 0; i < u.size(); ++i)
      if (u.data()[i] > static_cast<std::uint64_t>(INT64_MAX))
        throw UsageError("cell " + std::to_string(u.data()[i]) + " is outside the int64 range");
  }
  const auto array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(raw);
  return {array.data(), array.data() + array.size()};
}

namespace {

// Exception classes: tessera.Error is the common base; each subclass also derives from the
// builtin a Python caller would catch for that kind of failure.
struct ExceptionTypes {
  PyObject* base = nullptr;
  PyObject* format = nullptr;
  PyObject* io = nullptr;
  PyObject* usage = nullptr;
  PyObject* limit = nullptr;
  PyObject* unsupported = nullptr;
};
ExceptionTypes g_types;

PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("tessera.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps one reference
  return type;
}

PyObject* with_base(PyObject* builtin) { return PyTuple_Pack(2, g_types.base, builtin); }

// Text of an error as str without ever raising UnicodeDecodeError: messages are already valid
// UTF-8 (tessera::Error escapes them); a path keeps undecodable bytes as surrogates, the way
// os.fsdecode does, so os.fsencode(e.path) gives the file name back.
py::object error_text(const std::string& s, const char* errors) {
  PyObject* text = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), errors);
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(text);
}

// Raises `type(describe())` with the parts as attributes (message, path, structure).
void raise(PyObject* type, const Error& e) {
  py::object instance;
  try {
    instance = py::reinterpret_steal<py::object>(
        PyObject_CallFunctionObjArgs(type, error_text(e.describe(), "replace").ptr(), nullptr));
    if (!instance) return;  // the call set its own error
    PyObject_SetAttrString(instance.ptr(), "message", error_text(e.what(), "replace").ptr());
    PyObject_SetAttrString(instance.ptr(), "path", error_text(e.path(), "surrogateescape").ptr());
    PyObject_SetAttrString(instance.ptr(), "structure", error_text(e.structure(), "replace").ptr());
  } catch (py::error_already_set& err) {
    err.restore();
    return;
  }
  PyErr_SetObject(type, instance.ptr());
}

void register_exceptions(py::module_& m) {
  g_types.base = new_exception(m, "Error", PyExc_Exception, "Base class of every error tessera raises.");
  PyObject* bases = with_base(PyExc_ValueError);
  g_types.format =
      new_exception(m, "FormatError", bases, "Malformed input: bytes that break a rule of a format specification.");
  g_types.usage =
      new_exception(m, "UsageError", bases, "An invalid argument, a missing dataset or conflicting options.");
  g_types.limit =
      new_exception(m, "LimitError", bases, "A documented limit was exceeded, or sizes from a file would overflow.");
  Py_DECREF(bases);
  bases = with_base(PyExc_OSError);
  g_types.io = new_exception(m, "IoError", bases, "The operating system refused a read, write, open, rename or map.");
  Py_DECREF(bases);
  bases = with_base(PyExc_NotImplementedError);
  g_types.unsupported =
      new_exception(m, "UnsupportedError", bases, "Well-formed input this version of tessera does not handle.");
  Py_DECREF(bases);

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const FormatError& e) {
      raise(g_types.format, e);
    } catch (const IoError& e) {
      raise(g_types.io, e);
    } catch (const UsageError& e) {
      raise(g_types.usage, e);
    } catch (const LimitError& e) {
      raise(g_types.limit, e);
    } catch (const UnsupportedError& e) {
      raise(g_types.unsupported, e);
    } catch (const Error& e) {
      raise(g_types.base, e);
    } catch (const std::bad_alloc&) {
      raise(g_types.limit, LimitError(kOutOfMemoryText));  // not a bare MemoryError
    }
  });
}

}  // namespace

void register_module(py::module_& m) {
  m.doc() = "libtessera bindings; use the `tessera` package, not this module.";
  m.attr("__version__") = kVersion;
  register_exceptions(m);
  bind_tet(m);
  bind_cells(m);
  bind_cells_batch(m);
  bind_ragged(m);
  bind_ragged_hive(m);
}

}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) { tessera::python::register_module(m); }
