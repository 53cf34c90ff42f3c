// Decoding deltacells tiles, side by side with what libzstd alone needs for the same frames
// (docs/performance.md).
//
// The tile (written once into DATA_DIR/cells-bench/, seeded and deterministic): 10,000 cells ×
// 38,000 genes, version 2, 8 chunks, zstd level 19. Genes are numbered by popularity rank r
// (as a converter's gene order stores them) with weight w_r = 1 / (r + 20) (Zipf-like). Each
// cell draws a depth factor d ~ log-normal(0, 0.35) and includes gene r with probability
// min(1, s · d · w_r), s chosen so a cell of d = 1 holds about 5,000 genes; an included gene's
// count is 1 + NB(k = 2, mean = 6 · d · sqrt(w_r / w_0)) (gamma-Poisson). The generator is
// SplitMix64 words fed to libstdc++'s std::lognormal_distribution and
// std::negative_binomial_distribution, one std::mt19937_64 seeded 20240611 per run.
// The 100-tile dataset beside it links the same tile object 100 times under one manifest.
//
//   (a) decode:  Tile::decode of the whole tile into int32 buffers, 1 thread;
//   (b) zstd:    ZSTD-decompress every frame of the same tile into scratch, 1 thread — the floor;
//   (c) decode2: (a) with 2 threads;
//   (d) epoch:   EpochIterator batches of 5,000 cells (int32 values, 1 decode thread) over the
//                100-tile dataset, `--batches` batches per round into one reused EpochBatch
//                (`next(EpochBatch&)`), per cell against (a);
//                The iterator decodes the next tile ahead on a background thread (the default);
//   (g) epoch, no decode-ahead: (d) with `decode_ahead = false`, every decode on the caller;
//   (e) epoch, fresh: (d) through the value-returning `next()`, a new batch every call;
//   (f) memset: writing (a)'s output buffers (8 bytes per nonzero) and nothing else — with (b),
//                the floor of (a): zstd's own output stays in cache, the decoded tile cannot.
//
// Targets: (a)/(b) ≤ 1.2, (a)/(c) ≥ 1.6, (d) per-cell rate ≥ 80 % of (a). Medians of R rounds.
// Each pass also reports the process CPU seconds it took (all threads, fetch threads included):
// on a loaded machine (c) may not run faster, but CPU/wall above 1 shows it ran in parallel. The
// load average is printed before and after.
//
// Usage: bench_cells --data-dir DIR [--repeat R] [--batches B]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/epoch.hpp"
#include "tessera/cells/manifest.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/cells/tile_encoder.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

constexpr std::uint64_t kCells = 10000, kGenes = 38000, kTiles = 100;
constexpr std::uint32_t kChunks = 8;
constexpr int kLevel = 19;

struct Args {
  fs::path data_dir;
  int repeat = 5;
  int batches = 40;
};

using tessera::bench::median;
using tessera::bench::seconds_since;

// CPU time of the whole process (every thread).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

// Wall and CPU seconds of the rounds of one pass.
struct Pass {
  std::vector<double> wall, cpu;
  template <typename F>
  void time(F&& f) {
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    wall.push_back(seconds_since(t0));
    cpu.push_back(cpu_seconds() - c0);
  }
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--data-dir") a.data_dir = next();
    else if (arg == "--repeat") a.repeat = std::max(1, std::stoi(next()));
    else if (arg == "--batches") a.batches = std::max(1, std::stoi(next()));
    else throw UsageError("unknown argument " + arg + " (usage: bench_cells --data-dir DIR [--repeat R] [--batches B])");
  }
  if (a.data_dir.empty()) throw UsageError("--data-dir is required");
  return a;
}

// The synthetic tile of the file header.
std::vector<std::byte> synthesize_tile() {
  std::mt19937_64 rng(20240611);
  std::vector<double> w(kGenes);
  double sum_w = 0;
  for (std::uint64_t r = 0; r < kGenes; ++r) sum_w += (w[r] = 1.0 / (static_cast<double>(r) + 20.0));
  double s = 5000.0 / sum_w;  // refine so that sum min(1, s w) ≈ 5000
  for (int it = 0; it < 30; ++it) {
    double n = 0;
    for (double x : w) n += std::min(1.0, s * x);
    s *= 5000.0 / n;
  }
  std::lognormal_distribution<double> depth(0.0, 0.35);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int64_t> indptr{0};
  std::vector<std::uint32_t> genes, counts;
  genes.reserve(kCells * 5200);
  counts.reserve(kCells * 5200);
  for (std::uint64_t c = 0; c < kCells; ++c) {
    const double d = depth(rng);
    for (std::uint64_t r = 0; r < kGenes; ++r) {
      if (unit(rng) >= std::min(1.0, s * d * w[r])) continue;
      const double mean = 6.0 * d * std::sqrt(w[r] / w[0]);
      std::negative_binomial_distribution<int> nb(2, 2.0 / (2.0 + mean));
      genes.push_back(static_cast<std::uint32_t>(r));
      counts.push_back(1 + static_cast<std::uint32_t>(nb(rng)));
    }
    indptr.push_back(static_cast<std::int64_t>(genes.size()));
  }
  return cells::encode_tile({indptr, genes, counts, kGenes},
                            {.version = 2, .level = kLevel, .n_chunks = kChunks, .threads = 2, .name = "bench tile"});
}

