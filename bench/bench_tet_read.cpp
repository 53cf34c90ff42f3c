// Whole-file read throughput of the `.tet` reader against what the machine and libzstd can do
// without it (docs/performance.md). On one synthesized f32 file with raw chunks and a twin with
// the same data in zstd chunks, each measured from the page cache into one pre-faulted buffer.
// Passes that read a map make a fresh one each time, so they pay for faulting its pages in as a
// reader that maps the file does:
//
//   (a) memcpy of the raw file's payload region from the memory map, two threads, one half each;
//  (a') the same memcpy cut at chunk boundaries and scheduled like (b): the bare cost of (b)'s
//       work split, which static halves do not capture on a machine with other load;
//  (a'') pread(2) of each chunk into its place, same scheduling: copying out of the page cache
//       without mapping it, which on some machines costs several times less than the faults;
//   (b) TetFile::decode_chunk of every raw chunk, task_arena(2) + parallel_for over chunks;
//   (c) ZSTD_decompressDCtx of the zstd file's frames straight from the map, same partitioning,
//       one context per thread;
//  (c'') the same with each frame first read by pread into a reused per-thread buffer;
//   (d) TetFile::decode_chunk of every zstd chunk, same partitioning, frames read as the reader
//       reads them (from the map or copied, as io::choose_read_path decides);
//
// The passes run round-robin, `--repeat` rounds, and each reports its median.
//
// b over the faster of a' and a'', and d over the faster of c and c'', are the reader's overhead
// over the bare operation (targets 0.80 and 0.85). The `zstd -d` CLI on the concatenated frames
// is printed as context.
//
// Usage: bench_tet_read --data-dir DIR [--size-gib N] [--repeat R] [--threads T] [--no-cli]
// Files are synthesized once into DIR (tessera::tet::synth_write) and reused afterwards.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_common.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/synth.hpp"

namespace {

namespace fs = std::filesystem;
namespace tet = tessera::tet;

constexpr std::uint64_t kChunkRows = 16;  // chunk 16 × 256 × 256 f32 = 4 MiB
constexpr std::uint64_t kRowBytes = 1024 * 1024 * 4;

struct Args {
  fs::path data_dir;
  double size_gib = 2.0;
  int repeat = 5;
  int threads = 2;
  bool run_cli = true;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_tet_read: %s\nusage: bench_tet_read --data-dir DIR [--size-gib N] [--repeat R] "
               "[--threads T] [--no-cli]\n",
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
    if (arg == "--data-dir") a.data_dir = value();
    else if (arg == "--size-gib") a.size_gib = std::stod(value());
    else if (arg == "--repeat") a.repeat = std::stoi(value());
    else if (arg == "--threads") a.threads = std::stoi(value());
    else if (arg == "--no-cli") a.run_cli = false;
    else usage("unknown argument " + arg);
  }
  if (a.data_dir.empty()) usage("--data-dir is required");
  if (!(a.size_gib > 0) || a.repeat < 1 || a.threads < 1) usage("sizes, repeats and threads must be positive");
  return a;
}

// Axis-0 extent for about `gib` GiB of [rows, 1024, 1024] f32, a whole number of chunk rows.
std::uint64_t rows_for(double gib) {
  const double chunk_rows = std::round(gib * (1ull << 30) / (kChunkRows * kRowBytes));
  return static_cast<std::uint64_t>(std::max(1.0, chunk_rows)) * kChunkRows;
}

std::string spec_for(std::uint64_t rows, const char* codec) {
  return "v:f32:" + std::to_string(rows) + "x1024x1024:" + std::to_string(kChunkRows) + "x256x256:" + codec;
}

// Opens `path` if it holds the expected dataset, else (re)synthesizes it first.
tet::TetFile open_or_synth(const fs::path& path, std::uint64_t rows, tet::Codec codec) {
  try {
    if (fs::exists(path)) {
      tet::TetFile file = tet::TetFile::open(path.string());
      const auto* ds = file.find("v");
      if (ds && ds->shape == std::vector<std::uint64_t>{rows, 1024, 1024} && ds->dtype == tessera::DType::F32 &&
          file.entry(0).codec == static_cast<std::uint32_t>(codec))
        return file;
    }
  } catch (const tessera::Error&) {
    // Unreadable or stale: write it again below.
  }
  std::printf("synthesizing %s ...\n", path.c_str());
  std::fflush(stdout);
  tet::SynthOptions options;
  options.datasets = {tet::parse_synth_spec(spec_for(rows, codec == tet::Codec::Zstd ? "zstd:3" : "raw"))};
  options.seed = 1;
  options.at = "0";
  tet::synth_write(path.string(), options);
  return tet::TetFile::open(path.string());
}

