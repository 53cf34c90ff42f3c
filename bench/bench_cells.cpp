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
//   (n) narrow:  Tile::decode_narrow of the whole tile into uint16 buffers (the form the
//                dataset's decoded-tile cache keeps), 1 thread;
//   (b) zstd:    ZSTD-decompress every frame of the same tile into scratch, 1 thread — the floor;
//   (c) decode2: (a) with 2 threads; (m) the same for (n);
//   (f) memset:  writing (a)'s output buffers (8 bytes per nonzero) and nothing else — with (b),
//                the floor of (a): zstd's own output stays in cache, the decoded tile cannot;
//   (h) memset:  the same for (n)'s output buffers (4 bytes per nonzero) — with (b), the floor
//                of (n);
//   (d) epoch:   EpochIterator batches of 5,000 cells (int32 values, 1 decode thread) over the
//                100-tile dataset, `--batches` batches per round into one reused EpochBatch
//                (`next(EpochBatch&)`), per cell against (a). The iterator decodes the next
//                tile ahead on a background thread (the default) into narrow decoded tiles;
//   (w) epoch, int32 tiles: (d) with `narrow_tiles = false`;
//   (g) epoch, no decode-ahead: (d) with `decode_ahead = false`, every decode on the caller;
//   (e) epoch, fresh: (d) through the value-returning `next()`, a new batch every call;
//   (i) gather: get_batch of all 10,000 cells of a tile already decoded (no decoding), in order
//                and shuffled, from narrow and from int32 decoded tiles.
//
// Targets: (a)/(b) ≤ 1.2, (a)/(c) ≥ 1.6, (d) per-cell rate ≥ 80 % of (a).
// The machine is shared, so every ratio is taken within one round (its passes run back to back)
// and the median over rounds is reported; a/b/n/c/f run 3 rounds for each epoch round. Each
// pass also reports the process CPU seconds it took (all threads, fetch threads included): on a
// loaded machine (c) may not run faster, but CPU/wall above 1 shows it ran in parallel. The load
// average is printed before and after.
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
#include <numeric>
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
    else
      throw UsageError("unknown argument " + arg + " (usage: bench_cells --data-dir DIR [--repeat R] [--batches B])");
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
    io::write_file_atomic((ds / "manifest.json").string(),
                          {reinterpret_cast<const std::byte*>(text.data()), text.size()});
  }
  return ds;
}

// The median over rounds of x[i] / y[i] · scale[i] (scale empty: 1).
double ratio(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& scale = {}) {
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    r.push_back(x[i] / y[i] * (scale.empty() ? 1 : scale[i]));
  return median(r);
}

