// CSV and .npy column inputs of `ragged build`.
#include "build_input.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "tessera/core/civil_date.hpp"
#include "tessera/codec/csv.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::ragged::build {

void PointBlock::clear() {
  lat.clear();
  lon.clear();
  value.clear();
  weight.clear();
  sigma.clear();
  time.clear();
  for (auto& [name, values] : extra) values.clear();
  dropped.clear();
}

}  // namespace tessera::ragged::build

namespace tessera::ragged::build::detail {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// `YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|+00:00]` (UTC) → nanoseconds since 1970.
std::optional<std::int64_t> parse_iso_utc(std::string_view s) noexcept {
  const auto num = [&](std::size_t pos, std::size_t len) -> std::optional<unsigned> {
    if (pos + len > s.size()) return std::nullopt;
    unsigned v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + static_cast<unsigned>(s[i] - '0');
    }
    return v;
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  const auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
      *se > 60)
    return std::nullopt;
  std::size_t pos = 19;
  std::int64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (s[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 9; ++digits) frac *= 10;
  }
  const std::string_view zone = s.substr(pos);
  if (!(zone.empty() || zone == "Z" || zone == "+00:00")) return std::nullopt;
  const std::int64_t days = days_from_civil(*y, *mo, *d);
  const std::int64_t secs = days * 86400 + std::int64_t{*h} * 3600 + std::int64_t{*mi} * 60 + *se;
  if (secs > std::numeric_limits<std::int64_t>::max() / 1000000000 - 1 ||
      secs < std::numeric_limits<std::int64_t>::min() / 1000000000 + 1)
    return std::nullopt;
  return secs * 1000000000 + frac;
}

void read_csv(const std::string& path, std::size_t file_index, const Columns& c, std::size_t block_rows,
              const std::function<void(RowBlock&)>& sink) {
  // Read in slices with pread, so memory stays bounded whatever the file size (a mapped file's
  // touched pages would count against the process); records are RFC 4180 (quoted fields,
  // doubled quotes, CRLF, a byte-order mark).
  const auto source = io::open_file(path, io::OpenMode::Pread);
  std::uint64_t offset = 0;
  codec::csv::RecordReader reader(
      [&](std::span<char> out) {
        const std::uint64_t n = std::min<std::uint64_t>(out.size(), source->size() - offset);
        source->read_at(offset, std::as_writable_bytes(out.first(static_cast<std::size_t>(n))));
        offset += n;
        return static_cast<std::size_t>(n);
      },
      path);
  std::vector<std::string_view> fields;
  if (!reader.next(fields)) throw FormatError(path + ": empty CSV file (a header row is needed)", path, "csv");
  std::vector<std::string> header(fields.begin(), fields.end());
  const auto column = [&](const std::string& name) -> std::size_t {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (trim(header[i]) == name) return i;
    throw UsageError(path + ": no column '" + name + "' in the CSV header");
  };
  const std::size_t lat = column(c.lat), lon = column(c.lon), value = column(c.value);
  // Optional columns: npos when not read.
  constexpr std::size_t kNone = std::string_view::npos;
  const std::size_t time = c.time ? column(*c.time) : kNone;
  const std::size_t weight = c.weight ? column(*c.weight) : kNone;
  const std::size_t sigma = c.sigma ? column(*c.sigma) : kNone;
  std::vector<std::pair<std::size_t, std::vector<double>*>> extra;
  const std::size_t width = header.size();
  RowBlock block;
  block.file = file_index;
  block.first_row = 1;
  for (const std::string& name : c.extra) extra.emplace_back(column(name), nullptr);
  // The extra columns' vectors, found again after each block is handed on (its columns move with it).
  const auto resolve = [&] {
    for (std::size_t e = 0; e < extra.size(); ++e) extra[e].second = &block.extra[c.extra[e]];
  };
  resolve();
  std::uint64_t row = 0;
  while (reader.next(fields)) {
    if (fields.size() == 1 && trim(fields[0]).empty()) continue;  // a blank line
    if (fields.size() != width)
      throw FormatError(path + ": line " + std::to_string(reader.line()) + " has " + std::to_string(fields.size()) +
                            " fields, the header " + std::to_string(width),
                        path, "csv");
    ++row;
    block.lat.push_back(parse_number(fields[lat]));
    block.lon.push_back(parse_number(fields[lon]));
    block.value.push_back(parse_number(fields[value]));
    if (weight != kNone) block.weight.push_back(parse_number(fields[weight]));
    if (sigma != kNone) block.sigma.push_back(parse_number(fields[sigma]));
    if (time != kNone) block.time.push_back(parse_time(trim(fields[time]), c.time_format));
    for (const auto& [at, values] : extra) values->push_back(parse_number(fields[at]));
    if (block.size() == block_rows) {
      sink(block);
      block.clear();
      block.first_row = row + 1;
      resolve();
    }
  }
  if (block.size()) sink(block);
}

