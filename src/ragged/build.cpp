// `ragged build` (spec §6.1, §8.4): inputs → geocoded rows spilled per shard → one committed leaf
// per shard, with bounded memory and parallel geocoding and chunk aggregation.
#include "tessera/ragged/build.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <span>

#include "build_input.hpp"
#include "cell_stats.hpp"
#include "row_classes.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/os_error.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/file_lock.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/hive_writer.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged::build {

using codec::json::Json;
namespace fs = std::filesystem;

TimeFormat parse_time_format(std::string_view name) {
  if (name == "iso") return TimeFormat::Iso;
  if (name == "unix-ns") return TimeFormat::UnixNs;
  if (name == "gps-ns") return TimeFormat::GpsNs;
  if (name == "toc-ns") return TimeFormat::TocNs;
  throw UsageError("time format '" + std::string(name) + "': expected iso, unix-ns, gps-ns or toc-ns");
}

std::string semantic_hash(const LeafSpec& leaf) {
  Json fields = Json::array();
  for (const FieldSpec& f : leaf.fields) {
    Json j = {{"name", f.name},
              {"element", {{"dtype", "float32"}, {"shape", {-1, 2}}}},
              {"weights", f.flux ? "flux" : "counts"},
              {"located", f.located},
              {"timed", f.timed},
              {"delta", f.delta}};
    if (f.flux && f.gain) j["gain"] = *f.gain;
    if (!f.where.empty()) j["where"] = f.where;  // absent for every-row fields: their hashes are unchanged
    fields.push_back(std::move(j));
  }
  Json doc = {{"writer", "tessera-ragged/1"},
              {"cell_order", leaf.geometry.cell_order},
              {"chunk_order", leaf.geometry.chunk_order},
              {"shard_order", leaf.geometry.shard_order},
              {"latitude", geo::dggs_token(leaf.latitude)},
              {"fields", fields}};
  if (leaf.stats.enabled) doc["stats"] = {{"prefix", leaf.stats.prefix}, {"sigma", leaf.stats.sigma}};
  if (leaf.per_cell_time) doc["per_cell_time"] = *leaf.per_cell_time;
  if (leaf.composition)
    doc["composition"] = {{"name", leaf.composition->name},
                          {"of", leaf.composition->of},
                          {"threshold", leaf.composition->threshold},
                          {"surfaces", leaf.composition->surfaces}};
  return codec::sha256_hex(codec::as_bytes(codec::json::dump(doc, codec::json::DumpOptions::python_canonical())));
}

namespace {

// One accepted row as spilled: u64 order-29 NESTED id, f64 value, then f64 weight, f64 sigma,
// u64 toc word, u64 class word (row_classes.hpp) when those are read.
struct RecordLayout {
  bool weight = false, sigma = false, time = false, classes = false;
  std::size_t size() const noexcept { return 16 + 8 * (std::size_t{weight} + sigma + time + classes); }
  std::size_t weight_at() const noexcept { return 16; }
  std::size_t sigma_at() const noexcept { return 16 + 8 * std::size_t{weight}; }
  std::size_t time_at() const noexcept { return 16 + 8 * (std::size_t{weight} + sigma); }
  std::size_t classes_at() const noexcept { return 16 + 8 * (std::size_t{weight} + sigma + time); }
};

// Removes the spill directories builds left in `out`: those whose process is gone, or with
// `all` every one (the caller holds the store's build lock exclusively, so no build is running:
// a killed one may not be reaped yet, but it holds no lock).
void remove_stale_spills(const fs::path& out, bool all) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".tessera-build-", 0) != 0 || name == kBuildLockName) continue;
    const long pid = std::strtol(name.c_str() + 15, nullptr, 10);
    if (all || io::writer_is_gone(pid)) fs::remove_all(e.path(), ec);
  }
}

