// `tessera tet convert` (spec tet.md §6.6): plans one raw `.tet` dataset per source array and
// streams them through TetWriter one chunk row at a time. The tiles of a row are read by up to
// `jobs` workers (a oneTBB arena), converted to `.tet` element types and scattered into the row's
// slab, so memory stays at one chunk row plus one tile per worker. A row that is a single tile
// (unchunked sources, CF-packed variables) is read as blocks of rows instead, so those reads run
// in parallel too. The footer carries the `convert` history row, `metadata.file` and the
// imported attrs, dimension names and labels; TetWriter commits the file atomically.
#include "tessera/interop/tet_convert.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>

#include "convert_values.hpp"
#include "nd_copy.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/version.hpp"

namespace tessera::interop {
namespace {

// A single-tile row is read in blocks of about this many bytes (whole source chunks along axis 0
// when the source is chunked, so no chunk is decoded twice).
constexpr std::uint64_t kBlockBytes = std::uint64_t{8} << 20;

std::string unix_seconds_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count());
}

// Workers beyond the cores TBB may use would only be refused (with a warning on stderr), so the
// arena is capped there; `jobs` 0 means all of them.
int resolve_jobs(unsigned jobs) {
  const int available = std::max(1, tbb::info::default_concurrency());
  if (jobs == 0) return std::min(available, static_cast<int>(kMaxConvertJobs));
  return std::min({static_cast<int>(std::min(jobs, kMaxConvertJobs)), available});
}

// The footer entry of one dataset: the source's metadata plus `source_dtype` for int8 (TD-15),
// which displaces the last other attribute if the dataset already has 64.
tet::DatasetMetadata dataset_metadata(const SourceArray& array) {
  tet::DatasetMetadata md = array.metadata;
  if (array.stored == DType::I8 && !md.attrs.contains("source_dtype")) {
    if (md.attrs.size() >= tet::MetadataLimits::kAttrsPerDataset) md.attrs.erase(std::prev(md.attrs.end()));
    md.attrs["source_dtype"] = "int8";
  }
  return md;
}

bool empty_metadata(const tet::DatasetMetadata& md) { return md.attrs.empty() && !md.dim_names && md.coords.empty(); }

struct Geometry {
  std::vector<std::uint64_t> shape, chunk;
  std::uint64_t rows = 0;       // chunk rows (grid extent along axis 0)
  std::uint64_t row_tiles = 1;  // tiles per chunk row
};

Geometry geometry_of(const SourceArray& array, const ConvertPlan& plan) {
  Geometry g{array.shape, plan.chunk_shape};
  g.rows = (g.shape[0] + g.chunk[0] - 1) / g.chunk[0];
  for (std::size_t d = 1; d < g.shape.size(); ++d) g.row_tiles *= (g.shape[d] + g.chunk[d] - 1) / g.chunk[d];
  return g;
}

class RowReader {
 public:
  RowReader(const ArraySource& source, std::size_t index, const ConvertPlan& plan, tbb::task_arena& arena)
      : source_(source),
        index_(index),
        array_(source.arrays()[index]),
        g_(geometry_of(array_, plan)),
        stored_size_(dtype_size(array_.stored)),
        target_size_(dtype_size(plan.dtype)),
        arena_(arena) {}

  const Geometry& geometry() const noexcept { return g_; }