// The tile (generated once) and a 100-tile dataset linking it.
fs::path prepare(const fs::path& dir) {
  const fs::path tile = dir / "tile.dct";
  if (!fs::exists(tile)) {
    std::printf("generating the synthetic tile in %s (level %d, takes a minute) …\n", tile.c_str(), kLevel);
    std::fflush(stdout);
    fs::create_directories(dir);
    io::write_file_atomic(tile.string(), synthesize_tile());
  }
  const fs::path ds = dir / "dataset";
  if (!fs::exists(ds / "manifest.json")) {
    const cells::Tile t = cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_file(tile.string())));
    fs::create_directories(ds / "tiles");
    cells::Manifest m;
    m.version = 2;
    m.n_cells = kCells * kTiles;
    m.n_genes = kGenes;
    m.tile_size = kCells;
    m.n_chunks = kChunks;
    m.zstd_level = kLevel;
    for (std::uint64_t i = 0; i < kTiles; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "tile_%06llu.dct", static_cast<unsigned long long>(i));
      fs::remove(ds / "tiles" / name);
      fs::create_hard_link(tile, ds / "tiles" / name);
      m.tile_cells.push_back(kCells);
      m.tile_nnz.push_back(t.nnz());
      m.tile_bytes.push_back(t.size());
    }
    const std::string text = m.serialize();
    io::write_file_atomic((ds / "manifest.json").string(), {reinterpret_cast<const std::byte*>(text.data()), text.size()});
  }
  return ds;
}