// Reads every page once so later passes run from the page cache. The reads are copies (the file
// is open MapAndRead), so the file's own mapping stays unfaulted like every pass's fresh one.
std::uint64_t touch_pages(const tet::TetFile& file) {
  const auto& src = file.source();
  std::vector<std::byte> block(std::size_t{8} << 20);
  std::uint64_t sum = 0;
  for (std::uint64_t off = 0; off < src.size(); off += block.size()) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), src.size() - off));
    src.read_at(off, std::span(block).first(n));
    sum += std::to_integer<unsigned>(block[0]);
  }
  return sum;
}

// Passes that read a map make a fresh one, so they pay for faulting its pages in.
using tessera::bench::Mapping;

struct Timing {
  double median = 0, min = 0, max = 0;  // GB/s (1e9 bytes per second)
};

Timing summarize(std::vector<double> gbps) {
  std::sort(gbps.begin(), gbps.end());
  const std::size_t n = gbps.size();
  const double median = n % 2 ? gbps[n / 2] : (gbps[n / 2 - 1] + gbps[n / 2]) / 2;
  return {median, gbps.front(), gbps.back()};
}

// Runs every pass `repeat` times, round-robin, so that a slow phase of the machine hits all
// measurements alike and the ratios stay meaningful. Each round starts one pass later than the
// previous one, so no pass always follows the same neighbour (the pass after the std::thread
// copy, for one, found the arena's workers asleep). One untimed round first: the first copy out
// of a freshly touched mapping ran at a fraction of the later speed.
std::vector<Timing> measure(std::uint64_t bytes, int repeat, const std::vector<std::function<void()>>& passes) {
  for (const auto& pass : passes) pass();
  std::vector<std::vector<double>> gbps(passes.size());
  for (int r = 0; r < repeat; ++r)
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const std::size_t p = (k + static_cast<std::size_t>(r)) % passes.size();
      const auto t0 = std::chrono::steady_clock::now();
      passes[p]();
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      gbps[p].push_back(static_cast<double>(bytes) / dt.count() / 1e9);
    }
  std::vector<Timing> out;
  for (auto& g : gbps) out.push_back(summarize(std::move(g)));
  return out;
}

// Where each chunk lands in the destination: entries in index order, packed by raw length.
std::vector<std::uint64_t> chunk_offsets(const tet::TetFile& file) {
  std::vector<std::uint64_t> offsets;
  std::uint64_t at = 0;
  for (const auto& e : file.layout().entries) {
    offsets.push_back(at);
    at += e.raw_byte_len;
  }
  return offsets;
}

// Runs body(i) for every chunk on the arena's threads, one chunk per task.
void for_each_chunk(tbb::task_arena& arena, std::size_t chunks, const std::function<void(std::size_t)>& body) {
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) body(i);
    });
  });
}

// Median wall-clock throughput of `zstd -d` over `frames` (decompressed size `bytes`), or a
// negative value when the CLI is not available.
double zstd_cli_gbps(const fs::path& frames, std::uint64_t bytes, int repeat) {
  const std::string cmd = "zstd -q -d -c '" + frames.string() + "' > /dev/null";
  std::vector<double> gbps;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) return -1;
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    gbps.push_back(static_cast<double>(bytes) / dt.count() / 1e9);
  }
  return summarize(std::move(gbps)).median;
}

// The zstd file's payload region is its frames back to back: a valid multi-frame .zst file.
fs::path write_frames(const tet::TetFile& file, const fs::path& path) {
  const auto& entries = file.layout().entries;
  const std::uint64_t begin = entries.front().payload_offset;
  const std::uint64_t end = entries.back().payload_offset + entries.back().stored_byte_len;
  if (fs::exists(path) && fs::file_size(path) == end - begin) return path;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(file.source().view(begin, end - begin)),
            static_cast<std::streamsize>(end - begin));
  if (!out) throw std::runtime_error("cannot write " + path.string());
  return path;
}

void print_row(const char* label, const Timing& t) {
  std::printf("  %-44s %7.2f   (%.2f .. %.2f)\n", label, t.median, t.min, t.max);
}

