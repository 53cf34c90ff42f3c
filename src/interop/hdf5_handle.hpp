// Shared pieces of the HDF5 room (private to src/interop/hdf5*.cpp, the only code that includes
// hdf5.h): identifier ownership, error-stack handling, the mapping of HDF5 element types onto
// tessera's, and string attributes. `hdf5.cpp` (the `.tet` converter's ArraySource) and
// `hdf5_file.cpp` (path-based reads for the cells converter) both build on them.
#pragma once

#include "hdf5_api.hpp"

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/tet/footer_extension.hpp"

namespace tessera::interop::h5 {

// Owns one HDF5 identifier.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Hid() { reset(); }
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// Switches libhdf5's automatic error printing off on the calling thread (threadsafe builds keep
// the error stack and its auto-print setting per thread).
void quiet();
// The two innermost descriptions of the current error stack (then cleared).
std::string last_error();
// FormatError "<path>: dataset "<object>": <what>: <HDF5 error stack>" (no dataset part when
// `object` is empty).
[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what);

std::vector<hsize_t> to_hsize(std::span<const std::uint64_t> v);

// The element type a dataset (or attribute) is read as, and the memory type that reads it.
struct ElementType {
  DType stored;
  Hid memory;
};
bool is_ieee_half(hid_t type);
// h5py's bool: an enum over a 1-byte integer with exactly {FALSE: 0, TRUE: 1}.
bool is_h5py_bool(hid_t type);
// Integers of 1–8 bytes, f16/f32/f64 and h5py's bool; nullopt for any other type.
std::optional<ElementType> classify(hid_t type);

std::vector<std::string> attribute_names(hid_t object);
struct Attribute {
  Hid attr, type, space;
  hssize_t points = 0;
};
// An attribute with at least one element, or nullopt (absent, unreadable, empty).
std::optional<Attribute> open_attribute(hid_t object, const std::string& name);
// The first element of a string attribute (variable- or fixed-length).
std::optional<std::string> string_value(const Attribute& a);
// An attribute with its type (strings, integers, floats, h5py bools, scalar or array), or
// nullopt for other classes (references, compounds, vlen sequences).
std::optional<tet::AttributeValue> typed_attribute(hid_t object, const std::string& name);
// Every attribute of `object` that typed_attribute reads, in name order, without the
// dimension-scale bookkeeping (DIMENSION_LIST, REFERENCE_LIST, _Netcdf4*, a scale's CLASS/NAME).
tet::TypedAttributes typed_attributes(hid_t object);

}  // namespace tessera::interop::h5