int run(const Args& args) {
  const fs::path dir = args.data_dir / "cells-bench";
  const fs::path ds_path = prepare(dir);
  const cells::Tile tile =
      cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_file((dir / "tile.dct").string())));
  const auto nnz = tile.nnz();
  std::vector<std::int32_t> indices(nnz), values(nnz);
  std::vector<std::byte> scratch(tile.max_chunk_nnz() * 4 + 64);
  const auto bytes = tile.bytes();
  auto ds = cells::Dataset::open(ds_path.string(), {.max_cached_tiles = 2, .max_prefetch_tiles = 4, .io_threads = 1,
                                                    .decode_threads = 1});
  Pass a, b, c, d, e, f, g;
  std::uint64_t epoch_cells = 0, epoch_nnz = 0, fresh_cells = 0;
  std::uint64_t tiles_per_round = 0;
  const std::string load_before = load_average();
  cells::EpochBatch reused;  // grows in the first round, reused ever after
  for (int round = 0; round < args.repeat; ++round) {
    a.time([&] { tile.decode(indices, values, {.threads = 1}); });

    b.time([&] {
      for (const auto& ch : tile.chunks()) {
        // gaps and vals decode to 2 bytes per nonzero; the (rare, small) exception frames to
        // whatever they declare.
        for (const cells::FrameRef* f : {&ch.gaps, &ch.vals})
          codec::zstd_decompress_into(bytes.subspan(f->off, f->len), std::span(scratch).first(2 * ch.n()));
        for (const cells::FrameRef* f : {&ch.vexc, &ch.gexc})
          if (f->len != 0) (void)codec::zstd_decompress_capped(bytes.subspan(f->off, f->len), std::uint64_t{1} << 30);
      }
    });

    c.time([&] { tile.decode(indices, values, {.threads = 2}); });

    // The other floor of (a): writing its 8 bytes of output per nonzero at all.
    f.time([&] {
      std::memset(indices.data(), round, indices.size() * sizeof(std::int32_t));
      std::memset(values.data(), round, values.size() * sizeof(std::int32_t));
    });

    // Epochs 2r and 2r+1: every pass and round visits its own tile order from a cold start of
    // the iterator (the decoded-tile cache may hold the previous pass's last tiles).
    const auto decoded_before = ds->stats().tiles_decoded;
    cells::EpochIterator it(*ds, 5000, {.seed = 7, .values = cells::Values::Int32});
    it.set_epoch(2 * static_cast<std::uint64_t>(round));
    epoch_cells = epoch_nnz = 0;
    d.time([&] {
      for (int k = 0; k < args.batches && it.next(reused); ++k) {
        epoch_cells += reused.cells.size();
        epoch_nnz += reused.batch.nnz();
      }
    });
    tiles_per_round = ds->stats().tiles_decoded - decoded_before;

    cells::EpochIterator inline_decode(*ds, 5000, {.seed = 7, .values = cells::Values::Int32, .decode_ahead = false});
    inline_decode.set_epoch(2 * static_cast<std::uint64_t>(round) + 1);
    g.time([&] {
      for (int k = 0; k < args.batches && inline_decode.next(reused); ++k) {
      }
    });

    cells::EpochIterator fresh(*ds, 5000, {.seed = 7, .values = cells::Values::Int32});
    fresh.set_epoch(2 * static_cast<std::uint64_t>(round) + 1);
    fresh_cells = 0;
    e.time([&] {
      for (int k = 0; k < args.batches; ++k) {
        auto batch = fresh.next();
        if (!batch) break;
        fresh_cells += batch->cells.size();
      }
    });
  }
  const double ta = median(a.wall), tb = median(b.wall), tc = median(c.wall), td = median(d.wall), te = median(e.wall),
               tg = median(g.wall);
  const double n = static_cast<double>(nnz), cells_n = static_cast<double>(kCells);
  std::printf("tile: %llu cells x %llu genes, %llu nonzeros (%.0f per cell), %.1f MB = %.3f bytes per nonzero\n",
              static_cast<unsigned long long>(kCells), static_cast<unsigned long long>(kGenes),
              static_cast<unsigned long long>(nnz), n / cells_n, static_cast<double>(tile.size()) / 1e6,
              static_cast<double>(tile.size()) / n);
  std::printf("%d rounds, medians; load average before %s, after %s\n", args.repeat, load_before.c_str(),
              load_average().c_str());
  const auto line = [](const char* label, const Pass& p, double cells, double nz) {
    const double secs = median(p.wall), cpu = median(p.cpu);
    std::printf("%-30s %8.3f s  %10.0f cells/s  %8.1f M nonzeros/s  CPU %7.3f s (%.2f x wall)\n", label, secs,
                cells / secs, nz / secs / 1e6, cpu, cpu / secs);
  };
  line("(a) decode, 1 thread", a, cells_n, n);
  line("(b) zstd-decompress only", b, cells_n, n);
  line("(c) decode, 2 threads", c, cells_n, n);
  line("(f) memset of (a)'s output", f, cells_n, n);
  line("(d) epoch, 5000-cell batches", d, static_cast<double>(epoch_cells), static_cast<double>(epoch_nnz));
  line("(g) epoch, no decode-ahead", g, static_cast<double>(epoch_cells), static_cast<double>(epoch_nnz));
  line("(e) epoch, fresh batches", e, static_cast<double>(fresh_cells),
       static_cast<double>(epoch_nnz) * static_cast<double>(fresh_cells) / static_cast<double>(epoch_cells));
  const cells::DatasetStats st = ds->stats();
  std::printf("    epochs, all rounds: %llu tiles fetched (%.2f s, %.2f s stalled), %llu decoded (%.2f s, %llu cache hits);"
              " %llu tiles decoded for the %llu cells of the last (d) round\n",
              static_cast<unsigned long long>(st.tiles_fetched), st.fetch_seconds, st.stall_seconds,
              static_cast<unsigned long long>(st.tiles_decoded), st.decode_seconds,
              static_cast<unsigned long long>(st.decoded_cache_hits), static_cast<unsigned long long>(tiles_per_round),
              static_cast<unsigned long long>(epoch_cells));
  std::printf("decode / zstd-only time (a/b):                 %.2f   (target <= 1.20)\n", ta / tb);
  std::printf("2 threads speed-up (a/c):                      %.2f   (target >= 1.60; CPU/wall of (c) %.2f)\n", ta / tc,
              median(c.cpu) / tc);
  std::printf("epoch per-cell rate / full-tile decode (d/a):  %.0f %%  (target >= 80 %%)\n",
              100.0 * (static_cast<double>(epoch_cells) / td) / (cells_n / ta));
  std::printf("  without decode-ahead (g/a):                  %.0f %%\n",
              100.0 * (static_cast<double>(epoch_cells) / tg) / (cells_n / ta));
  std::printf("  with fresh batches (e/a):                    %.0f %%\n",
              100.0 * (static_cast<double>(fresh_cells) / te) / (cells_n / ta));
  // The same ratios from CPU seconds, which a busy machine distorts less than wall time.
  const double ca = median(a.cpu), cb = median(b.cpu), cd = median(d.cpu);
  std::printf("by CPU seconds: a/b %.2f, d/a per cell %.0f %%\n", ca / cb,
              100.0 * (static_cast<double>(epoch_cells) / cd) / (cells_n / ca));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_cells", [&] { return run(parse_args(argc, argv)); });
}