// Per-shard spill files in a hidden working directory of the output store (listings skip it).
class Spill {
 public:
  Spill(const fs::path& out, std::size_t record)
      : dir_(out / (".tessera-build-" + std::to_string(::getpid()))), record_(record) {
    remove_stale_spills(out, false);  // working directories of builds that were killed
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Spill() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void add(std::uint64_t shard, const std::byte* record) {
    auto& buffer = buffers_[shard];
    buffer.insert(buffer.end(), record, record + record_);
    buffered_ += record_;
    if (buffered_ >= kFlushBytes) flush();
  }
  void flush() {
    for (auto& [shard, buffer] : buffers_) {
      if (buffer.empty()) continue;
      append_to_file(file_of(shard), buffer);
      buffer.clear();
      buffer.shrink_to_fit();
    }
    buffered_ = 0;
  }
  std::vector<std::uint64_t> shards() const {
    std::vector<std::uint64_t> out;
    for (const auto& [shard, buffer] : buffers_) out.push_back(shard);
    return out;  // std::map: ascending NESTED id = ascending word within the order
  }
  // A shard's records; its file is removed.
  std::vector<std::byte> take(std::uint64_t shard) {
    const fs::path path = file_of(shard);
    const auto source = io::open_file(path.string(), io::OpenMode::Pread);
    std::vector<std::byte> out(checked_size(source->size(), "spill file"));
    source->read_at(0, out);
    fs::remove(path);
    return out;
  }

 private:
  static constexpr std::size_t kFlushBytes = std::size_t{16} << 20;
  // Appends `bytes` to `path` (created when absent). The IoError carries the OS reason, so a
  // full disk says "No space left on device".
  static void append_to_file(const fs::path& path, std::span<const std::byte> bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError("cannot open the spill file: " + errno_text(), path.string());
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        ::close(fd);
        throw IoError("cannot write the spill file: " + errno_text(err), path.string());
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw IoError("cannot write the spill file: " + errno_text(), path.string());
  }
  fs::path file_of(std::uint64_t shard) const { return dir_ / (std::to_string(shard) + ".bin"); }
  fs::path dir_;
  std::size_t record_;
  std::map<std::uint64_t, std::vector<std::byte>> buffers_;
  std::size_t buffered_ = 0;
};

enum class Fault : std::uint8_t {
  Ok,
  NonFiniteCoordinate,
  LatitudeOutOfRange,
  NonFiniteValue,
  FillValue,
  OutsideValidRange,
  BadWeight,
  BadSigma,
  BadTime
};

const char* reason_of(Fault f) {
  switch (f) {
    case Fault::NonFiniteCoordinate: return "non_finite_coordinate";
    case Fault::LatitudeOutOfRange: return "latitude_out_of_range";
    case Fault::NonFiniteValue: return "non_finite_value";
    case Fault::FillValue: return "fill_value";
    case Fault::OutsideValidRange: return "outside_valid_range";
    case Fault::BadWeight: return "bad_weight";
    case Fault::BadSigma: return "bad_sigma";
    case Fault::BadTime: return "bad_time";
    case Fault::Ok: break;
  }
  return "ok";
}

// The shortest text that reads back as `v`.
std::string number_text(double v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::string(text, end);
}

// FillValue or OutsideValidRange for a finite value the options drop, else Ok.
Fault value_fault(const BuildOptions& o, double v) {
  for (const double drop : o.drop_values)
    if (v == drop || v == static_cast<double>(static_cast<float>(drop))) return Fault::FillValue;
  if ((o.valid_min && v < *o.valid_min) || (o.valid_max && v > *o.valid_max)) return Fault::OutsideValidRange;
  return Fault::Ok;
}

std::string describe(Fault f, const detail::RowBlock& b, std::size_t i) {
  switch (f) {
    case Fault::NonFiniteCoordinate:
    case Fault::LatitudeOutOfRange:
      return "coordinates (" + std::to_string(b.lat[i]) + ", " + std::to_string(b.lon[i]) + ") are " +
             (f == Fault::NonFiniteCoordinate ? "not finite" : "outside latitude [-90, 90]");
    case Fault::NonFiniteValue: return "the value is missing or not finite";
    case Fault::FillValue: return "the value " + number_text(b.value[i]) + " is a --drop-value (a fill value)";
    case Fault::OutsideValidRange: return "the value " + number_text(b.value[i]) + " lies outside --valid-range";
    case Fault::BadWeight: return "the weight is not a positive finite number";
    case Fault::BadSigma: return "sigma is not a positive finite number";
    case Fault::BadTime: return "the time does not parse or lies outside the toc range";
    case Fault::Ok: break;
  }
  return "";
}

// The elements of `all` (one per row of a cell) whose row's class word puts it in field `f`, into
// `part`; an empty column (not read) stays empty.
template <typename T>
void select_rows(std::span<const T> all, std::span<const std::uint64_t> words, std::size_t f, std::vector<T>& part) {
  part.clear();
  if (all.empty()) return;
  for (std::size_t i = 0; i < words.size(); ++i)
    if (detail::RowClasses::in_field(words[i], f)) part.push_back(all[i]);
}

// The cells of one read chunk from the shard's rows, sorted by cell (`order`, `offsets`).
ChunkData aggregate_chunk(const LeafSpec& spec, std::uint64_t chunk, const std::vector<std::byte>& records,
                          const RecordLayout& layout, const std::vector<std::uint32_t>& order,
                          const std::vector<std::uint32_t>& offsets) {
  ChunkData d = make_chunk(spec, chunk);
  const std::vector<Stat> stats = spec.stats.stats();
  const std::uint64_t c = spec.geometry.chunk_cells();
  std::vector<double> values, weights, sigmas, scratch;
  std::vector<std::uint64_t> locations, times, words;
  // A stratified field's rows of the cell.
  std::vector<double> part_values, part_weights;
  std::vector<std::uint64_t> part_locations, part_times;
  std::vector<float> stat_values(stats.size());
  const bool located =
      std::any_of(spec.fields.begin(), spec.fields.end(), [](const FieldSpec& f) { return f.located; });
  const bool need_times = spec.any_timed() || spec.per_cell_time.has_value();
  std::size_t composition_of = 0;
  if (spec.composition)
    while (spec.fields[composition_of].name != spec.composition->of) ++composition_of;  // checked by validate
  for (std::uint64_t i = 0; i < c; ++i) {
    const std::uint64_t cell = chunk * c + i;
    const std::uint32_t begin = offsets[cell], end = offsets[cell + 1];
    if (begin == end) continue;
    values.clear();
    weights.clear();
    sigmas.clear();
    locations.clear();
    times.clear();
    words.clear();
    for (std::uint32_t k = begin; k < end; ++k) {
      const std::byte* r = records.data() + std::size_t{order[k]} * layout.size();
      values.push_back(load_le<double>(r + 8));
      if (layout.weight) weights.push_back(load_le<double>(r + layout.weight_at()));
      if (layout.sigma) sigmas.push_back(load_le<double>(r + layout.sigma_at()));
      if (located) locations.push_back(morton::point_from_nested29(load_le<std::uint64_t>(r)));
      if (need_times) times.push_back(load_le<std::uint64_t>(r + layout.time_at()));
      if (layout.classes) words.push_back(load_le<std::uint64_t>(r + layout.classes_at()));
    }
    d.count[i] = static_cast<std::int32_t>(end - begin);
    for (std::size_t f = 0; f < spec.fields.size(); ++f) {
      const FieldSpec& field = spec.fields[f];
      const auto field_times = [&](const std::vector<std::uint64_t>& t) {
        return field.timed ? std::span<const std::uint64_t>(t) : std::span<const std::uint64_t>();
      };
      const auto field_locations = [&](const std::vector<std::uint64_t>& l) {
        return field.located ? std::span<const std::uint64_t>(l) : std::span<const std::uint64_t>();
      };
      if (field.where.empty()) {
        d.digests[f][i] = tdigest::build(values, field.delta, weights, field_locations(locations), field_times(times));
        continue;
      }
      select_rows<double>(values, words, f, part_values);
      if (part_values.empty()) continue;  // no row of this stratum: the cell stays empty
      select_rows<double>(weights, words, f, part_weights);
      select_rows<std::uint64_t>(locations, words, f, part_locations);
      select_rows<std::uint64_t>(times, words, f, part_times);
      d.digests[f][i] = tdigest::build(part_values, field.delta, part_weights, field_locations(part_locations),
                                       field_times(part_times));
    }
    if (spec.composition) d.composition[i] = detail::cell_composition(words, weights, composition_of);
    if (!stats.empty()) {
      ragged::detail::cell_stats(values, sigmas, stats, stat_values, scratch);
      for (std::size_t s = 0; s < stats.size(); ++s) d.stats[s][i] = stat_values[s];
    }
    if (spec.per_cell_time) {
      std::uint64_t t = times.front();
      for (const std::uint64_t w : times) t = toc::join(t, w);
      d.cell_times[i] = t;
    }
  }
  return d;
}

void check_options(const BuildOptions& o) {
  if (o.inputs.empty()) throw UsageError("ragged build: at least one --input is needed");
  if (o.value_col.empty()) throw UsageError("ragged build: --value-col is required");
  if (o.leaf.fields.empty()) throw UsageError("ragged build: at least one field is built from the value column");
  for (const FieldSpec& f : o.leaf.fields) {
    if (f.flux != o.weight_col.has_value())
      throw UsageError("ragged build: a flux field is built exactly when --weight-col is given");
    if (f.timed && !o.time_col) throw UsageError("ragged build: --timed needs --time-col");
  }
  if (o.leaf.per_cell_time && !o.time_col) throw UsageError("ragged build: --per-cell-time needs --time-col");
  if (o.sigma_col && !o.leaf.stats.sigma) throw UsageError("ragged build: --sigma-col needs --stats");
  for (const double drop : o.drop_values)
    if (!std::isfinite(drop))
      throw UsageError("ragged build: --drop-value must be finite (non-finite values are always dropped)");
  if (o.valid_min && o.valid_max && !(*o.valid_min <= *o.valid_max))
    throw UsageError("ragged build: --valid-range: the minimum " + number_text(*o.valid_min) +
                     " is above the maximum " + number_text(*o.valid_max));
  o.leaf.validate();
  (void)detail::RowClasses(o.leaf);  // every `where` parses, and the fields fit the class words
}

// Merges the shards a build committed into the hive's root coverage MOC (spec §4.6).
void update_coverage(io::Store& store, const LeafSpec& leaf, std::span<const std::uint64_t> shards,
                     const std::map<std::uint64_t, std::uint64_t>& shard_times) {
  std::vector<std::string> timed_fields;
  for (const FieldSpec& f : leaf.fields)
    if (f.timed) timed_fields.push_back(f.name);
  hive::update_root_moc(store, leaf.geometry.shard_order, shards, shard_times, timed_fields, hive::utc_now_iso());
}

}  // namespace

