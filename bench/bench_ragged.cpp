// read_tensors and read_cell throughput on a production-geometry zagg-ragged leaf, side by side
// with what libzstd alone needs for the same bytes (docs/performance.md).
//
// The leaf (written once into DATA_DIR by ragged::synth_hive, seeded and deterministic): cell
// order 19, shard order 9 → 4^10 = 1,048,576 cells in one shard of K = 256 inner chunks of 4096
// cells (order-13 chunks, 64 × 64 tensors); about 20 % of the cells hold a t-digest of 10–500
// centroids (integer weights, sorted means that fit 128 bins of 0.5); `morton` holds every cell
// of every written chunk. Codecs as zagg writes them: vlen-bytes + zstd level 3 inside
// sharding_indexed with a CRC-32C index. The leaf is committed with a coverage bitmap of its
// populated cells, as zagg and `tessera ragged build` commit theirs, so masks take the
// exact-occupancy path a real leaf takes.
//
//   (a) sweep:   RaggedField::read_tensors over the whole leaf (n_bins 128, uint32), 2 threads,
//                into a sink that reads each block and keeps nothing (so the reader recycles the
//                tensor storage, as it does for any streaming consumer);
//   (a') keep:   the same, into a sink that takes each block's vectors (fresh storage per block);
//   (b) zstd:    open the shard object, parse its index, ZSTD-decompress every inner chunk, the
//                same 2 threads — the floor any sweep pays. Timed both ways each round, the
//                chunks viewed in a fresh map of the shard and copied out with pread into a
//                reused per-thread buffer; the faster of the two is (b). Outputs go into reused
//                buffers that are never cleared (core/kept.hpp grown_prefix);
//   (c) cell:    read_cell of a random populated cell on the warm store (mean µs);
//   (d) bare:    get_suffix(index) + get_range(chunk) + zstd decompress of that chunk, the same
//                random cells — the two ranged reads read_cell must make.
//
// Targets: (b)/(a) throughput ≥ 0.5, (c)/(d) ≤ 1.2. Each round runs every pass; times are medians
// over rounds, ratios the median of each round's own ratio.
//
// Usage: bench_ragged --data-dir DIR [--repeat R] [--threads T] [--cells N]
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/kept.hpp"
#include "tessera/io/read_path.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/synth.hpp"
#include "tessera/zarr/array.hpp"

namespace {

namespace fs = std::filesystem;
namespace ragged = tessera::ragged;
namespace zarr = tessera::zarr;

constexpr std::uint64_t kCells = std::uint64_t{1} << 20;       // 4^(19 − 9)
constexpr std::uint64_t kChunkCells = std::uint64_t{1} << 12;  // 4^(19 − 13)
const std::string kField = "19/h_tdigest";

struct Args {
  fs::path data_dir;
  int repeat = 5;
  int threads = 2;
  int cells = 2000;
};

using tessera::bench::median;
using tessera::bench::minor_faults;
using tessera::bench::seconds_since;

// CPU seconds of the whole process (every thread): with the wall time it shows how much of a pass
// runs in parallel, and it is steadier than the wall time on a loaded machine.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw tessera::UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--data-dir") a.data_dir = next();
    else if (arg == "--repeat") a.repeat = std::stoi(next());
    else if (arg == "--threads") a.threads = std::stoi(next());
    else if (arg == "--cells") a.cells = std::stoi(next());
    else
      throw tessera::UsageError("unknown argument " + arg +
                                " (usage: bench_ragged --data-dir DIR [--repeat R] [--threads T] [--cells N])");
  }
  if (a.data_dir.empty()) throw tessera::UsageError("--data-dir is required");
  return a;
}

