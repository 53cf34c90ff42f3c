// `tessera tet convert` throughput against reading the same chunks with libhdf5 and nothing else
// (docs/performance.md). For each input (a chunked f32 HDF5 file written by h5py, see
// scripts/bench_tet_convert.sh), side by side in one process:
//
//   (a) libhdf5 read: H5Dread of every chunk's box (one hyperslab per chunk, grid order) into a
//       reused chunk buffer — what reading the data costs before any conversion; one thread
//       (`--read-threads`: libhdf5 runs every call under one global lock, so more threads only
//       take turns);
//   (b) convert: interop::convert_to_tet with `--jobs` jobs into OUT_DIR (page cache, and the
//       writer's fsync at commit; `--out-dir` on a tmpfs leaves the device out);
//   (c) write only: the same number of bytes written from one reused 4 MiB buffer (the size of
//       the converter's units on 2 jobs, so it stays in the CPU's cache as theirs do) through
//       io::AtomicFileSink (pwrite, fsync, rename) into OUT_DIR — what writing the output costs
//       before anything is read; a converter cannot beat the slower of (a) and (c).
//
// One untimed round warms the page cache; then `--repeat` rounds, each starting one pass later
// than the previous. Reported: MB/s (10^6 decoded bytes per second) per pass — median, min, max —
// with the median CPU seconds (user + system, all threads: the cost that does not depend on how
// busy the machine is), the ratios b/a of each round and their median (target ≥ 0.70),
// b / min(a, c), and the machine's load average at the start and at the end.
//
// With `--zstd LEVEL` the output is zstd chunks of that level, and pass (a) becomes what such a
// conversion cannot do without: libhdf5 reading every chunk plus ZSTD-compressing it at that
// level, on the `--jobs` threads the converter uses (reads take turns under libhdf5's lock while
// other threads compress). Target: convert ≥ 0.70 of it.
//
// Usage: bench_tet_convert --out-dir DIR [--repeat R] [--jobs J] [--read-threads T] [--zstd LEVEL]
//                          [--only read|convert|write] NAME=FILE.h5 …
// (`--only` runs one pass, `--repeat` times with no warm-up and no ratio: for perf and the like.)
#include <hdf5.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/interop/tet_convert.hpp"
#include "tessera/io/byte_sink.hpp"

namespace {

namespace fs = std::filesystem;
namespace interop = tessera::interop;
using tessera::bench::seconds_since;

struct Input {
  std::string name;
  fs::path path;
};

struct Args {
  fs::path out_dir;
  int repeat = 5;
  unsigned jobs = 2;
  int read_threads = 1;
  std::optional<int> zstd_level;  // zstd output, and read + compress as pass (a)
  std::string only;               // "read", "convert" or "write": that pass alone, once per round (profiling)
  std::vector<Input> inputs;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_tet_convert: %s\nusage: bench_tet_convert --out-dir DIR [--repeat R] [--jobs J] "
               "[--read-threads T] [--zstd LEVEL] [--only read|convert|write] NAME=FILE.h5 ...\n",
               why.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--out-dir") a.out_dir = value();
    else if (arg == "--repeat") a.repeat = std::stoi(value());
    else if (arg == "--jobs") a.jobs = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--read-threads") a.read_threads = std::stoi(value());
    else if (arg == "--only") a.only = value();
    else if (arg == "--zstd") a.zstd_level = std::stoi(value());
    else if (arg.find('=') != std::string::npos && arg[0] != '-')
      a.inputs.push_back({arg.substr(0, arg.find('=')), arg.substr(arg.find('=') + 1)});
    else usage("unknown argument " + arg);
  }
  if (a.out_dir.empty()) usage("--out-dir is required");
  if (a.inputs.empty()) usage("no input NAME=FILE.h5 given");
  if (a.repeat < 1 || a.jobs < 1 || a.read_threads < 1) usage("repeats, jobs and threads must be positive");
  if (!a.only.empty() && a.only != "read" && a.only != "convert" && a.only != "write")
    usage("--only takes read, convert or write");
  if (a.zstd_level) a.read_threads = std::max(a.read_threads, static_cast<int>(a.jobs));  // the same threads
  return a;
}