  // Fills `slab` with chunk row `row` (logical row-major, `.tet` element type).
  void read_row(std::uint64_t row, std::span<std::byte> slab) {
    const std::size_t nd = g_.shape.size();
    std::vector<std::uint64_t> slab_shape = g_.shape;
    const std::uint64_t first = row * g_.chunk[0];
    slab_shape[0] = std::min(g_.chunk[0], g_.shape[0] - first);
    if (g_.row_tiles == 1) {
      read_blocks(first, slab_shape, slab);
      return;
    }
    arena_.execute([&] {
      tbb::parallel_for(std::uint64_t{0}, g_.row_tiles, [&](std::uint64_t t) {
        std::vector<std::uint64_t> origin(nd), extent(nd), in_slab(nd, 0);
        origin[0] = first;
        extent[0] = slab_shape[0];
        for (std::size_t d = nd; d-- > 1;) {
          const std::uint64_t grid = (g_.shape[d] + g_.chunk[d] - 1) / g_.chunk[d];
          const std::uint64_t c = t % grid;
          t /= grid;
          origin[d] = in_slab[d] = c * g_.chunk[d];
          extent[d] = std::min(g_.chunk[d], g_.shape[d] - origin[d]);
        }
        std::uint64_t count = 1;
        for (const auto e : extent) count *= e;
        auto& [stored, converted] = scratch_.local();
        stored.resize(checked_size(count * stored_size_));
        source_.read(index_, origin, extent, stored);
        const std::byte* tile = stored.data();
        if (needs_conversion()) {
          converted.resize(checked_size(count * target_size_));
          detail::convert_values(array_, source_.path(), stored, converted);
          tile = converted.data();
        }
        detail::copy_box(tile, extent, std::vector<std::uint64_t>(nd, 0), slab.data(), slab_shape, in_slab, extent,
                         target_size_);
      });
    });
  }

 private:
  bool needs_conversion() const { return detail::needs_conversion(array_); }

  // The row is one tile spanning the trailing axes: read it as blocks of whole rows along axis 0,
  // in parallel, straight into the slab when no conversion is needed.
  void read_blocks(std::uint64_t first, const std::vector<std::uint64_t>& slab_shape, std::span<std::byte> slab) {
    const std::uint64_t row_elements = g_.shape.size() == 1 ? 1 : [&] {
      std::uint64_t n = 1;
      for (std::size_t d = 1; d < g_.shape.size(); ++d) n *= g_.shape[d];
      return n;
    }();
    const std::uint64_t row_bytes = std::max<std::uint64_t>(1, row_elements * stored_size_);
    std::uint64_t block = std::max<std::uint64_t>(1, kBlockBytes / row_bytes);
    if (!array_.chunk_shape.empty() && array_.chunk_shape[0] > 0) {
      const std::uint64_t c0 = array_.chunk_shape[0];
      block = std::max<std::uint64_t>(c0, block / c0 * c0);  // whole source chunks along axis 0
    }
    const std::uint64_t blocks = (slab_shape[0] + block - 1) / block;
    arena_.execute([&] {
      tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
        std::vector<std::uint64_t> origin(g_.shape.size(), 0), extent = slab_shape;
        origin[0] = first + b * block;
        extent[0] = std::min(block, slab_shape[0] - b * block);
        const std::uint64_t count = extent[0] * row_elements;
        std::span<std::byte> dst = slab.subspan(checked_size(b * block * row_elements * target_size_),
                                                checked_size(count * target_size_));
        if (!needs_conversion()) {
          source_.read(index_, origin, extent, dst);
          return;
        }
        auto& stored = scratch_.local().first;
        stored.resize(checked_size(count * stored_size_));
        source_.read(index_, origin, extent, stored);
        detail::convert_values(array_, source_.path(), stored, dst);
      });
    });
  }

  const ArraySource& source_;
  std::size_t index_;
  const SourceArray& array_;
  Geometry g_;
  std::size_t stored_size_, target_size_;
  tbb::task_arena& arena_;
  // Per-worker buffers (stored elements, converted elements), freed with the reader.
  tbb::enumerable_thread_specific<std::pair<std::vector<std::byte>, std::vector<std::byte>>> scratch_;
};

}  // namespace

ConvertPlan plan_dataset(const SourceArray& array) {
  ConvertPlan plan;
  plan.dtype = detail::target_dtype(array);
  // Unchunked sources and CF-packed variables become one whole-array tile; otherwise the source
  // chunk shape capped at the extent (at least 1).
  if (array.cf || array.chunk_shape.size() != array.shape.size()) {
    plan.chunk_shape = array.shape;
  } else {
    for (std::size_t d = 0; d < array.shape.size(); ++d)
      plan.chunk_shape.push_back(std::max<std::uint64_t>(1, std::min(array.chunk_shape[d], array.shape[d])));
  }
  return plan;
}

