// `tessera tet convert` (spec tet.md §6.6): plans one `.tet` dataset per selected source array
// and streams its tiles, in index order, through TetWriter::append_tiles in bounded units
// (tile_pieces: whole source chunks, or slabs of a whole-array tile that is not one). The pieces
// of a unit are read by up to `jobs` threads of a oneTBB arena straight into the unit's buffer,
// converted to `.tet` element types on the way; the unit is then written while the next one is
// read. Memory stays at two units (by default 2 MiB per job, 4–64 MiB, and at least one source
// chunk) plus one piece of stored elements per thread, however large a single tile is. The
// footer carries the `convert` history row, `metadata.file` and the imported attrs, dimension
// names and labels; TetWriter commits the file atomically.
#include "tessera/interop/tet_convert.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "convert_values.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/civil_date.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/version.hpp"
#include "tile_pieces.hpp"

namespace tessera::interop {
namespace {

// The default unit: 2 MiB per job, 4 MiB at least and 64 MiB at most. Small units are faster as
// well as smaller: the unit just read is still in the CPU's cache when it is written (two are in
// flight), where a 64 MiB unit goes out to memory and back (docs/performance.md, tet-convert).
constexpr std::uint64_t kUnitBytesPerJob = std::uint64_t{2} << 20;
constexpr std::uint64_t kMinDefaultUnitBytes = std::uint64_t{4} << 20;
constexpr std::uint64_t kMaxDefaultUnitBytes = std::uint64_t{64} << 20;
// A tile that is not a source chunk is read in pieces of at most this many bytes, and of at most
// a job's share of a unit, so every job has a piece of it to read.
constexpr std::uint64_t kPieceBytes = std::uint64_t{8} << 20;

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

// The bound on one unit of output (a group of tiles or a part of one tile): the option, else the
// environment variable when it is a positive decimal number, else the default for `jobs` threads.
std::uint64_t resolve_unit_bytes(std::uint64_t requested, int jobs) {
  if (requested != 0) return requested;
  if (const char* env = std::getenv("TESSERA_TET_CONVERT_UNIT_BYTES"); env != nullptr && *env >= '0' && *env <= '9') {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end == '\0' && v > 0) return v;
  }
  return std::clamp(kUnitBytesPerJob * static_cast<std::uint64_t>(jobs), kMinDefaultUnitBytes, kMaxDefaultUnitBytes);
}

// Reads the pieces of units into buffers, in parallel on the arena's threads, converting
// elements to the `.tet` type on the way.
class UnitReader {
 public:
  UnitReader(const ArraySource& source, std::size_t index, DType target, bool keep_fill)
      : source_(source),
        index_(index),
        array_(as_converted(source.arrays()[index], keep_fill)),
        stored_size_(dtype_size(array_.stored)),
        target_size_(dtype_size(target)),
        convert_(detail::needs_conversion(array_)) {}

  void read(const detail::Unit& unit, std::span<std::byte> buffer) {
    const std::size_t nd = array_.shape.size();
    tbb::parallel_for(std::size_t{0}, unit.pieces.size(), [&](std::size_t i) {
      const detail::Piece& p = unit.pieces[i];
      const std::span<const std::uint64_t> origin{p.origin.data(), nd}, extent{p.extent.data(), nd};
      const std::span<std::byte> dst = buffer.subspan(checked_size(p.offset), checked_size(p.elements * target_size_));
      if (!convert_) {
        source_.read(index_, origin, extent, dst);  // straight into place
        return;
      }
      std::vector<std::byte>& stored = scratch_.local();
      stored.resize(checked_size(p.elements * stored_size_));
      source_.read(index_, origin, extent, stored);
      detail::convert_values(array_, source_.path(), stored, dst);
    });
  }

 private:
  // The array as this conversion treats it: without its missing values when they are kept.
  static SourceArray as_converted(const SourceArray& array, bool keep_fill) {
    SourceArray out = array;
    if (keep_fill) out.missing.reset();
    return out;
  }

