// Baselines for `scripts/bench.sh tet-query` (docs/performance.md): the bare operations a whole
// `tessera tet query … -x -q` process is measured against. Each mode is one whole process, timed
// from outside by scripts/bench_tet_query.sh exactly like the query, so startup, opening the file
// and mapping its pages are paid by both sides.
//
//   bench_tet_query layout FILE DATASET
//       Prints where the dataset's payload lives, from the footer and chunk index read through
//       the library: `dtype`, `shape`, `codec`, `logical_order` (1 when the raw payloads lie
//       back to back in logical row-major order, so one np.memmap at `payload_offset` is the
//       array), `payload_offset`, `payload_bytes`, then one `frame OFFSET STORED RAW` line per
//       chunk in index order (the zstd frames python-zstandard decompresses).
//   bench_tet_query sum FILE DATASET [--threads T]
//       A plain T-thread sum of the dataset's raw f32 payload bytes over a fresh mmap(2) of the
//       file: threads take 4 MiB blocks from a shared counter and sum them as f64 with eight
//       independent accumulators. Prints the sum and the mean.
//   bench_tet_query psum FILE DATASET [--threads T]
//       The same sum through pread(2): threads take 1 MiB blocks from a shared counter and read
//       each into one reused, cache-sized buffer per thread. Touching mapped page-cache pages
//       costs several times more than copying them out on some machines and less on others, so
//       the scan limit is the faster of `sum` and `psum`, measured side by side.
//   bench_tet_query unzstd FILE DATASET [--threads T]
//       ZSTD_decompressDCtx of every chunk's frame straight from a fresh mmap(2), T threads taking
//       chunks from a shared counter, one context and one reused output buffer per thread, the
//       output discarded. Prints the decoded byte count.
//   bench_tet_query punzstd FILE DATASET [--threads T]
//       The same with each frame first read by pread(2) into one reused buffer per thread: the
//       zstd limit is the faster of the two, for the same reason as the scan limit.
//   bench_tet_query evict FILE
//       Drops FILE's pages from the page cache (posix_fadvise DONTNEED), so the next read of it is
//       a cold one, without privileges.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet/reader.hpp"

namespace {

namespace tet = tessera::tet;

constexpr std::uint64_t kBlockBytes = 4ull << 20;
constexpr std::uint64_t kPreadBlockBytes = 1ull << 20;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_tet_query: %s\nusage: bench_tet_query layout FILE DATASET\n"
               "       bench_tet_query sum|psum FILE DATASET [--threads T]\n"
               "       bench_tet_query unzstd|punzstd FILE DATASET [--threads T]\n"
               "       bench_tet_query evict FILE\n",
               why.c_str());
  std::exit(2);
}

struct Args {
  std::string mode, file, dataset;
  unsigned threads = 2;
};

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads") {
      if (i + 1 >= argc) usage("--threads needs a value");
      const int t = std::atoi(argv[++i]);
      if (t < 1) usage("--threads must be positive");
      a.threads = static_cast<unsigned>(t);
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown argument " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() == 2 && positional[0] == "evict") {
    a.mode = positional[0];
    a.file = positional[1];
    return a;
  }
  if (positional.size() != 3) usage("expected MODE FILE DATASET");
  a.mode = positional[0];
  a.file = positional[1];
  a.dataset = positional[2];
  if (a.mode != "layout" && a.mode != "sum" && a.mode != "psum" && a.mode != "unzstd" && a.mode != "punzstd")
    usage("unknown mode " + a.mode);
  return a;
}

// The dataset's index entries in chunk-grid (row-major) order.
std::vector<tet::ChunkEntry> entries_of(const tet::TetFile& file, const tet::Dataset& ds) {
  std::vector<tet::ChunkEntry> out;
  for (std::uint32_t e : ds.entry_of_chunk) out.push_back(file.entry(e));
  return out;
}

using tessera::bench::Mapping;
using tessera::bench::ReadOnlyFile;