// The one dataset of an input, opened for the libhdf5 baseline.
class Hdf5Chunks {
 public:
  explicit Hdf5Chunks(const fs::path& path) {
    file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file_ < 0) throw std::runtime_error("cannot open " + path.string());
    dataset_ = H5Dopen2(file_, "v", H5P_DEFAULT);
    if (dataset_ < 0) throw std::runtime_error(path.string() + ": no dataset v");
    const hid_t space = H5Dget_space(dataset_);
    const int rank = H5Sget_simple_extent_ndims(space);
    shape_.resize(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space, shape_.data(), nullptr);
    H5Sclose(space);
    const hid_t dcpl = H5Dget_create_plist(dataset_);
    chunk_.resize(shape_.size());
    if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_chunk(dcpl, rank, chunk_.data()) != rank)
      throw std::runtime_error(path.string() + ": v is not chunked");
    H5Pclose(dcpl);
    chunks_ = 1;
    bytes_ = sizeof(float);
    for (std::size_t d = 0; d < shape_.size(); ++d) {
      grid_.push_back((shape_[d] + chunk_[d] - 1) / chunk_[d]);
      chunks_ *= grid_.back();
      bytes_ *= shape_[d];
    }
  }
  ~Hdf5Chunks() {
    H5Dclose(dataset_);
    H5Fclose(file_);
  }
  Hdf5Chunks(const Hdf5Chunks&) = delete;
  Hdf5Chunks& operator=(const Hdf5Chunks&) = delete;

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t chunks() const { return chunks_; }
  std::uint64_t chunk_elements() const {
    std::uint64_t n = 1;
    for (const auto c : chunk_) n *= c;
    return n;
  }

  // H5Dread of chunk `k` (grid row-major) into `buffer`: the chunk's box, clipped at the edges.
  void read(std::uint64_t k, float* buffer) const {
    std::vector<hsize_t> start(shape_.size()), count(shape_.size());
    for (std::size_t d = shape_.size(); d-- > 0;) {
      const hsize_t c = k % grid_[d];
      k /= grid_[d];
      start[d] = c * chunk_[d];
      count[d] = std::min(chunk_[d], shape_[d] - start[d]);
    }
    const hid_t file_space = H5Dget_space(dataset_);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
    const hid_t memory_space = H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr);
    const herr_t rc = H5Dread(dataset_, H5T_NATIVE_FLOAT, memory_space, file_space, H5P_DEFAULT, buffer);
    H5Sclose(memory_space);
    H5Sclose(file_space);
    if (rc < 0) throw std::runtime_error("H5Dread failed");
  }

 private:
  hid_t file_ = -1, dataset_ = -1;
  std::vector<hsize_t> shape_, chunk_, grid_;
  std::uint64_t chunks_ = 0, bytes_ = 0;
};

// Pass (a): every chunk once, chunks dealt to `threads` threads, one reused buffer per thread;
// with a zstd level each chunk is also compressed (into a reused buffer, as the writer does).
void read_all_chunks(const Hdf5Chunks& h5, int threads, std::optional<int> zstd_level = std::nullopt) {
  std::atomic<std::uint64_t> next{0};
  auto work = [&] {
    std::unique_ptr<float[]> buffer(new float[h5.chunk_elements()]);
    std::vector<std::byte> compressed;
    for (std::uint64_t k; (k = next.fetch_add(1)) < h5.chunks();) {
      h5.read(k, buffer.get());
      if (!zstd_level) continue;
      compressed.clear();
      tessera::codec::zstd_compress_append(
          {reinterpret_cast<const std::byte*>(buffer.get()), h5.chunk_elements() * sizeof(float)}, compressed,
          {*zstd_level, /*content_size=*/true, /*checksum=*/false});
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// Pass (b): the whole conversion (removing the output is left to the caller, outside the timing).
void convert(const fs::path& input, const fs::path& output, unsigned jobs, std::optional<int> zstd_level) {
  interop::ConvertOptions options{.jobs = jobs, .at = "0"};
  if (zstd_level) {
    options.codec = tessera::tet::Codec::Zstd;
    options.level = *zstd_level;
  }
  interop::convert_to_tet(input.string(), output.string(), options);
}

// Pass (c): `bytes` through an atomic file sink, committed (fsync + rename); removed by the caller.
void write_only(const fs::path& output, std::uint64_t bytes) {
  static const std::vector<std::byte> block(std::size_t{4} << 20, std::byte{1});
  tessera::io::AtomicFileSink sink(output.string());
  for (std::uint64_t left = bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, block.size()));
    sink.write({block.data(), n});
    left -= n;
  }
  sink.commit();
}

// CPU seconds (user + system, every thread) the process has used so far.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The machine's load average: rates are only comparable between runs at similar load; the ratios
// of one run are measured side by side.
void print_load(const char* when) {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3)
    std::printf("load average at the %s: %.2f %.2f %.2f\n", when, load[0], load[1], load[2]);
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {tessera::bench::median(v), v.front(), v.back()};
}