int run(const Args& args) {
  const fs::path hive = args.data_dir / "ragged-hive";
  ragged::SynthLeafOptions synth;  // order 19 cells, shard order 9, 4096-cell chunks, ~20 %
  synth.stamp = true;              // committed, with its coverage bitmap, as a writer leaves it
  const fs::path leaf = hive / ragged::hive::leaf_path(ragged::morton::parse_decimal(synth.shard_decimal));
  if (!fs::exists(leaf / "19/h_tdigest/c/0") || !fs::exists(leaf / "coverage.moc")) {
    std::printf("generating the production-geometry leaf in %s …\n", leaf.c_str());
    fs::create_directories(hive);
    tessera::io::DirectoryStore hive_store(hive.string());
    ragged::synth_hive(hive_store, synth);
  }
  tessera::io::DirectoryStore store(leaf.string());
  const auto field = ragged::RaggedField::open(store, kField);
  const zarr::Array& array = field.payload().array();
  tbb::task_arena arena(args.threads);

  // The populated cells, and the stored bytes of the shard for the bare baseline.
  std::vector<std::uint64_t> populated;
  std::uint64_t payload_bytes = 0, stored_bytes = 0;
  {
    const auto object = array.read_object({0});
    for (std::uint64_t inner = 0; inner < object.chunk_count(); ++inner) {
      if (const auto s = object.stored_chunk(inner)) stored_bytes += s->size();
      const auto chunk = object.read_vlen_chunk(inner);
      for (std::size_t i = 0; i < chunk.size(); ++i)
        if (!chunk[i].empty()) {
          populated.push_back(inner * kChunkCells + i);
          payload_bytes += chunk[i].size();
        }
    }
  }
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> sample(static_cast<std::size_t>(args.cells));
  for (auto& c : sample) c = populated[rng() % populated.size()];

  ragged::TensorOptions options;
  options.fit = ragged::FitPolicy::DegradeResolution;
  options.threads = static_cast<unsigned>(args.threads);

  std::vector<double> sweep, keep, zstd_only, cell, bare, sweep_cpu, zstd_cpu;
  std::vector<double> zstd_map, zstd_pread, zstd_map_cpu, zstd_pread_cpu;
  std::vector<double> sweep_faults, zstd_map_faults, zstd_pread_faults;  // minor page faults per pass
  std::uint64_t blocks = 0;
  for (int round = 0; round < args.repeat; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_seconds();
    blocks = 0;
    long f0 = minor_faults();
    arena.execute([&] { field.read_tensors(options, [&](ragged::TensorBlock&&) { ++blocks; }); });
    sweep.push_back(seconds_since(t0));
    sweep_cpu.push_back(cpu_seconds() - c0);
    sweep_faults.push_back(static_cast<double>(minor_faults() - f0));

    t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      field.read_tensors(options, [&](ragged::TensorBlock&& b) { const ragged::TensorBlock kept = std::move(b); });
    });
    keep.push_back(seconds_since(t0));

    // The limit both ways: every inner chunk decompressed from a fresh map of the shard, and
    // copied out with pread into a reused per-thread buffer first; the faster is (b).
    for (const auto path : {tessera::io::ReadPath::Mmap, tessera::io::ReadPath::Pread}) {
      t0 = std::chrono::steady_clock::now();
      c0 = cpu_seconds();
      f0 = minor_faults();
      arena.execute([&] {
        const auto object = array.read_object({0});
        tbb::parallel_for(std::uint64_t{0}, object.chunk_count(), [&](std::uint64_t inner) {
          thread_local std::vector<std::byte> encoded, out;
          const auto s = object.stored_chunk(inner, path, encoded);
          if (!s) return;
          tessera::codec::zstd_decompress_into(
              *s, tessera::grown_prefix(out, *tessera::codec::zstd_frame_content_size(*s)));
        });
      });
      (path == tessera::io::ReadPath::Mmap ? zstd_map : zstd_pread).push_back(seconds_since(t0));
      (path == tessera::io::ReadPath::Mmap ? zstd_map_cpu : zstd_pread_cpu).push_back(cpu_seconds() - c0);
      (path == tessera::io::ReadPath::Mmap ? zstd_map_faults : zstd_pread_faults)
          .push_back(static_cast<double>(minor_faults() - f0));
    }
    zstd_only.push_back(std::min(zstd_map.back(), zstd_pread.back()));
    zstd_cpu.push_back(zstd_map.back() < zstd_pread.back() ? zstd_map_cpu.back() : zstd_pread_cpu.back());

    t0 = std::chrono::steady_clock::now();
    for (auto c : sample) (void)field.read_cell(static_cast<std::int64_t>(c));
    cell.push_back(seconds_since(t0) / static_cast<double>(sample.size()));

    t0 = std::chrono::steady_clock::now();
    const std::uint64_t index_bytes = 16 * 256 + 4;
    std::vector<std::byte> out;
    for (auto c : sample) {
      const auto index = store.get_suffix(kField + "/c/0", index_bytes);
      const std::uint64_t inner = c / kChunkCells;
      const std::uint64_t offset = tessera::load_le<std::uint64_t>(index->bytes.data() + 16 * inner);
      const std::uint64_t nbytes = tessera::load_le<std::uint64_t>(index->bytes.data() + 16 * inner + 8);
      const auto chunk = store.get_range(kField + "/c/0", offset, nbytes);
      tessera::codec::zstd_decompress_into(
          chunk->bytes, tessera::grown_prefix(out, *tessera::codec::zstd_frame_content_size(chunk->bytes)));
    }
    bare.push_back(seconds_since(t0) / static_cast<double>(sample.size()));
  }
  const double a = median(sweep), b = median(zstd_only), c = median(cell), d = median(bare);
  // Ratios are taken within each round (the machine's speed moves between rounds), then the median.
  const auto per_round = [&](const std::vector<double>& num, const std::vector<double>& den) {
    std::vector<double> r;
    for (std::size_t i = 0; i < num.size(); ++i) r.push_back(num[i] / den[i]);
    return median(r);
  };
  std::printf("leaf: %llu cells, %zu populated (%.1f %%), %llu blocks, payload %.1f MiB, stored %.1f MiB\n",
              static_cast<unsigned long long>(kCells), populated.size(), 100.0 * populated.size() / kCells,
              static_cast<unsigned long long>(blocks), payload_bytes / 1048576.0, stored_bytes / 1048576.0);
  std::printf("threads %d, %d rounds, medians\n", args.threads, args.repeat);
  std::printf(
      "(a) read_tensors sweep      %8.3f s   %10.0f populated cells/s   %7.1f MiB/s decoded   cpu %.3f s"
      "   minor faults %.0f\n",
      a, populated.size() / a, payload_bytes / 1048576.0 / a, median(sweep_cpu), median(sweep_faults));
  std::printf("(a') sink keeps the blocks  %8.3f s   %10.0f populated cells/s   %7.1f MiB/s decoded\n", median(keep),
              populated.size() / median(keep), payload_bytes / 1048576.0 / median(keep));
  std::printf(
      "(b) zstd-decompress only    %8.3f s   %10.0f populated cells/s   %7.1f MiB/s decoded   cpu %.3f s"
      "   (the faster per round of:)\n",
      b, populated.size() / b, payload_bytes / 1048576.0 / b, median(zstd_cpu));
  std::printf("  (b-mmap)  from a fresh map %8.3f s   cpu %.3f s   minor faults %.0f\n", median(zstd_map),
              median(zstd_map_cpu), median(zstd_map_faults));
  std::printf("  (b-pread) pread per chunk  %8.3f s   cpu %.3f s   minor faults %.0f\n", median(zstd_pread),
              median(zstd_pread_cpu), median(zstd_pread_faults));
  std::printf("the sweep's read path (TESSERA_READ_PATH=auto probes once): %s\n",
              std::string(tessera::io::read_path_name(array.read_object({0}).scan_read_path())).c_str());
  std::printf("(c) read_cell (warm)        %8.1f us\n", c * 1e6);
  std::printf("(d) index + chunk + zstd    %8.1f us\n", d * 1e6);
  std::printf("sweep throughput / zstd-only throughput (b/a): %.2f   (target >= 0.50; b/a' %.2f)\n",
              per_round(zstd_only, sweep), per_round(zstd_only, keep));
  std::printf("read_cell / bare two reads (c/d):              %.2f   (target <= 1.20)\n", per_round(cell, bare));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_ragged", [&] { return run(parse_args(argc, argv)); });
}
