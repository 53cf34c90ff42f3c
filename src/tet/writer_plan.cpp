// Dataset validation for writers (spec tet.md §1.10), the per-dataset write plan, and cutting
// chunk-row slabs into clipped tiles (§1.5).
#include "writer_plan.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "tessera/codec/json.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/writer.hpp"

namespace tessera::tet {
namespace {

std::string bracketed(std::span<const std::uint64_t> v) { return "[" + join_coords(v, ", ") + "]"; }

}  // namespace

namespace detail {

std::string spec_prefix(std::string_view name) {
  // Names longer than the limit are shortened so the message stays readable.
  constexpr std::size_t kShown = 40;
  std::string out = "dataset ";
  codec::json::append_quoted(out, name.substr(0, kShown));
  return out + (name.size() > kShown ? "…: " : ": ");
}

std::uint64_t DatasetPlan::row_extent(std::uint64_t row) const noexcept {
  const std::uint64_t begin = row * geometry.chunk_shape[0];
  return std::min(begin + geometry.chunk_shape[0], geometry.shape[0]) - begin;
}

RowTile row_tile(const DatasetPlan& plan, std::uint64_t row, std::uint64_t t) {
  const Dataset& g = plan.geometry;
  const std::size_t nd = g.ndim();
  RowTile tile;
  tile.coords[0] = row;
  for (std::size_t d = nd; d-- > 1;) {
    tile.coords[d] = t % g.grid[d];
    t /= g.grid[d];
  }
  g.tile_extent({tile.coords.data(), nd}, {tile.origin.data(), nd}, {tile.extent.data(), nd});
  tile.origin[0] = 0;  // the slab starts at the row's first index
  tile.bytes = g.element_size();
  for (std::size_t d = 0; d < nd; ++d) tile.bytes *= tile.extent[d];
  return tile;
}

DatasetPlan make_plan(const DatasetRecord& record, DType dtype, std::uint32_t id) {
  DatasetPlan p;
  p.record = record;
  Dataset& g = p.geometry;
  g.id = id;
  g.name = record.name;
  g.dtype = dtype;
  g.shape = record.shape;
  g.chunk_shape = record.chunk_shape;
  g.element_count = 1;
  for (std::size_t d = 0; d < record.ndim(); ++d) {
    g.grid.push_back(record.shape[d] / record.chunk_shape[d] + (record.shape[d] % record.chunk_shape[d] != 0));
    g.element_count *= record.shape[d];
    if (d > 0) {
      p.row_tiles *= g.grid.back();
      p.row_elements *= record.shape[d];
    }
  }
  g.logical_bytes = g.element_count * g.element_size();
  return p;
}

void gather_tile(const std::byte* slab, std::span<const std::uint64_t> slab_shape,
                 std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent, std::size_t es,
                 std::byte* out) {
  const std::size_t nd = slab_shape.size();
  std::array<std::uint64_t, kMaxRank> stride{}, idx{};
  stride[nd - 1] = 1;
  for (std::size_t d = nd - 1; d-- > 0;) stride[d] = stride[d + 1] * slab_shape[d + 1];
  // Contiguous runs along the last axis; the outer axes advance like an odometer.
  const std::size_t run = checked_size(extent[nd - 1] * es);
  while (true) {
    std::uint64_t off = origin[nd - 1];
    for (std::size_t d = 0; d + 1 < nd; ++d) off += (origin[d] + idx[d]) * stride[d];
    std::memcpy(out, slab + off * es, run);
    out += run;
    std::size_t d = nd - 1;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace detail

void validate_dataset_spec(const DatasetSpec& spec) {
  const std::string prefix = detail::spec_prefix(spec.name);
  if (spec.name.empty()) throw UsageError("dataset name must not be empty", {}, "dataset directory");
  if (spec.name.size() > MetadataLimits::kStringBytes)
    throw LimitError(prefix + "name is " + std::to_string(spec.name.size()) + " bytes (limit 1024)", {},
                     "dataset directory");
  if (!is_valid_utf8(spec.name)) throw UsageError(prefix + "name is not valid UTF-8", {}, "dataset directory");
  const std::size_t nd = spec.shape.size();
  if (nd < 1 || nd > kMaxRank)
    throw UsageError(prefix + "ndim " + std::to_string(nd) + " out of range (1..8)", {}, "dataset directory");
  if (spec.chunk_shape.size() != nd)
    throw UsageError(prefix + "chunk_shape has " + std::to_string(spec.chunk_shape.size()) + " axes but shape has " +
                         std::to_string(nd),
                     {}, "dataset directory");
  for (std::size_t d = 0; d < nd; ++d)
    if (spec.shape[d] == 0 || spec.chunk_shape[d] == 0)
      throw UsageError(
          prefix + "zero extent in shape " + bracketed(spec.shape) + " or chunk_shape " + bracketed(spec.chunk_shape),
          {}, "dataset directory");
  try {
    (void)tag_from_dtype(spec.dtype);
  } catch (const UnsupportedError& e) {
    throw UsageError(prefix + e.what(), {}, "dataset directory");
  }
  std::optional<std::uint64_t> bytes = dtype_size(spec.dtype);
  for (auto extent : spec.shape)
    if (bytes) bytes = mul_u64(*bytes, extent);
  if (!bytes)
    throw LimitError(prefix + "logical tensor byte length overflow (shape " + bracketed(spec.shape) + ")", {},
                     "dataset directory");
  if (!codec_of_tag(static_cast<std::uint32_t>(spec.codec)))
    throw UsageError(prefix + "unsupported codec " + std::to_string(static_cast<std::uint32_t>(spec.codec)) +
                         " (supported: " + codec_tags_text() + ")",
                     {}, "chunk index");
  if (spec.codec == Codec::Zstd && (spec.zstd_level < kMinZstdLevel || spec.zstd_level > kMaxZstdLevel))
    throw UsageError(prefix + "zstd level " + std::to_string(spec.zstd_level) + " out of range (" +
                         std::to_string(kMinZstdLevel) + ".." + std::to_string(kMaxZstdLevel) + ")",
                     {}, "chunk index");
}

}  // namespace tessera::tet