  const ArraySource& source_;
  std::size_t index_;
  SourceArray array_;
  std::size_t stored_size_, target_size_;
  bool convert_;
  tbb::enumerable_thread_specific<std::vector<std::byte>> scratch_;  // stored elements, per worker
};

// A buffer that grows without zero-filling (every byte is read into before it is written out).
class UnitBuffer {
 public:
  std::span<std::byte> resize(std::uint64_t n) {
    const std::size_t size = checked_size(n);
    if (size > capacity_) {
      data_.reset();
      data_.reset(new std::byte[size]);
      capacity_ = size;
    }
    return {data_.get(), size};
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t capacity_ = 0;
};

// Every dataset's units in order: unit k is read (its pieces in parallel) while unit k − 1 is
// being written, so reading and writing overlap; at most two units are held.
void stream_datasets(const ArraySource& source, const std::vector<std::size_t>& selected,
                     const std::vector<ConvertPlan>& plans, tet::TetWriter& writer, const ConvertOptions& options) {
  const auto& arrays = source.arrays();
  const int jobs = resolve_jobs(options.jobs);
  const std::uint64_t unit_bytes = resolve_unit_bytes(options.unit_bytes, jobs);
  const std::uint64_t piece_bytes =
      std::max<std::uint64_t>(1, std::min(kPieceBytes, unit_bytes / static_cast<std::uint64_t>(jobs)));
  struct Slot {
    UnitBuffer buffer;
    std::span<std::byte> bytes;
    detail::Unit unit;
    std::uint32_t id = 0;
  };
  std::array<Slot, 2> slots;
  ConvertProgress progress{0, writer.chunk_count(), {}};
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::task_group writing;
    const Slot* pending = nullptr;  // the unit being written
    auto finish_pending = [&] {
      writing.wait();
      if (pending == nullptr) return;
      progress.chunks_done += pending->unit.tiles_completed;
      progress.dataset = arrays[selected[pending->id]].name;
      pending = nullptr;
      if (options.progress) options.progress(progress);
    };
    try {
      std::size_t k = 0;
      for (std::size_t i = 0; i < selected.size(); ++i) {
        const SourceArray& array = arrays[selected[i]];
        const DType target = plans[i].dtype;
        UnitReader reader(source, selected[i], target, options.keep_fill);
        detail::TilePieces pieces(array, plans[i].chunk_shape, std::max(dtype_size(array.stored), dtype_size(target)),
                                  dtype_size(target), unit_bytes, piece_bytes);
        for (;; ++k) {
          Slot& slot = slots[k % 2];  // never the pending one
          if (!pieces.next(slot.unit)) break;
          slot.id = static_cast<std::uint32_t>(i);
          slot.bytes = slot.buffer.resize(slot.unit.bytes);
          reader.read(slot.unit, slot.bytes);
          finish_pending();
          pending = &slot;
          writing.run([&writer, &slot] { writer.append_tiles(slot.id, slot.bytes); });
        }
      }
      finish_pending();
    } catch (...) {
      try {
        writing.wait();  // the write in flight still uses its slot
      } catch (...) {
      }
      throw;
    }
  });
}

// The indices of the arrays `options` selects, in the input's order. UsageError naming the
// names the input does not have, and when nothing is left.
std::vector<std::size_t> select_arrays(const ArraySource& source, const ConvertOptions& options) {
  const auto& arrays = source.arrays();
  std::vector<std::string> unknown;
  for (const auto* names : {&options.only, &options.exclude})
    for (const auto& name : *names)
      if (std::none_of(arrays.begin(), arrays.end(), [&](const SourceArray& a) { return a.name == name; }))
        unknown.push_back(name);
  if (!unknown.empty()) {
    std::string have;
    for (const auto& a : arrays) have += (have.empty() ? "" : ", ") + a.name;
    std::string missing;
    for (const auto& n : unknown) missing += (missing.empty() ? "" : ", ") + n;
    throw UsageError(source.path() + ": no array named " + missing + " (it has " + have + ")", source.path());
  }
  const auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<std::size_t> selected;
  for (std::size_t i = 0; i < arrays.size(); ++i)
    if ((options.only.empty() || listed(options.only, arrays[i].name)) && !listed(options.exclude, arrays[i].name))
      selected.push_back(i);
  if (selected.empty())
    throw UsageError(source.path() + ": --var and --exclude leave no array to convert", source.path());
  return selected;
}

// plan_dataset with the chunk shape `options` asks for, if any. UsageError for a shape of
// another rank or with a zero extent.
ConvertPlan plan_with_options(const SourceArray& array, const ConvertOptions& options) {
  ConvertPlan plan = plan_dataset(array);
  const auto named = options.chunks.find(array.name);
  const std::vector<std::uint64_t>* chunks = named != options.chunks.end() ? &named->second : nullptr;
  if (!chunks && !options.default_chunks.empty() && options.default_chunks.size() == array.shape.size())
    chunks = &options.default_chunks;
  if (!chunks) return plan;
  if (chunks->size() != array.shape.size())
    throw UsageError(array.name + ": --chunks gives " + std::to_string(chunks->size()) + " extents for an array of " +
                     std::to_string(array.shape.size()) + " axes");
  for (std::size_t d = 0; d < chunks->size(); ++d) {
    if ((*chunks)[d] == 0) throw UsageError(array.name + ": --chunks extents must be at least 1");
    plan.chunk_shape[d] = std::min((*chunks)[d], array.shape[d]);
  }
  return plan;
}

