// A foreign array container seen by the `.tet` converter: the list of importable arrays (names,
// element types, shapes, chunking, CF packing, the footer metadata they bring) and ranged reads of
// their elements. One implementation per input format, each in its own room: `hdf5` (the only
// code that includes hdf5.h), `netcdf` (libnetcdf), `zarr_source` (tessera's zarr module) and
// `tet_source` (tessera's `.tet` reader, to rechunk or recompress a `.tet` file).
//
// Readers deliver elements exactly as stored (C order, little-endian, in `stored` type, which may
// be i8 or bool); turning them into `.tet` element types (int8 → i16, CF decoding) is the
// converter's job, so every format shares one set of rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/tet/footer.hpp"

namespace tessera::interop {

// CF packing (`scale_factor`, `add_offset`, `_FillValue`): decoded = stored × scale + offset, and
// stored values matching the fill become NaN.
struct CfPacking {
  double scale = 1.0;
  double offset = 0.0;
  std::optional<double> fill;
  // `scale_factor` or `add_offset` is stored as a 64-bit float: integer storage decodes to f64.
  bool double_precision = false;
};

// The CF missing values of an unpacked float array: its `_FillValue` and `missing_value`
// entries. On import, elements equal to one of them (compared in the stored type, as xarray's
// mask_and_scale compares them) become NaN, unless the conversion keeps fill values.
struct MissingValues {
  std::vector<double> values;
};

struct SourceArray {
  std::string name;                        // group path joined with '/', e.g. "primary/f32"
  DType stored = DType::F32;               // element type the reader delivers
  std::vector<std::uint64_t> shape;        // rank 1..8, no zero extent
  std::vector<std::uint64_t> chunk_shape;  // source chunking (same rank); empty = unchunked
  std::optional<CfPacking> cf;
  std::optional<MissingValues> missing;  // float storage without packing only
  tet::DatasetMetadata metadata;         // attrs, dim_names and coords imported from the source
  // For the footer's tessera extension: every attribute with its type (the reference-visible
  // `metadata.attrs` are their limited text form) and, for a `.tet` input, the source dtype and
  // the CF encoding an earlier convert applied.
  tet::DatasetExtension extension;
};

class ArraySource {
 public:
  virtual ~ArraySource() = default;
  // The input path as given (used in messages and the report).
  virtual const std::string& path() const = 0;
  // The importable arrays, in the traversal order of spec §6.6 (names sorted byte-wise per level).
  virtual const std::vector<SourceArray>& arrays() const = 0;
  // Reads the box [origin, origin + extent) of array `index` into `out` (exactly the box's
  // element count × stored element size bytes), C order, little-endian. Safe to call from several
  // threads at once. Throws FormatError/IoError naming the file and the array.
  virtual void read(std::size_t index, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
                    std::span<std::byte> out) const = 0;
  // History rows the input already carries (a `.tet` input's), kept before the convert row.
  virtual std::vector<tet::HistoryRow> history() const { return {}; }
  // The container's own (global) attributes, typed.
  virtual tet::TypedAttributes global_attributes() const { return {}; }
};

// Each opens the container and lists its arrays (throwing FormatError/IoError naming the file when
// it cannot be opened or walked). Unsupported element types, scalars and empty arrays are left
// out silently; a Zarr array whose codecs the zarr module cannot read is an UnsupportedError.
std::unique_ptr<ArraySource> open_hdf5_source(const std::string& path);
std::unique_ptr<ArraySource> open_netcdf_source(const std::string& path);
std::unique_ptr<ArraySource> open_zarr_source(const std::string& path);
// A `.tet` file: its datasets as stored (element type, chunking, footer metadata) and its history.
std::unique_ptr<ArraySource> open_tet_source(const std::string& path);

}  // namespace tessera::interop