// The payload of a file read one of the two ways the limits compare: through a fresh map, or by
// pread(2) from a plain descriptor.
struct PayloadAccess {
  PayloadAccess(const std::string& path, bool through_pread) {
    if (through_pread) file = std::make_unique<ReadOnlyFile>(path);
    else map = std::make_unique<Mapping>(path);
  }
  std::unique_ptr<Mapping> map;
  std::unique_ptr<ReadOnlyFile> file;
};

// Runs body(thread) on `threads` std::threads and joins them.
template <typename Body>
void on_threads(unsigned threads, Body&& body) {
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&, t] { body(t); });
  for (auto& th : pool) th.join();
}

// Eight independent f64 accumulators (the compiler keeps them in SIMD registers), combined
// pairwise at the end.
double sum_f32(const std::byte* bytes, std::size_t n) {
  const float* p = reinterpret_cast<const float*>(bytes);  // payloads are element-aligned in the map
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += static_cast<double>(p[i]);
    s1 += static_cast<double>(p[i + 1]);
    s2 += static_cast<double>(p[i + 2]);
    s3 += static_cast<double>(p[i + 3]);
    s4 += static_cast<double>(p[i + 4]);
    s5 += static_cast<double>(p[i + 5]);
    s6 += static_cast<double>(p[i + 6]);
    s7 += static_cast<double>(p[i + 7]);
  }
  for (; i < n; ++i) s0 += static_cast<double>(p[i]);
  return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

int layout(const tet::TetFile& file, const tet::Dataset& ds) {
  const auto entries = entries_of(file, ds);
  std::uint64_t begin = entries.empty() ? 0 : entries.front().payload_offset, next = begin, total = 0;
  bool logical = !entries.empty();
  for (std::size_t d = 1; d < ds.ndim(); ++d)
    if (ds.chunk_shape[d] < ds.shape[d]) logical = false;  // tiles cut inner axes
  for (const auto& e : entries) {
    if (e.codec != 0 || e.payload_offset != next) logical = false;
    next = e.payload_offset + e.stored_byte_len;
    total += e.stored_byte_len;
  }
  std::printf("dtype %s\nshape", std::string(tessera::dtype_info(ds.dtype).name).c_str());
  for (auto s : ds.shape) std::printf(" %llu", static_cast<unsigned long long>(s));
  std::printf("\ncodec %s\nlogical_order %d\npayload_offset %llu\npayload_bytes %llu\n",
              !entries.empty() && entries.front().codec == 1 ? "zstd" : "raw", logical ? 1 : 0,
              static_cast<unsigned long long>(begin), static_cast<unsigned long long>(total));
  for (const auto& e : entries)
    std::printf("frame %llu %llu %llu\n", static_cast<unsigned long long>(e.payload_offset),
                static_cast<unsigned long long>(e.stored_byte_len), static_cast<unsigned long long>(e.raw_byte_len));
  return 0;
}

struct Block {
  std::uint64_t offset, bytes;
};

// The dataset's raw payload byte ranges, cut into blocks of at most `block_bytes`.
std::vector<Block> payload_blocks(const tet::TetFile& file, const tet::Dataset& ds, std::uint64_t block_bytes) {
  if (ds.dtype != tessera::DType::F32) throw std::runtime_error("sum: the dataset must be f32");
  std::vector<Block> blocks;
  for (const auto& e : entries_of(file, ds)) {
    if (e.codec != 0) throw std::runtime_error("sum: every chunk must be raw");
    if (e.payload_offset % 4 != 0) throw std::runtime_error("sum: a payload is not 4-byte aligned");
    for (std::uint64_t at = 0; at < e.raw_byte_len; at += block_bytes)
      blocks.push_back({e.payload_offset + at, std::min(block_bytes, e.raw_byte_len - at)});
  }
  return blocks;
}