int run(const Args& args) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  fs::create_directories(args.out_dir);
  std::printf("tet-convert: %d round(s), convert --jobs %u%s, libhdf5 read%s on %d thread(s), output in %s\n",
              args.repeat, args.jobs,
              args.zstd_level ? (" --codec zstd --level " + std::to_string(*args.zstd_level)).c_str() : "",
              args.zstd_level ? " + zstd compress" : "", args.read_threads, args.out_dir.c_str());
  print_load("start");
  std::printf("\n");
  std::printf("%-10s %-34s %12s %22s %10s\n", "input", "pass", "median MB/s", "min … max", "CPU s");
  std::vector<std::string> summary;
  for (const Input& input : args.inputs) {
    const Hdf5Chunks h5(input.path);
    const fs::path output = args.out_dir / ("bench-tet-convert-" + input.name + ".tet");
    const double mb = static_cast<double>(h5.bytes()) / 1e6;
    if (!args.only.empty()) {
      for (int r = 0; r < args.repeat; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        if (args.only == "read") read_all_chunks(h5, args.read_threads, args.zstd_level);
        else if (args.only == "write") write_only(output, h5.bytes());
        else convert(input.path, output, args.jobs, args.zstd_level);
        std::printf("%-10s %-34s %12.0f\n", input.name.c_str(), args.only.c_str(), mb / seconds_since(t0));
        fs::remove(output);
      }
      continue;
    }
    // Warm-up: every pass once (page cache, allocator, thread pools).
    read_all_chunks(h5, args.read_threads, args.zstd_level);
    convert(input.path, output, args.jobs, args.zstd_level);
    fs::remove(output);
    write_only(output, h5.bytes());
    fs::remove(output);
    std::vector<double> read_rate, convert_rate, write_rate, ratio, ratio_floor;
    std::vector<double> cpu[3];  // CPU seconds per pass and round
    for (int r = 0; r < args.repeat; ++r) {
      double t[3] = {0, 0, 0};  // read, convert, write
      for (int k = 0; k < 3; ++k) {
        const int pass = (k + r) % 3;  // each round starts one pass later
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        if (pass == 0) read_all_chunks(h5, args.read_threads, args.zstd_level);
        else if (pass == 1) convert(input.path, output, args.jobs, args.zstd_level);
        else write_only(output, h5.bytes());
        t[pass] = seconds_since(t0);
        cpu[pass].push_back(cpu_seconds() - c0);
        fs::remove(output);
      }
      read_rate.push_back(mb / t[0]);
      convert_rate.push_back(mb / t[1]);
      write_rate.push_back(mb / t[2]);
      ratio.push_back(t[0] / t[1]);
      ratio_floor.push_back(std::max(t[0], t[2]) / t[1]);
    }
    const Stats a = stats(read_rate), b = stats(convert_rate), c = stats(write_rate);
    auto row = [&](const char* pass, const Stats& x, const std::vector<double>& seconds) {
      std::printf("%-10s %-34s %12.0f %10.0f … %-10.0f %10.2f\n", input.name.c_str(), pass, x.median, x.min, x.max,
                  tessera::bench::median(seconds));
    };
    row(args.zstd_level ? "(a) libhdf5 read + zstd compress" : "(a) libhdf5 read (H5Dread/chunk)", a, cpu[0]);
    row("(b) convert_to_tet", b, cpu[1]);
    row("(c) write only (AtomicFileSink)", c, cpu[2]);
    std::fflush(stdout);  // a row per input as it finishes, also when stdout is a file
    auto rounds = [](const std::vector<double>& v) {
      std::string out;
      char cell[16];
      for (const double x : v) {
        std::snprintf(cell, sizeof cell, "%s%.2f", out.empty() ? "" : " ", x);
        out += cell;
      }
      return out;
    };
    char line[512];
    std::snprintf(line, sizeof line,
                  "%-10s b/a median %.2f (rounds: %s); b/min(a,c) median %.2f (rounds: %s) — %.0f MB, %llu chunks",
                  input.name.c_str(), tessera::bench::median(ratio), rounds(ratio).c_str(),
                  tessera::bench::median(ratio_floor), rounds(ratio_floor).c_str(), mb,
                  static_cast<unsigned long long>(h5.chunks()));
    summary.emplace_back(line);
  }
  std::printf("\n");
  for (const auto& line : summary) std::printf("%s\n", line.c_str());
  print_load("end");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  return tessera::bench::guarded_main("bench_tet_convert", [&] { return run(args); });
}