BuildReport run(const std::string& out, BuildOptions o, const ProgressSink& progress) {
  const auto started = std::chrono::steady_clock::now();
  check_options(o);
  o.leaf.granule_count = o.inputs.size();
  o.leaf.semantic_hash = semantic_hash(o.leaf);
  BuildReport report;
  report.semantic_hash = o.leaf.semantic_hash;
  fs::create_directories(out);
  const LeafGeometry& g = o.leaf.geometry;
  if (g.flat && o.leaves_only)
    throw UsageError(
        "ragged build: a flat store has no leaves to build on their own (--leaves-only needs the hive "
        "layout)");
  // One build per store at a time: a second one (another process, with or without --overwrite)
  // is refused at once, naming the first one's pid, instead of both racing over the same leaves.
  // The tasks of one distributed build hold it together; each writes only its own shards' leaves.
  const io::FileLock lock((fs::path(out) / kBuildLockName).string(), "one ragged build per store at a time",
                          io::FileLock::Wait::FailIfHeld, {},
                          o.leaves_only ? io::FileLock::Mode::Shared : io::FileLock::Mode::Exclusive);
  io::DirectoryStore store(out);
  if (g.flat) {
    // A flat store has no leaves to check one by one: without `overwrite`, an existing store is
    // refused as a whole (before anything is read or written).
    if (!o.overwrite && store.exists("zarr.json"))
      throw UsageError(out + ": a store already exists here (use --overwrite to add to it or replace its chunks)");
  }
  const hive::ManifestSpec manifest{o.dataset_name, o.dataset_version, o.leaf.semantic_hash, g.cell_order,
                                    g.shard_order};
  // Refused at once when the store's frozen parameters differ; written only before the first
  // leaf commits (below), so a build that fails before then (a wrong column, a bad row under
  // --strict) leaves no manifest a corrected retry would be checked against.
  if (!g.flat) (void)hive::check_manifest(store, manifest);
  bool manifest_written = g.flat;

  const int threads = o.threads ? static_cast<int>(o.threads) : tbb::task_arena::automatic;
  tbb::task_arena arena(threads);
  const detail::RowClasses classes(o.leaf);
  const detail::Columns columns{o.lat_col,    o.lon_col,   o.value_col,   o.time_col,
                                o.weight_col, o.sigma_col, o.time_format, classes.columns()};
  RecordLayout layout{o.weight_col.has_value(), o.sigma_col.has_value(), o.time_col.has_value(), classes.any()};
  Spill spill(out, layout.size());

  // Pass 1: read, geocode, check, spill.
  std::uint64_t total_rows = 0;
  for (const std::string& input : o.inputs) {
    const auto n = detail::row_count(input, columns);
    total_rows = n && total_rows != UINT64_MAX ? total_rows + *n : UINT64_MAX;
  }
  const int shard_shift = 2 * (morton::kMaxOrder - g.shard_order);
  std::vector<std::uint64_t> ids;
  std::vector<Fault> faults;
  std::vector<std::uint64_t> class_words;
  std::vector<std::byte> record(layout.size());
  {
    const auto consume = [&](detail::RowBlock& b) {
      const std::string& input = o.inputs.at(b.file);
      for (const auto& [reason, rows] : b.dropped) {
        report.rows_read += rows;
        report.rejected[reason] += rows;
      }
      const std::size_t n = b.size();
      ids.resize(n);
      faults.resize(n);
      if (layout.classes) {
        classes.check(b, input);
        class_words.resize(n);
      }
      arena.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 4096), [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i < r.end(); ++i) {
            Fault f = Fault::Ok;
            switch (geo::check_coordinates(b.lat[i], b.lon[i])) {
              case geo::CoordinateFault::NonFinite: f = Fault::NonFiniteCoordinate; break;
              case geo::CoordinateFault::LatitudeOutOfRange: f = Fault::LatitudeOutOfRange; break;
              case geo::CoordinateFault::Ok: break;
            }
            if (f == Fault::Ok && !std::isfinite(b.value[i])) f = Fault::NonFiniteValue;
            if (f == Fault::Ok) f = value_fault(o, b.value[i]);
            if (f == Fault::Ok && layout.weight && !(std::isfinite(b.weight[i]) && b.weight[i] > 0))
              f = Fault::BadWeight;
            if (f == Fault::Ok && layout.sigma && !(std::isfinite(b.sigma[i]) && b.sigma[i] > 0)) f = Fault::BadSigma;
            if (f == Fault::Ok && layout.time && b.time[i] == 0) f = Fault::BadTime;
            faults[i] = f;
            if (f == Fault::Ok) ids[i] = *geo::point_nested29(b.lat[i], b.lon[i], o.leaf.latitude);
          }
          if (layout.classes) classes.classify(b, r.begin(), r.end(), class_words);
        });
      });
      for (std::size_t i = 0; i < n; ++i) {
        ++report.rows_read;
        if (faults[i] != Fault::Ok) {
          if (o.strict)
            throw FormatError(input + ": row " + std::to_string(b.first_row + i) + ": " + describe(faults[i], b, i) +
                                  " (--strict stops at the first bad row; no leaf was written)",
                              input, "input row");
          ++report.rejected[reason_of(faults[i])];
          continue;
        }
        ++report.rows_accepted;
        store_le<std::uint64_t>(record.data(), ids[i]);
        store_le<double>(record.data() + 8, b.value[i]);
        if (layout.weight) store_le<double>(record.data() + layout.weight_at(), b.weight[i]);
        if (layout.sigma) store_le<double>(record.data() + layout.sigma_at(), b.sigma[i]);
        if (layout.time) store_le<std::uint64_t>(record.data() + layout.time_at(), b.time[i]);
        if (layout.classes) store_le<std::uint64_t>(record.data() + layout.classes_at(), class_words[i]);
        spill.add(ids[i] >> shard_shift, record.data());
      }
      if (progress)
        progress({BuildProgress::Phase::Reading, report.rows_read, total_rows == UINT64_MAX ? 0 : total_rows});
    };
    // One reading thread for all inputs, so the next input is read while this one's last
    // blocks are geocoded (a granule read by a reader process included).
    constexpr std::size_t kBlockRows = std::size_t{1} << 18;
    detail::read_ahead(
        [&](const PointSink& sink) {
          for (std::size_t file = 0; file < o.inputs.size(); ++file)
            if (!o.input_reader || !o.input_reader(o.inputs[file], file, kBlockRows, sink))
              detail::read_input(o.inputs[file], file, columns, kBlockRows, sink);
        },
        consume);
  }
  spill.flush();

  // Pass 2: one leaf per shard, in ascending word order. Without `overwrite` every target is
  // checked first, so a refused build writes no leaf at all.
  const std::vector<std::uint64_t> shards = spill.shards();
  if (!o.overwrite && !g.flat)
    for (const std::uint64_t s : shards)
      if (is_leaf_committed(store, morton::from_nested(s, g.shard_order)))
        throw UsageError(out + "/" + hive::leaf_path(morton::from_nested(s, g.shard_order)) +
                         ": a committed leaf already exists (use --overwrite to replace it)");
  const int cell_shift = 2 * (morton::kMaxOrder - g.cell_order);
  const std::uint64_t cells = g.cells(), chunks = g.chunks();
  std::vector<std::uint64_t> written;
  std::map<std::uint64_t, std::uint64_t> shard_times;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const std::vector<std::byte> records = spill.take(shards[s]);
    const std::size_t n = records.size() / layout.size();
    if (n > UINT32_MAX) throw LimitError("ragged build: more than 2^32 rows in one shard");
    const std::uint64_t base = shards[s] << (2 * g.depth());
    // Counting sort by cell: stable, so a cell's rows keep their input order.
    std::vector<std::uint32_t> offsets(cells + 1, 0), order(n);
    std::vector<std::uint32_t> cell_of(n);
    for (std::size_t i = 0; i < n; ++i) {
      cell_of[i] =
          static_cast<std::uint32_t>((load_le<std::uint64_t>(records.data() + i * layout.size()) >> cell_shift) - base);
      ++offsets[cell_of[i] + 1];
    }
    for (std::uint64_t c = 0; c < cells; ++c) offsets[c + 1] += offsets[c];
    {
      std::vector<std::uint32_t> next(offsets.begin(), offsets.end() - 1);
      for (std::size_t i = 0; i < n; ++i) order[next[cell_of[i]]++] = static_cast<std::uint32_t>(i);
    }
    cell_of = {};
    LeafWriter writer(store, o.leaf, morton::from_nested(shards[s], g.shard_order), o.overwrite);
    std::mutex add_mutex;
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::uint64_t>(0, chunks, 1), [&](const tbb::blocked_range<std::uint64_t>& r) {
            for (std::uint64_t k = r.begin(); k < r.end(); ++k) {
              const std::uint64_t c = g.chunk_cells();
              if (offsets[k * c] == offsets[(k + 1) * c]) continue;  // no observation in this chunk
              EncodedChunk encoded = writer.encode(aggregate_chunk(o.leaf, k, records, layout, order, offsets));
              const std::lock_guard lock(add_mutex);
              writer.add(std::move(encoded));
            }
          });
    });
    if (!manifest_written && !o.leaves_only) {
      hive::write_or_check_manifest(store, manifest);
      manifest_written = true;
    }
    LeafReport leaf;
    arena.execute([&] { leaf = writer.commit(o.writer); });  // the hashes honour `threads` too
    report.warnings.insert(report.warnings.end(), leaf.warnings.begin(), leaf.warnings.end());
    if (leaf.written) {
      written.push_back(leaf.shard);
      report.cells_with_data += leaf.cells_with_data;
      const std::uint64_t time_join = o.leaf.any_timed() ? leaf.time_join : 0;
      report.leaves.push_back(
          {leaf.shard, leaf.leaf_key, leaf.cells_with_data, leaf.observations, leaf.hashes.combined, time_join});
      if (time_join) shard_times[leaf.shard] = time_join;
    }
    if (progress) progress({BuildProgress::Phase::Writing, s + 1, shards.size()});
  }
  report.flat = g.flat;
  report.leaves_only = o.leaves_only;
  if (!g.flat && !o.leaves_only && !written.empty()) update_coverage(store, o.leaf, written, shard_times);
  report.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