ConvertReport convert_to_tet(const std::string& input, const std::string& output, const ConvertOptions& options) {
  const InputFormat format = detect_convert_input(input);
  std::unique_ptr<ArraySource> source;
  switch (format) {
    case InputFormat::Hdf5: source = open_hdf5_source(input); break;
    case InputFormat::NetCdf: source = open_netcdf_source(input); break;
    case InputFormat::Zarr: source = open_zarr_source(input); break;
  }
  return convert_to_tet(*source, format, output, options);
}

ConvertReport convert_to_tet(const ArraySource& source, InputFormat format, const std::string& output,
                             const ConvertOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const auto& arrays = source.arrays();
  if (arrays.empty()) throw UsageError("no supported numeric datasets found in " + source.path(), source.path());

  const std::string at = options.at.empty() ? unix_seconds_now() : options.at;
  tet::WriterOptions writer_options;
  writer_options.history.push_back({"convert", std::string(history_source(format)), at, {}, {}});
  writer_options.metadata.file = tet::FileMetadata{"tessera tet convert", kVersion, at};
  for (const SourceArray& array : arrays) {
    // MetadataLimitsV1 allows 256 dataset entries; later datasets keep their data, not their attrs.
    if (writer_options.metadata.datasets.size() >= tet::MetadataLimits::kDatasets) break;
    tet::DatasetMetadata md = dataset_metadata(array);
    if (!empty_metadata(md)) writer_options.metadata.datasets.emplace(array.name, std::move(md));
  }
  writer_options.threads = 1;  // raw tiles: nothing to compress

  tet::TetWriter writer(output, std::move(writer_options));
  std::vector<ConvertPlan> plans;
  std::uint64_t chunks_total = 0;
  for (const SourceArray& array : arrays) {
    plans.push_back(plan_dataset(array));
    writer.add_dataset({array.name, plans.back().dtype, array.shape, plans.back().chunk_shape, tet::Codec::Raw, 3});
  }
  chunks_total = writer.chunk_count();

  tbb::task_arena arena(resolve_jobs(options.jobs));
  ConvertProgress progress{0, chunks_total, {}};
  std::vector<std::byte> slab;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto id = static_cast<std::uint32_t>(i);
    RowReader reader(source, i, plans[i], arena);
    progress.dataset = arrays[i].name;
    for (std::uint64_t row = 0; row < reader.geometry().rows; ++row) {
      slab.resize(checked_size(writer.chunk_row_bytes(id, row)));
      reader.read_row(row, slab);
      writer.write_chunk_row(id, row, slab);
      progress.chunks_done += reader.geometry().row_tiles;
      if (options.progress) options.progress(progress);
    }
  }
  writer.commit();

  ConvertReport report;
  report.input = source.path();
  report.output = output;
  for (const SourceArray& array : arrays) report.datasets.push_back({array.name, array.shape});
  report.history = {"convert", std::string(history_source(format)), at, {}, {}};
  report.elapsed_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

std::string report_json(const ConvertReport& report) {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::tet_pretty());
  w.begin_object();
  w.key("input").value(report.input);
  w.key("output").value(report.output);
  w.key("dataset_count").value(static_cast<std::uint64_t>(report.datasets.size()));
  w.key("dataset_names").begin_array();
  for (const auto& ds : report.datasets) w.value(ds.name);
  w.end_array();
  w.key("datasets").begin_array();
  for (const auto& ds : report.datasets) {
    w.begin_object();
    w.key("name").value(ds.name);
    w.key("ndim").value(static_cast<std::uint64_t>(ds.dims.size()));
    w.key("dims").begin_array();
    for (const auto d : ds.dims) w.value(d);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("history").begin_array();
  w.begin_object();
  w.key("op").value(report.history.op);
  w.key("source").value(report.history.source);
  w.key("at").value(report.history.at);
  w.end_object();
  w.end_array();
  w.key("elapsed_secs").value(report.elapsed_secs);
  w.end_object();
  return out;
}

}  // namespace tessera::interop