int sum(const Args& args, const tet::TetFile& file, const tet::Dataset& ds) {
  const bool through_pread = args.mode == "psum";
  const std::vector<Block> blocks = payload_blocks(file, ds, through_pread ? kPreadBlockBytes : kBlockBytes);
  const PayloadAccess access(args.file, through_pread);
  std::vector<double> partial(blocks.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> short_read{false};
  on_threads(args.threads, [&](unsigned) {
    std::vector<float> buffer(through_pread ? kPreadBlockBytes / 4 : 0);
    for (std::size_t b; (b = next.fetch_add(1)) < blocks.size();) {
      if (!through_pread) {
        partial[b] = sum_f32(access.map->data() + blocks[b].offset, blocks[b].bytes / 4);
        continue;
      }
      const auto n = ::pread(access.file->fd(), buffer.data(), blocks[b].bytes, static_cast<off_t>(blocks[b].offset));
      if (n != static_cast<ssize_t>(blocks[b].bytes)) short_read = true;
      partial[b] = sum_f32(reinterpret_cast<const std::byte*>(buffer.data()), blocks[b].bytes / 4);
    }
  });
  if (short_read) throw std::runtime_error("psum: a pread came back short");
  double s = 0;
  for (double p : partial) s += p;
  std::printf("sum %.17g mean %.17g elements %llu\n", s, s / static_cast<double>(ds.element_count),
              static_cast<unsigned long long>(ds.element_count));
  return 0;
}

int unzstd(const Args& args, const tet::TetFile& file, const tet::Dataset& ds) {
  const auto entries = entries_of(file, ds);
  std::uint64_t largest = 0, largest_frame = 0;
  for (const auto& e : entries) {
    if (e.codec != 1) throw std::runtime_error("unzstd: every chunk must be zstd");
    largest = std::max(largest, e.raw_byte_len);
    largest_frame = std::max(largest_frame, e.stored_byte_len);
  }
  const bool through_pread = args.mode == "punzstd";
  const PayloadAccess access(args.file, through_pread);
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> decoded{0};
  std::atomic<bool> failed{false};
  on_threads(args.threads, [&](unsigned) {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    std::unique_ptr<std::byte[]> out(new std::byte[largest]);
    std::unique_ptr<std::byte[]> frame(new std::byte[through_pread ? largest_frame : 0]);
    std::uint64_t mine = 0;
    for (std::size_t k; (k = next.fetch_add(1)) < entries.size();) {
      const auto& e = entries[k];
      const std::byte* src = nullptr;
      if (through_pread) {
        if (::pread(access.file->fd(), frame.get(), e.stored_byte_len, static_cast<off_t>(e.payload_offset)) !=
            static_cast<ssize_t>(e.stored_byte_len))
          failed = true;
        src = frame.get();
      } else {
        src = access.map->data() + e.payload_offset;
      }
      const std::size_t n = ZSTD_decompressDCtx(ctx, out.get(), largest, src, e.stored_byte_len);
      if (ZSTD_isError(n) || n != e.raw_byte_len) failed = true;
      mine += n;
    }
    ZSTD_freeDCtx(ctx);
    decoded += mine;
  });
  if (failed) throw std::runtime_error("unzstd: a frame failed to read or decode");
  std::printf("decoded %llu bytes in %zu frames\n", static_cast<unsigned long long>(decoded.load()), entries.size());
  return 0;
}

int evict(const Args& args) {
  const ReadOnlyFile file(args.file);
  if (::posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED) != 0)
    throw std::runtime_error("posix_fadvise DONTNEED failed on " + args.file);
  return 0;
}

int run(const Args& args) {
  if (args.mode == "evict") return evict(args);
  const tet::TetFile file = tet::TetFile::open(args.file);
  const tet::Dataset* ds = file.find(args.dataset);
  if (!ds) throw std::runtime_error("no dataset " + args.dataset + " in " + args.file);
  if (args.mode == "layout") return layout(file, *ds);
  if (args.mode == "sum" || args.mode == "psum") return sum(args, file, *ds);
  return unzstd(args, file, *ds);
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_tet_query", [&] { return run(parse_args(argc, argv)); });
}