int run(const Args& args) {
  const fs::path dir = args.data_dir / "cells-bench";
  const fs::path ds_path = prepare(dir);
  const cells::Tile tile =
      cells::Tile::parse(std::shared_ptr<const io::ByteSource>(io::open_file((dir / "tile.dct").string())));
  const auto nnz = tile.nnz();
  std::vector<std::int32_t> indices(nnz), values(nnz);
  std::vector<std::uint16_t> genes16(nnz), counts16(nnz);
  std::vector<cells::WideCount> wide_counts;
  std::vector<std::byte> scratch(tile.max_chunk_nnz() * 4 + 64);
  const auto bytes = tile.bytes();
  const cells::OpenOptions open_options{
      .max_cached_tiles = 2, .max_prefetch_tiles = 4, .io_threads = 1, .decode_threads = 1};
  auto ds = cells::Dataset::open(ds_path.string(), open_options);
  cells::OpenOptions wide_options = open_options;
  wide_options.narrow_tiles = false;
  auto ds_wide = cells::Dataset::open(ds_path.string(), wide_options);
  Pass a, n, b, c, m, f, h, d, w, g, e;
  Pass gather_in_order[2], gather_shuffled[2];  // [0] narrow, [1] int32 decoded tiles
  std::vector<std::int64_t> tile_cells(kCells);
  std::iota(tile_cells.begin(), tile_cells.end(), std::int64_t{0});
  std::vector<std::int64_t> shuffled_cells = tile_cells;
  std::shuffle(shuffled_cells.begin(), shuffled_cells.end(), std::mt19937_64(3));
  cells::SparseBatch gathered;
  std::vector<double> a_epoch;                             // (a) of each epoch round, the reference of its epoch ratios
  std::vector<double> d_cells, w_cells, g_cells, e_cells;  // per-round cell counts
  std::uint64_t epoch_cells = 0, epoch_nnz = 0, last_nnz = 0, tiles_per_round = 0;
  const std::string load_before = load_average();
  cells::EpochBatch reused;  // grows in the first round, reused ever after
  // Batches of one epoch pass into `reused` (or fresh ones); returns the cells read.
  const auto epoch_pass = [&](Pass& p, cells::Dataset& on, std::uint64_t epoch, bool ahead, bool fresh) {
    cells::EpochIterator it(on, 5000, {.seed = 7, .values = cells::Values::Int32, .decode_ahead = ahead});
    it.set_epoch(epoch);
    std::uint64_t got = 0, got_nnz = 0;
    p.time([&] {
      for (int k = 0; k < args.batches; ++k) {
        if (fresh) {
          auto batch = it.next();
          if (!batch) break;
          got += batch->cells.size();
          got_nnz += batch->batch.nnz();
        } else {
          if (!it.next(reused)) break;
          got += reused.cells.size();
          got_nnz += reused.batch.nnz();
        }
      }
    });
    last_nnz = got_nnz;
    return static_cast<double>(got);
  };
  for (int round = 0; round < 3 * args.repeat; ++round) {
    a.time([&] { tile.decode(indices, values, {.threads = 1}); });
    n.time([&] { tile.decode_narrow(genes16, counts16, wide_counts, {.threads = 1}); });
    b.time([&] {
      for (const auto& ch : tile.chunks()) {
        // gaps and vals decode to 2 bytes per nonzero; the (rare, small) exception frames to
        // whatever they declare.
        for (const cells::FrameRef* fr : {&ch.gaps, &ch.vals})
          codec::zstd_decompress_into(bytes.subspan(fr->off, fr->len), std::span(scratch).first(2 * ch.n()));
        for (const cells::FrameRef* fr : {&ch.vexc, &ch.gexc})
          if (fr->len != 0)
            (void)codec::zstd_decompress_capped(bytes.subspan(fr->off, fr->len), std::uint64_t{1} << 30);
      }
    });
    c.time([&] { tile.decode(indices, values, {.threads = 2}); });
    m.time([&] { tile.decode_narrow(genes16, counts16, wide_counts, {.threads = 2}); });
    f.time([&] {
      std::memset(indices.data(), round, indices.size() * sizeof(std::int32_t));
      std::memset(values.data(), round, values.size() * sizeof(std::int32_t));
    });
    h.time([&] {
      std::memset(genes16.data(), round, genes16.size() * sizeof(std::uint16_t));
      std::memset(counts16.data(), round, counts16.size() * sizeof(std::uint16_t));
    });
    for (int form = 0; form < 2; ++form) {
      cells::Dataset& on = form == 0 ? *ds : *ds_wide;
      on.get_batch(tile_cells, cells::Values::Int32, gathered);  // decodes tile 0 once (LRU)
      gather_in_order[form].time([&] { on.get_batch(tile_cells, cells::Values::Int32, gathered); });
      gather_shuffled[form].time([&] { on.get_batch(shuffled_cells, cells::Values::Int32, gathered); });
    }
    if (round % 3 != 2) continue;
    // An epoch round: each pass visits its own tile order from a cold start of its iterator (the
    // decoded-tile cache may hold the previous pass's last tiles), right after one more (a).
    const auto r = static_cast<std::uint64_t>(round / 3);
    Pass a_here;
    a_here.time([&] { tile.decode(indices, values, {.threads = 1}); });
    a_epoch.push_back(a_here.wall.back());
    const auto decoded_before = ds->stats().tiles_decoded;
    d_cells.push_back(epoch_pass(d, *ds, 4 * r, true, false));
    tiles_per_round = ds->stats().tiles_decoded - decoded_before;
    epoch_cells = static_cast<std::uint64_t>(d_cells.back());
    epoch_nnz = last_nnz;
    w_cells.push_back(epoch_pass(w, *ds_wide, 4 * r + 1, true, false));
    g_cells.push_back(epoch_pass(g, *ds, 4 * r + 2, false, false));
    e_cells.push_back(epoch_pass(e, *ds, 4 * r + 3, true, true));
  }
  const double nz = static_cast<double>(nnz), cells_n = static_cast<double>(kCells);
  std::printf("tile: %llu cells x %llu genes, %llu nonzeros (%.0f per cell), %.1f MB = %.3f bytes per nonzero\n",
              static_cast<unsigned long long>(kCells), static_cast<unsigned long long>(kGenes),
              static_cast<unsigned long long>(nnz), nz / cells_n, static_cast<double>(tile.size()) / 1e6,
              static_cast<double>(tile.size()) / nz);
  std::printf("%d decode rounds, %d epoch rounds, medians; load average before %s, after %s\n", 3 * args.repeat,
              args.repeat, load_before.c_str(), load_average().c_str());
  const auto line = [](const char* label, const Pass& p, double cells, double nzs) {
    const double secs = median(p.wall), cpu = median(p.cpu);
    std::printf("%-30s %8.3f s  %10.0f cells/s  %8.1f M nonzeros/s  CPU %7.3f s (%.2f x wall)\n", label, secs,
                cells / secs, nzs / secs / 1e6, cpu, cpu / secs);
  };
  const double ec = median(d_cells), enz = static_cast<double>(epoch_nnz);
  line("(a) decode, 1 thread", a, cells_n, nz);
  line("(n) narrow decode, 1 thread", n, cells_n, nz);
  line("(b) zstd-decompress only", b, cells_n, nz);
  line("(c) decode, 2 threads", c, cells_n, nz);
  line("(m) narrow decode, 2 threads", m, cells_n, nz);
  line("(f) memset of (a)'s output", f, cells_n, nz);
  line("(h) memset of (n)'s output", h, cells_n, nz);
  line("(d) epoch, 5000-cell batches", d, ec, enz);
  line("(w) epoch, int32 decoded tiles", w, ec, enz);
  line("(g) epoch, no decode-ahead", g, ec, enz);
  line("(e) epoch, fresh batches", e, ec, enz);
  line("(i) gather a decoded tile, narrow", gather_in_order[0], cells_n, nz);
  line("    the same, shuffled cells", gather_shuffled[0], cells_n, nz);
  line("(i) gather a decoded tile, int32", gather_in_order[1], cells_n, nz);
  line("    the same, shuffled cells", gather_shuffled[1], cells_n, nz);
  const cells::DatasetStats st = ds->stats();
  std::printf(
      "    epochs, all rounds: %llu tiles fetched (%.2f s, %.2f s stalled), %llu decoded (%.2f s, %llu cache hits);"
      " %llu tiles decoded for the %llu cells of the last (d) round\n",
      static_cast<unsigned long long>(st.tiles_fetched), st.fetch_seconds, st.stall_seconds,
      static_cast<unsigned long long>(st.tiles_decoded), st.decode_seconds,
      static_cast<unsigned long long>(st.decoded_cache_hits), static_cast<unsigned long long>(tiles_per_round),
      static_cast<unsigned long long>(epoch_cells));
  std::vector<double> b_plus_f, b_plus_h;
  for (std::size_t i = 0; i < b.wall.size(); ++i) {
    b_plus_f.push_back(b.wall[i] + f.wall[i]);
    b_plus_h.push_back(b.wall[i] + h.wall[i]);
  }
  std::printf("per-round ratios, medians:\n");
  std::printf("decode / zstd-only time (a/b):                 %.2f   (target <= 1.20)\n", ratio(a.wall, b.wall));
  std::printf("  narrow decode / zstd-only (n/b):             %.2f   (target <= 1.20)\n", ratio(n.wall, b.wall));
  std::printf("  floor of (n): (zstd + memset) / zstd:        %.2f   ((n) against it: %.2f)\n", ratio(b_plus_h, b.wall),
              ratio(n.wall, b_plus_h));
  std::printf("  floor of (a): (zstd + memset) / zstd:        %.2f   ((a) against it: %.2f)\n", ratio(b_plus_f, b.wall),
              ratio(a.wall, b_plus_f));
  std::printf("2 threads speed-up (a/c):                      %.2f   (target >= 1.60; CPU/wall of (c) %.2f)\n",
              ratio(a.wall, c.wall), median(c.cpu) / median(c.wall));
  std::printf("  narrow, 2 threads speed-up (n/m):            %.2f   (CPU/wall of (m) %.2f)\n", ratio(n.wall, m.wall),
              median(m.cpu) / median(m.wall));
  // Per-cell rate of an epoch pass over that of (a) in the same round.
  const auto per_cell = [&](const Pass& p, const std::vector<double>& counts) {
    std::vector<double> scale;
    for (const double k : counts) scale.push_back(k / cells_n);
    return 100.0 * ratio(a_epoch, p.wall, scale);
  };
  std::printf("epoch per-cell rate / full-tile decode (d/a):  %.0f %%  (target >= 80 %%)\n", per_cell(d, d_cells));
  std::printf("  with int32 decoded tiles (w/a):              %.0f %%\n", per_cell(w, w_cells));
  std::printf("  without decode-ahead (g/a):                  %.0f %%\n", per_cell(g, g_cells));
  std::printf("  with fresh batches (e/a):                    %.0f %%\n", per_cell(e, e_cells));
  // The same ratios from CPU seconds, which a busy machine distorts less than wall time.
  std::printf("by CPU seconds: a/b %.2f, n/b %.2f, d/a per cell %.0f %%, g/a per cell %.0f %%\n", ratio(a.cpu, b.cpu),
              ratio(n.cpu, b.cpu), 100.0 * (ec / median(d.cpu)) / (cells_n / median(a.cpu)),
              100.0 * (median(g_cells) / median(g.cpu)) / (cells_n / median(a.cpu)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_cells", [&] { return run(parse_args(argc, argv)); });
}
