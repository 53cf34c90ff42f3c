// Path-based reads from one HDF5 file, for readers that know the layout they expect (the h5ad and
// 10x HDF5 inputs of the cells converter): what an object path is, string, string-list, integer
// and object-reference attributes, and boxes of a dataset converted to int64, uint64 or double,
// or strings. Implemented in the HDF5 room (src/interop/hdf5_file.cpp), the only code that
// includes hdf5.h.
//
// Every failure names the file and the object (`a.h5ad: dataset "X/indptr": read failed: …`):
// a FormatError for malformed or unreadable content (with the innermost messages of HDF5's
// error stack), an IoError for a file that cannot be opened at all, an UnsupportedError for a
// dataset compressed with a filter this libhdf5 does not have (h5py's LZF, Blosc, …).
// Objects are not thread-safe; use one Hdf5File per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::interop {

enum class Hdf5Kind { Missing, Group, Dataset, Other };
// How a dataset's elements can be read: Integer and Bool (h5py's enum) as int64, Integer and
// Float (16, 32 or 64 bits) as double, String (fixed or variable length) as text.
enum class Hdf5Element { Integer, Float, Bool, String, Other };

class Hdf5Dataset {
 public:
  ~Hdf5Dataset();
  Hdf5Dataset(Hdf5Dataset&&) noexcept;
  Hdf5Dataset& operator=(Hdf5Dataset&&) noexcept;

  const std::string& name() const;                  // the object path inside the file
  const std::vector<std::uint64_t>& shape() const;  // empty for a scalar
  Hdf5Element element() const;
  std::string type_name() const;  // e.g. "int32", "float32", "string", "compound"

  // Elements of the box [origin, origin + extent) in C order; `out` holds exactly the box's
  // element count. Integers and booleans as int64 (an unsigned value above 2^63 − 1 is a
  // FormatError, never clipped); integers and floats as double.
  void read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::int64_t> out) const;
  void read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent, std::span<double> out) const;
  // Integers as uint64 (a negative value is a FormatError): unsigned 64-bit data above 2^63 − 1.
  void read(std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::uint64_t> out) const;
  // Elements [first, first + count) of a 1-D string dataset (trailing NULs and, for space-padded
  // types, spaces removed).
  std::vector<std::string> read_strings(std::uint64_t first, std::uint64_t count) const;

 private:
  friend class Hdf5File;
  struct Impl;
  explicit Hdf5Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Hdf5File {
 public:
  // Opens read-only. IoError when the file is missing or unreadable, FormatError when it is not
  // HDF5 (or damaged beyond opening).
  explicit Hdf5File(const std::string& path);
  ~Hdf5File();
  Hdf5File(Hdf5File&&) noexcept;
  Hdf5File& operator=(Hdf5File&&) noexcept;

  const std::string& path() const;
  // What `object` ("X", "X/indptr", "/matrix/features/id") is; Missing when any component is
  // absent or a link dangles.
  Hdf5Kind kind(const std::string& object) const;
  // The names of a group's members, sorted byte-wise (FormatError when it is not a group).
  std::vector<std::string> members(const std::string& group) const;
  // The first element of a string attribute; nullopt when absent or not a string.
  std::optional<std::string> string_attribute(const std::string& object, const std::string& name) const;
  // Every element of a string attribute (scalar or 1-D), e.g. AnnData's `column-order`; nullopt
  // when absent or not strings, an empty list for an attribute without elements (h5py writes an
  // empty list as an empty float array).
  std::optional<std::vector<std::string>> string_list_attribute(const std::string& object,
                                                                const std::string& name) const;
  // The path of the object an object-reference attribute points to (the `categories` attribute
  // of an AnnData 0.7 categorical); nullopt when absent or not a single object reference.
  std::optional<std::string> referenced_object(const std::string& object, const std::string& name) const;
  // An integer attribute (scalar or 1-D) as int64; nullopt when absent or not integers.
  std::optional<std::vector<std::int64_t>> integer_attribute(const std::string& object, const std::string& name) const;
  // A numeric attribute with one element (a dataset's `_FillValue`) as double; nullopt when
  // absent, not a number or not a single element.
  std::optional<double> number_attribute(const std::string& object, const std::string& name) const;
  // Opens a dataset (FormatError when `object` is not one; UnsupportedError when its filters are
  // not available). The dataset keeps the file open.
  Hdf5Dataset dataset(const std::string& object) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tessera::interop