void print_ratio(const char* label, double ratio, double target) {
  std::printf("  %-44s %7.3f   target >= %.2f  %s\n", label, ratio, target, ratio >= target ? "ok" : "BELOW TARGET");
}

int run(const Args& args) {
  fs::create_directories(args.data_dir);
  const std::uint64_t rows = rows_for(args.size_gib);
  const std::string stem = "tet-read-f32-" + std::to_string(rows) + "x1024x1024";
  const tet::TetFile raw = open_or_synth(args.data_dir / (stem + "-raw.tet"), rows, tet::Codec::Raw);
  const tet::TetFile zst = open_or_synth(args.data_dir / (stem + "-zstd3.tet"), rows, tet::Codec::Zstd);
  const auto& raw_entries = raw.layout().entries;
  const auto& zst_entries = zst.layout().entries;
  const std::uint64_t bytes = raw.datasets().at(0).logical_bytes;
  const std::size_t chunks = raw_entries.size();
  const std::vector<std::uint64_t> offsets = chunk_offsets(raw);
  if (chunk_offsets(zst) != offsets) throw std::runtime_error("raw and zstd files have different tilings");
  const std::uint64_t payload_begin = raw_entries.front().payload_offset;
  for (std::size_t i = 0; i < chunks; ++i)
    if (raw_entries[i].payload_offset != payload_begin + offsets[i])
      throw std::runtime_error("raw payloads are not packed contiguously in index order");
  std::uint64_t stored = 0;
  for (const auto& e : zst_entries) stored += e.stored_byte_len;

  // Page cache and mappings warm; destination pre-faulted so no pass pays for first touches.
  std::uint64_t sink = touch_pages(raw) + touch_pages(zst);
  std::unique_ptr<std::byte[]> dst(new std::byte[bytes]);
  std::memset(dst.get(), 0, bytes);

  tbb::task_arena arena(args.threads);
  const std::string raw_path = raw.source().name(), zst_path = zst.source().name();
  // The path the reader takes for zstd frames (read_box and the query engine choose it so).
  const tessera::io::ReadPath zstd_path =
      tessera::io::choose_read_path(zst.source(), zst_entries.front().payload_offset,
                                    zst.source().size() - zst_entries.front().payload_offset, stored)
          .chosen;

  std::vector<ZSTD_DCtx*> dctx(static_cast<std::size_t>(args.threads) + 1);  // one per arena slot
  for (auto& c : dctx) c = ZSTD_createDCtx();
  const tessera::bench::ReadOnlyFile raw_file(raw_path), zst_file(zst_path);
  const int raw_fd = raw_file.fd(), zst_fd = zst_file.fd();
  auto pread_all = [](int fd, std::byte* to, std::uint64_t len, std::uint64_t at) {
    if (::pread(fd, to, len, static_cast<off_t>(at)) != static_cast<ssize_t>(len))
      throw std::runtime_error("a pread came back short");
  };
  std::uint64_t largest_frame = 0;
  for (const auto& e : zst_entries) largest_frame = std::max(largest_frame, e.stored_byte_len);
  std::vector<std::vector<std::byte>> frame_buffer(dctx.size(), std::vector<std::byte>(largest_frame));
  const std::vector<Timing> t = measure(
      bytes, args.repeat,
      {[&] {  // (a) one contiguous share per thread, as a plain parallel copy would do it
         const Mapping map(raw_path);
         const std::byte* raw_payload = map.data() + payload_begin;
         std::vector<std::thread> threads;
         const std::uint64_t share = (bytes + args.threads - 1) / args.threads;
         for (int k = 0; k < args.threads; ++k) {
           const std::uint64_t lo = std::min(bytes, share * k), hi = std::min(bytes, lo + share);
           threads.emplace_back([&, lo, hi] { std::memcpy(dst.get() + lo, raw_payload + lo, hi - lo); });
         }
         for (auto& th : threads) th.join();
       },
       [&] {  // (a')
         const Mapping map(raw_path);
         const std::byte* raw_payload = map.data() + payload_begin;
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           std::memcpy(dst.get() + offsets[i], raw_payload + offsets[i], raw_entries[i].raw_byte_len);
         });
       },
       [&] {  // (a'')
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           pread_all(raw_fd, dst.get() + offsets[i], raw_entries[i].raw_byte_len, raw_entries[i].payload_offset);
         });
       },
       [&] {  // (b)
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           raw.decode_chunk(static_cast<std::uint32_t>(i), {dst.get() + offsets[i], raw_entries[i].raw_byte_len});
         });
       },
       [&] {  // (c)
         const Mapping map(zst_path);
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           const auto& e = zst_entries[i];
           ZSTD_DCtx* ctx = dctx[static_cast<std::size_t>(tbb::this_task_arena::current_thread_index())];
           const std::size_t n = ZSTD_decompressDCtx(ctx, dst.get() + offsets[i], e.raw_byte_len,
                                                     map.data() + e.payload_offset, e.stored_byte_len);
           if (ZSTD_isError(n) || n != e.raw_byte_len) throw std::runtime_error("zstd frame failed to decode");
         });
       },
       [&] {  // (c'')
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           const auto& e = zst_entries[i];
           const auto slot = static_cast<std::size_t>(tbb::this_task_arena::current_thread_index());
           std::byte* frame = frame_buffer[slot].data();
           pread_all(zst_fd, frame, e.stored_byte_len, e.payload_offset);
           const std::size_t n =
               ZSTD_decompressDCtx(dctx[slot], dst.get() + offsets[i], e.raw_byte_len, frame, e.stored_byte_len);
           if (ZSTD_isError(n) || n != e.raw_byte_len) throw std::runtime_error("zstd frame failed to decode");
         });
       },
       [&] {  // (d)
         for_each_chunk(arena, chunks, [&](std::size_t i) {
           zst.decode_chunk(static_cast<std::uint32_t>(i), {dst.get() + offsets[i], zst_entries[i].raw_byte_len},
                            zstd_path);
         });
       }});
  for (auto* c : dctx) ZSTD_freeDCtx(c);
  const Timing &memcpy_t = t[0], &chunked_memcpy_t = t[1], &pread_t = t[2], &raw_t = t[3], &zstd_t = t[4],
               &pread_zstd_t = t[5], &tet_zstd_t = t[6];
  const double copy_limit = std::max(chunked_memcpy_t.median, pread_t.median);
  const double zstd_limit = std::max(zstd_t.median, pread_zstd_t.median);
  double cli = -1;
  if (args.run_cli) cli = zstd_cli_gbps(write_frames(zst, args.data_dir / (stem + "-frames.zst")), bytes, 3);
  sink += std::to_integer<unsigned>(dst[bytes / 2]);

  const auto& ds = raw.datasets().at(0);
  std::printf(
      "\ntet-read: f32 %llux1024x1024 = %.2f GiB, %zu chunks of %.1f MiB (16x256x256), %d threads, "
      "median of %d passes\n",
      static_cast<unsigned long long>(ds.shape[0]), static_cast<double>(bytes) / (1ull << 30), chunks,
      static_cast<double>(raw_entries.front().raw_byte_len) / (1 << 20), args.threads, args.repeat);
  std::printf("zstd level 3 file: %.3f of raw size; everything from the page cache into one pre-faulted buffer\n\n",
              static_cast<double>(stored) / static_cast<double>(bytes));
  std::printf("  %-44s %7s   %s\n", "measurement", "GB/s", "(min .. max)");
  print_row("(a) memcpy from the mmap, two halves", memcpy_t);
  print_row("(a') memcpy from the mmap, per chunk", chunked_memcpy_t);
  print_row("(a'') pread per chunk", pread_t);
  print_row("(b) TetFile::decode_chunk, raw chunks", raw_t);
  print_row("(c) ZSTD_decompressDCtx on the mapped frames", zstd_t);
  print_row("(c'') the same on frames read by pread", pread_zstd_t);
  print_row("(d) TetFile::decode_chunk, zstd chunks", tet_zstd_t);
  std::printf("  %-44s %7s\n", "(d) read path (io::choose_read_path)",
              std::string(tessera::io::read_path_name(zstd_path)).c_str());
  print_ratio("b/a (raw decode vs memcpy)", raw_t.median / memcpy_t.median, 0.80);
  print_ratio("b/max(a',a'') (raw decode vs faster copy)", raw_t.median / copy_limit, 0.80);
  print_ratio("d/max(c,c'') (zstd decode vs faster libzstd)", tet_zstd_t.median / zstd_limit, 0.85);
  if (cli > 0)
    std::printf("  %-44s %7.2f   (context: one thread, whole process)\n", "zstd -d CLI, concatenated frames", cli);
  std::printf("\n(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_tet_read", [&] { return run(parse_args(argc, argv)); });
}