void commit_leaves(const std::string& out, BuildOptions o, const std::vector<CommittedLeaf>& leaves,
                   const io::Store& committed_in) {
  o.leaf.validate();
  const LeafGeometry& g = o.leaf.geometry;
  if (g.flat)
    throw UsageError("ragged build: a flat store has no leaves to commit (--commit-leaves needs the hive layout)");
  o.leaf.semantic_hash = semantic_hash(o.leaf);
  fs::create_directories(out);
  const io::FileLock lock((fs::path(out) / kBuildLockName).string(), "one ragged build per store at a time",
                          io::FileLock::Wait::FailIfHeld);
  remove_stale_spills(out, true);  // a killed task's, even when its process is not reaped yet
  std::vector<std::uint64_t> shards;
  std::map<std::uint64_t, std::uint64_t> shard_times;
  for (const CommittedLeaf& leaf : leaves) {
    if (!is_leaf_committed(committed_in, leaf.shard))
      throw UsageError(out + "/" + hive::leaf_path(leaf.shard) +
                       ": the leaf is not committed; a task of the distributed build did not finish it");
    shards.push_back(leaf.shard);
    if (leaf.time_join) shard_times[leaf.shard] = leaf.time_join;
    // Staging leaves a killed task left beside this one: garbage, as no build runs now.
    const fs::path leaf_dir = fs::path(out) / hive::leaf_path(leaf.shard);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(leaf_dir.parent_path(), ec)) {
      const std::string name = e.path().filename().string(), base = leaf_dir.filename().string();
      if (name.rfind(base + ".tmp-", 0) == 0 || name.rfind(base + ".old-", 0) == 0) fs::remove_all(e.path(), ec);
    }
  }
  io::DirectoryStore store(out);
  const hive::ManifestSpec manifest{o.dataset_name, o.dataset_version, o.leaf.semantic_hash, g.cell_order,
                                    g.shard_order};
  // As `run`: a build that committed no leaf leaves the store without a manifest.
  if (shards.empty()) {
    (void)hive::check_manifest(store, manifest);
    return;
  }
  hive::write_or_check_manifest(store, manifest);
  update_coverage(store, o.leaf, shards, shard_times);
}

}  // namespace tessera::ragged::build