// One .npy column: its header and a mapped source.
struct NpyColumn {
  std::unique_ptr<io::ByteSource> source;
  codec::NpyHeader header;
  std::uint64_t rows = 0;
};

NpyColumn open_column(const std::string& dir, const std::string& name) {
  const fs::path path = fs::path(dir) / (name + ".npy");
  if (!fs::exists(path)) throw UsageError(dir + ": no column file '" + name + ".npy'");
  NpyColumn col;
  col.source = io::open_file(path.string(), io::OpenMode::Pread);  // bounded memory: no mapping
  col.header = codec::parse_npy_header(*col.source);
  if (col.header.shape.size() != 1 || col.header.fortran_order)
    throw FormatError(path.string() + ": a column must be a 1-D array", path.string(), "npy header");
  if (col.header.dtype == DType::Bool || col.header.dtype == DType::F16)
    throw UnsupportedError(
        path.string() + ": column dtype " + std::string(dtype_info(col.header.dtype).name) + " is not numeric input",
        path.string(), "npy header");
  col.rows = col.header.shape[0];
  return col;
}

// Reads rows [first, first + n) of a column as doubles (or, for times, as int64 nanoseconds).
template <typename Out>
void read_column(const NpyColumn& col, std::uint64_t first, std::size_t n, std::vector<Out>& out) {
  const std::size_t item = dtype_size(col.header.dtype);
  std::vector<std::byte> raw(n * item);
  col.source->read_at(col.header.data_offset + first * item, raw);
  out.resize(n);
  visit_dtype(col.header.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load_le<T>(raw.data() + i * item));
  });
}

void read_npy_dir(const std::string& dir, std::size_t file_index, const Columns& c, std::size_t block_rows,
                  const std::function<void(RowBlock&)>& sink) {
  const NpyColumn lat = open_column(dir, c.lat), lon = open_column(dir, c.lon), value = open_column(dir, c.value);
  std::optional<NpyColumn> time, weight, sigma;
  if (c.time) {
    if (c.time_format == TimeFormat::Iso)
      throw UsageError(dir + ": .npy time columns hold nanosecond counts; use --time-format unix-ns, gps-ns or toc-ns");
    time = open_column(dir, *c.time);
    if (is_float(time->header.dtype)) throw UsageError(dir + ": the time column must hold integer nanoseconds");
  }
  if (c.weight) weight = open_column(dir, *c.weight);
  if (c.sigma) sigma = open_column(dir, *c.sigma);
  std::vector<NpyColumn> extra;
  for (const std::string& name : c.extra) extra.push_back(open_column(dir, name));
  const std::uint64_t rows = lat.rows;
  std::vector<const NpyColumn*> all = {&lon, &value, time ? &*time : nullptr, weight ? &*weight : nullptr,
                                       sigma ? &*sigma : nullptr};
  for (const NpyColumn& col : extra) all.push_back(&col);
  for (const NpyColumn* col : all)
    if (col && col->rows != rows) throw FormatError(dir + ": columns of different lengths", dir, "npy columns");
  RowBlock block;
  block.file = file_index;
  std::vector<std::int64_t> ns;
  for (std::uint64_t first = 0; first < rows; first += block_rows) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block_rows, rows - first));
    block.clear();
    block.first_row = first + 1;
    read_column(lat, first, n, block.lat);
    read_column(lon, first, n, block.lon);
    read_column(value, first, n, block.value);
    if (weight) read_column(*weight, first, n, block.weight);
    if (sigma) read_column(*sigma, first, n, block.sigma);
    for (std::size_t e = 0; e < extra.size(); ++e) read_column(extra[e], first, n, block.extra[c.extra[e]]);
    if (time) {
      read_column(*time, first, n, ns);
      block.time.resize(n);
      for (std::size_t i = 0; i < n; ++i) block.time[i] = time_of_ns(ns[i], c.time_format);
    }
    sink(block);
  }
}

}  // namespace

