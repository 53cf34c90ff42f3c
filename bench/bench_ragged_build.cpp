// `tessera ragged build` throughput and memory (docs/performance.md): 10^7 random points inside a
// 1° × 1° box at 70° S (a few dozen order-9 shards), orders 19/13/9, δ 8192, built by the CLI on
// 1 and 2 threads. Reports points/s, the 2-thread speed-up and the peak RSS of each run (wait4's
// ru_maxrss of the child), next to the largest shard's spilled rows, which bound the memory.
//
// The input (.npy columns lat, lon, value: float64) is generated once into DATA_DIR and reused;
// each run writes a fresh store there.
//
// Usage: bench_ragged_build --data-dir DIR --cli PATH/tessera [--points N] [--repeat R]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/core/error.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

void write_column(const fs::path& path, const std::vector<double>& values) {
  const std::uint64_t shape[] = {values.size()};
  const std::string header = tessera::codec::npy_header(tessera::DType::F64, shape);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw tessera::IoError("cannot create", path.string());
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(values.data(), 8, values.size(), f);
  if (std::fclose(f) != 0) throw tessera::IoError("cannot write", path.string());
}

// The points: uniform in the box, values from a smooth field plus noise.
void generate(const fs::path& dir, std::uint64_t n) {
  fs::create_directories(dir);
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> lat(n), lon(n), value(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    lat[i] = -70.5 + u(rng);
    lon[i] = 10.0 + u(rng);
    value[i] = 100 + 20 * std::sin(lat[i] * 40) * std::cos(lon[i] * 30) + 5 * (u(rng) - 0.5);
  }
  write_column(dir / "lat.npy", lat);
  write_column(dir / "lon.npy", lon);
  write_column(dir / "value.npy", value);
}

struct Run {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system of the child (the wall time is unreliable on a loaded host)
  long max_rss_kib = 0;
  std::string report;
};

Run run_build(const std::string& cli, const fs::path& input, const fs::path& out, unsigned threads) {
  fs::remove_all(out);
  const fs::path report = out.string() + ".json";
  const std::vector<std::string> args = {
      cli,           "ragged",  "build",        "--input",   input.string(),         "--out", out.string(),
      "--value-col", "value",   "--cell-order", "19",        "--shard-order",        "9",     "--chunk-order",
      "13",          "--delta", "8192",         "--threads", std::to_string(threads)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ) != 0)
    throw tessera::IoError("cannot start", cli);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Run r;
  r.seconds = tessera::bench::seconds_since(t0);
  r.max_rss_kib = usage.ru_maxrss;
  r.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw tessera::Error("tessera ragged build failed (status " + std::to_string(status) + ")");
  std::FILE* f = std::fopen(report.c_str(), "rb");
  char buf[4096];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) r.report.append(buf, got);
  std::fclose(f);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return tessera::bench::guarded_main("bench_ragged_build", [&] {
    std::string data_dir, cli;
    std::uint64_t points = 10'000'000;
    int repeat = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i];
      if (flag == "--data-dir") data_dir = argv[i + 1];
      else if (flag == "--cli") cli = argv[i + 1];
      else if (flag == "--points") points = std::stoull(argv[i + 1]);
      else if (flag == "--repeat") repeat = std::stoi(argv[i + 1]);
      else throw tessera::UsageError("unknown flag " + flag);
    }
    if (data_dir.empty() || cli.empty())
      throw tessera::UsageError("usage: bench_ragged_build --data-dir DIR --cli PATH [--points N] [--repeat R]");
    const fs::path input = fs::path(data_dir) / ("ragged-build-input-" + std::to_string(points));
    if (!fs::exists(input / "value.npy")) {
      std::printf("generating %llu points into %s\n", static_cast<unsigned long long>(points), input.c_str());
      // In a child process: a child's ru_maxrss starts from its parent's peak (Linux copies the
      // high-water mark at fork and keeps it across execve), so the builds measured below must be
      // forked from a process that never held the 10^7 points.
      const pid_t gen = fork();
      if (gen == 0) {
        try {
          generate(input, points);
          _exit(0);
        } catch (...) {
          _exit(1);
        }
      }
      int status = 0;
      if (gen < 0 || waitpid(gen, &status, 0) != gen || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw tessera::IoError("generating the input failed", input.string());
    }
    const fs::path out = fs::path(data_dir) / "ragged-build-store";
    std::vector<double> t1, t2, c1, c2;
    long rss1 = 0, rss2 = 0;
    std::string report;
    for (int r = 0; r < repeat; ++r) {
      const Run a = run_build(cli, input, out, 1);
      const Run b = run_build(cli, input, out, 2);
      t1.push_back(a.seconds);
      t2.push_back(b.seconds);
      c1.push_back(a.cpu_seconds);
      c2.push_back(b.cpu_seconds);
      rss1 = std::max(rss1, a.max_rss_kib);
      rss2 = std::max(rss2, b.max_rss_kib);
      report = b.report;
    }
    const auto doc = tessera::codec::json::parse_strict(report, "build report");
    std::uint64_t largest = 0, cells = 0;
    for (const auto& leaf : doc["leaves"]) {
      largest = std::max(largest, leaf["observations"].get<std::uint64_t>());
      cells += leaf["cells_with_data"].get<std::uint64_t>();
    }
    const double s1 = tessera::bench::median(t1), s2 = tessera::bench::median(t2);
    const double n = static_cast<double>(points);
    std::printf("ragged build: %llu points, %zu shards (order 9), %llu cells with data (order 19), delta 8192\n",
                static_cast<unsigned long long>(points), doc["leaves"].size(), static_cast<unsigned long long>(cells));
    std::printf("  1 thread : %8.2f s  %12.0f points/s  cpu %7.2f s  peak RSS %7.1f MiB\n", s1, n / s1,
                tessera::bench::median(c1), rss1 / 1024.0);
    std::printf("  2 threads: %8.2f s  %12.0f points/s  cpu %7.2f s  peak RSS %7.1f MiB\n", s2, n / s2,
                tessera::bench::median(c2), rss2 / 1024.0);
    std::printf("  speed-up : %.2fx\n", s1 / s2);
    std::printf("  largest shard: %llu points (%.1f MiB of spilled rows at 16 bytes each)\n",
                static_cast<unsigned long long>(largest), static_cast<double>(largest) * 16 / (1 << 20));
    return 0;
  });
}
