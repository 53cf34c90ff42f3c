// One `zagg-ragged/1` array (spec §2.1–§2.6, §5.1): the strict gates of its `ragged`
// attributes block, its element declaration, the `weights`/`gain`/binding/declaration keys, and
// single-cell random access.
//
// A populated cell holds the raw little-endian C-order bytes of an (n, *inner_shape) array of the
// element dtype. `read_cell` reads exactly the inner chunk holding the cell: 2 ranged GETs on a
// sharded array (index suffix, then the chunk), 1 when the chunk is absent, 1 unsharded.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged {

inline constexpr std::string_view kRaggedSpec = "zagg-ragged/1";

// `ragged.element`: the dtype and inner shape of one payload row.
struct Element {
  DType dtype = DType::F32;
  std::string dtype_name;                  // as declared ("float32", "<f4", ...)
  std::vector<std::uint64_t> inner_shape;  // shape[1:] ([] = flat vector, [2] = t-digest)
  std::uint64_t row_bytes = 0;             // itemsize · prod(inner_shape)

  bool is_tdigest() const noexcept { return dtype == DType::F32 && inner_shape.size() == 1 && inner_shape[0] == 2; }
  bool is_words() const noexcept { return dtype == DType::U64 && inner_shape.empty(); }
};

enum class Weights : std::uint8_t { Counts, Flux };

// A word-typed declaration (`located` / `temporal`, spec §2.4).
struct Declaration {
  std::string spec;
  std::string shape;    // "per-centroid", "per-cell", "coordinate"
  std::string grammar;  // "mortie-morton/1", "mortie-toc/1"
};

// One decoded cell: `rows` rows of `element.row_bytes` bytes each (little-endian).
struct RaggedCell {
  std::uint64_t index = 0;
  std::uint64_t rows = 0;
  std::vector<std::byte> bytes;

  // The row-major elements as T (T must match the element dtype's width).
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

// Thread-safety: immutable once opened; every member may be called concurrently. Lifetime: refers
// to the store it was opened on, which must outlive it and its copies.
class RaggedArray {
 public:
  // Opens `path` (e.g. "6/h_tdigest") and applies the gates of spec §2.2 (and §2.3/§2.4 for
  // `weights`, `times`, `located`, `temporal`): FormatError or UnsupportedError naming the
  // array. Bindings are recorded, not followed (RaggedField opens the siblings).
  static RaggedArray open(const io::Store& store, std::string path, zarr::ReadOptions options = {});
  explicit RaggedArray(zarr::Array array);

  const zarr::Array& array() const noexcept { return array_; }
  const std::string& path() const noexcept { return array_.path(); }
  const Element& element() const noexcept { return element_; }
  Weights weights() const noexcept { return weights_; }
  // `gain` of a flux array (the JSON object as stored); nullopt when absent.
  const std::optional<codec::json::Json>& gain() const noexcept { return gain_; }
  // Sibling names bound by `ragged.locations` and the top-level `times` (one key component).
  const std::optional<std::string>& locations_binding() const noexcept { return locations_; }
  const std::optional<std::string>& times_binding() const noexcept { return times_; }
  const std::optional<Declaration>& located() const noexcept { return located_; }
  const std::optional<Declaration>& temporal() const noexcept { return temporal_; }
  // False for zagg's per-chunk companions (`dimension_names` ["chunks"]): read_cell only.
  bool on_cells_axis() const noexcept { return cells_axis_; }

  std::uint64_t size() const noexcept { return array_.shape()[0]; }
  std::uint64_t chunk_cells() const noexcept { return array_.read_chunk_elements(); }

  // Spec §5.1. `cell` is a global index, 0 ≤ cell < size() (UsageError naming the range
  // otherwise; negative values never wrap). Absent or empty → 0 rows.
  RaggedCell read_cell(std::int64_t cell) const;
  // The range rule of read_cell for an unsigned index (any u64 a command line can name):
  // UsageError `<path>: cell index N out of range: …` unless cell < size().
  void check_cell_index(std::uint64_t cell) const;
  // Rows of one payload (FormatError naming the cell when the length is not a multiple of the
  // row size).
  std::uint64_t rows_of(std::span<const std::byte> payload, std::uint64_t cell) const;

 private:
  zarr::Array array_;
  Element element_;
  Weights weights_ = Weights::Counts;
  std::optional<codec::json::Json> gain_;
  std::optional<std::string> locations_, times_;
  std::optional<Declaration> located_, temporal_;
  bool cells_axis_ = true;
};

// The element dtype of a numpy dtype name or typestr ("float32", "<f4", "|u1"); nullopt when
// tessera has no such element (a '>' typestr is refused by the gate, not here).
std::optional<DType> element_dtype(std::string_view name) noexcept;

}  // namespace tessera::ragged