double parse_number(std::string_view s) noexcept {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = kNaN;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return kNaN;
  return v;
}

std::uint64_t time_of_ns(std::int64_t ns, TimeFormat format) noexcept {
  try {
    switch (format) {
      case TimeFormat::UnixNs: return toc::encode_timestamp(toc::from_unix_ns(ns));
      case TimeFormat::GpsNs: return toc::encode_timestamp(toc::from_gps_ns(ns));
      case TimeFormat::TocNs: return ns < 0 ? 0 : toc::encode_timestamp(static_cast<std::uint64_t>(ns));
      case TimeFormat::Iso: return 0;
    }
  } catch (const Error&) {
  }
  return 0;
}

std::uint64_t parse_time(std::string_view text, TimeFormat format) noexcept {
  if (format == TimeFormat::Iso) {
    const auto ns = parse_iso_utc(text);
    return ns ? time_of_ns(*ns, TimeFormat::UnixNs) : 0;
  }
  std::int64_t ns = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), ns);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) return 0;
  return time_of_ns(ns, format);
}

namespace {

// The first bytes of a file (fewer when it is shorter), to tell its kind by signature.
std::string head_of(const std::string& path) {
  const auto source = io::open_file(path, io::OpenMode::Pread);
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(source->size(), 8)), '\0');
  source->read_at(0, std::as_writable_bytes(std::span(head)));
  return head;
}

}  // namespace

void read_ahead(const std::function<void(const PointSink&)>& produce, const std::function<void(RowBlock&)>& consume,
                std::size_t depth) {
  struct Cancelled {};
  std::mutex m;
  std::condition_variable changed;
  std::deque<RowBlock> queue;
  // Blocks the consumer is done with: the producer's next block takes one's vectors, so a
  // block's memory is allocated and faulted in once, not for every block read.
  std::vector<RowBlock> spare;
  bool done = false, cancelled = false;
  std::exception_ptr error;
  std::thread reader([&] {
    try {
      produce([&](RowBlock& block) {
        std::unique_lock lock(m);
        changed.wait(lock, [&] { return queue.size() < depth || cancelled; });
        if (cancelled) throw Cancelled{};
        queue.push_back(std::move(block));
        if (!spare.empty()) {
          block = std::move(spare.back());
          spare.pop_back();
          block.clear();
          block.file = queue.back().file;
        }
        changed.notify_all();
      });
    } catch (const Cancelled&) {
    } catch (...) {
      const std::lock_guard lock(m);
      error = std::current_exception();
    }
    const std::lock_guard lock(m);
    done = true;
    changed.notify_all();
  });
  try {
    for (;;) {
      RowBlock block;
      {
        std::unique_lock lock(m);
        changed.wait(lock, [&] { return !queue.empty() || done; });
        if (queue.empty()) break;
        block = std::move(queue.front());
        queue.pop_front();
        changed.notify_all();
      }
      consume(block);
      const std::lock_guard lock(m);
      if (spare.size() < depth) spare.push_back(std::move(block));
    }
  } catch (...) {
    {
      const std::lock_guard lock(m);
      cancelled = true;
      changed.notify_all();
    }
    reader.join();
    throw;
  }
  reader.join();
  if (error) std::rethrow_exception(error);
}

void read_input(const std::string& path, std::size_t file_index, const Columns& columns, std::size_t block_rows,
                const std::function<void(RowBlock&)>& sink) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) read_npy_dir(path, file_index, columns, block_rows, sink);
  else if (!fs::is_regular_file(path, ec)) throw IoError(path + ": no such input file or directory", path);
  else if (const std::string head = head_of(path); head.starts_with("PAR1"))
    read_parquet(path, file_index, columns, block_rows, sink);
  else if (head == std::string_view("\x89HDF\r\n\x1a\n", 8))
    throw UsageError(
        path + ": an HDF5 file (an ICESat-2 granule?): give --config FILE.yaml, a zagg config naming its datasets");
  else read_csv(path, file_index, columns, block_rows, sink);
}

std::optional<std::uint64_t> row_count(const std::string& path, const Columns& columns) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::nullopt;
  try {
    return open_column(path, columns.lat).rows;
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace tessera::ragged::build::detail