// The footer extension of a convert: the source's typed global and per-array attributes, each
// array's source element type, and which CF encoding attributes the stored values now carry
// (packing is always decoded; float fill values are made NaN unless kept). A `.tet` input's
// earlier encoding stays recorded.
tet::FooterExtension footer_extension(const ArraySource& source, const std::vector<std::size_t>& selected,
                                      bool keep_fill) {
  tet::FooterExtension ext;
  ext.attrs = source.global_attributes();
  for (const std::size_t i : selected) {
    const SourceArray& array = source.arrays()[i];
    tet::DatasetExtension d = array.extension;
    if (d.source_dtype.empty()) d.source_dtype = std::string(dtype_info(array.stored).zarr_name);  // numpy names
    auto apply = [&](std::string_view name) {
      const bool present = std::any_of(d.attrs.begin(), d.attrs.end(), [&](const auto& a) { return a.first == name; });
      if (present && std::find(d.applied.begin(), d.applied.end(), name) == d.applied.end())
        d.applied.emplace_back(name);
    };
    if (array.cf) {
      for (const auto name : tet::kCfEncodingAttributes) apply(name);
    } else if (array.missing && !keep_fill) {
      apply("_FillValue");
      apply("missing_value");
    }
    ext.datasets.emplace(array.name, std::move(d));
  }
  return ext;
}

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
    case InputFormat::Tet: source = open_tet_source(input); break;
  }
  return convert_to_tet(*source, format, output, options);
}

ConvertReport convert_to_tet(const ArraySource& source, InputFormat format, const std::string& output,
                             const ConvertOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const auto& arrays = source.arrays();
  if (arrays.empty()) throw UsageError("no supported numeric datasets found in " + source.path(), source.path());

  const std::vector<std::size_t> selected = select_arrays(source, options);
  std::vector<ConvertPlan> plans;
  plans.reserve(selected.size());
  for (const std::size_t i : selected) plans.push_back(plan_with_options(arrays[i], options));

  const std::string at = options.at.empty() ? std::to_string(output_time()) : options.at;
  tet::WriterOptions writer_options;
  writer_options.history = source.history();
  writer_options.history.push_back({"convert", std::string(history_source(format)), at, {}, {}});
  writer_options.metadata.file = tet::FileMetadata{"tessera tet convert", kVersion, at};
  for (const std::size_t i : selected) {
    // MetadataLimitsV1 allows 256 dataset entries; later datasets keep their data, not their attrs.
    if (writer_options.metadata.datasets.size() >= tet::MetadataLimits::kDatasets) break;
    tet::DatasetMetadata md = dataset_metadata(arrays[i]);
    if (!empty_metadata(md)) writer_options.metadata.datasets.emplace(arrays[i].name, std::move(md));
  }
  writer_options.extension = footer_extension(source, selected, options.keep_fill);
  // Raw tiles have nothing to compress. zstd tiles are compressed in the convert's own arena
  // (threads 0: the caller's), not in an arena of the writer's: a thread waiting in one arena
  // never runs another arena's tasks, so the thread that has read the next unit and waits for the
  // write would idle while one thread compressed the unit alone.
  writer_options.threads = options.codec == tet::Codec::Raw ? 1 : 0;

  tet::TetWriter writer(output, std::move(writer_options));
  for (std::size_t k = 0; k < selected.size(); ++k) {
    const SourceArray& array = arrays[selected[k]];
    writer.add_dataset({array.name, plans[k].dtype, array.shape, plans[k].chunk_shape, options.codec, options.level});
  }

  stream_datasets(source, selected, plans, writer, options);
  writer.commit();

  ConvertReport report;
  report.input = source.path();
  report.output = output;
  for (const std::size_t i : selected) report.datasets.push_back({arrays[i].name, arrays[i].shape});
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
  if (report.upload) {
    w.key("upload").begin_object();
    w.key("objects").value(report.upload->objects);
    w.key("bytes").value(report.upload->bytes);
    w.key("seconds").value(report.upload->seconds);
    w.end_object();
  }
  w.end_object();
  return out;
}

}  // namespace tessera::interop
