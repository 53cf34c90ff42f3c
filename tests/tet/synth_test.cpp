// Synthetic files (§6.9): spec parsing, determinism, the integer formula checked element by
// element with independent arithmetic, random-walk statistics, the footer, and the CLI.
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/synth.hpp"
#include "tessera/version.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tessera::testing::read_file_bytes;
using tessera::testing::run_cli;
using tessera::testing::TempDir;

std::vector<std::byte> synth_bytes(const std::vector<std::string>& specs, std::uint64_t seed,
                                   const std::string& at = "1") {
  tet::SynthOptions options;
  for (const auto& s : specs) options.datasets.push_back(tet::parse_synth_spec(s));
  options.seed = seed;
  options.source = "unit.tet";
  options.at = at;
  io::MemorySink sink;
  const auto summary = tet::synth_write(sink, options);
  EXPECT_EQ(summary.bytes, sink.bytes().size());
  return sink.bytes();
}

tet::TetFile open_memory(std::vector<std::byte> bytes) {
  return tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(std::move(bytes))));
}

template <typename T>
std::vector<T> values_of(const tet::TetFile& file, const std::string& name) {
  const auto& ds = *file.find(name);
  std::vector<T> out(ds.element_count);
  file.read_box(ds, ds.full_box(), std::as_writable_bytes(std::span(out)));
  return out;
}

TEST(SynthSpec, ParsesEveryField) {
  const auto s = tet::parse_synth_spec("temp:f32:512x1024x1024:16x256x256:zstd:3");
  EXPECT_EQ(s.name, "temp");
  EXPECT_EQ(s.dtype, DType::F32);
  EXPECT_EQ(s.shape, (std::vector<std::uint64_t>{512, 1024, 1024}));
  EXPECT_EQ(s.chunk_shape, (std::vector<std::uint64_t>{16, 256, 256}));
  EXPECT_EQ(s.codec, tet::Codec::Zstd);
  EXPECT_EQ(s.zstd_level, 3);
  const auto r = tet::parse_synth_spec("grp/x:u64:7:3");
  EXPECT_EQ(r.name, "grp/x");
  EXPECT_EQ(r.codec, tet::Codec::Raw);
  EXPECT_EQ(tet::parse_synth_spec("a:i16:4:4:raw").codec, tet::Codec::Raw);
  EXPECT_EQ(tet::parse_synth_spec("a:f16:4:4:zstd").zstd_level, 3);
  EXPECT_EQ(tet::parse_synth_spec("a:f16:4:4:zstd:-5").zstd_level, -5);
}

TEST(SynthSpec, MalformedSpecsAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"a:f32:4", "expected NAME:DTYPE:SHAPE:CHUNKS"},
      {"a:f32:4:4:zstd:3:9", "expected NAME:DTYPE:SHAPE:CHUNKS"},
      {":f32:4:4", "empty name"},
      {"a:f128:4:4", "unknown dtype `f128`"},
      {"a:i8:4:4", "unknown dtype `i8`"},
      {"a:bool:4:4", "unknown dtype `bool`"},
      {"a:f32:4x:4x4", "SHAPE `4x` must be positive integers"},
      {"a:f32:4x0:4x4", "SHAPE `4x0` must be positive integers"},
      {"a:f32:4x-1:4x4", "SHAPE"},
      {"a:f32:4x4:two", "CHUNKS `two`"},
      {"a:f32:4x4:4", "SHAPE has 2 axes but CHUNKS has 1"},
      {"a:f32:4:4:lz4", "unknown codec `lz4`"},
      {"a:f32:4:4:raw:3", "LEVEL applies to the zstd codec only"},
      {"a:f32:4:4:zstd:fast", "LEVEL `fast` is not an integer"},
      {"a:f32:4:4:zstd:99", "zstd level 99 out of range"},
      {"a:f32:1x1x1x1x1x1x1x1x1:1x1x1x1x1x1x1x1x1", "ndim 9 out of range"},
      {"a:f32:99999999999x99999999999:1x1", "logical tensor byte length overflow"},
  };
  for (const auto& [text, needle] : cases) {
    SCOPED_TRACE(text);
    try {
      (void)tet::parse_synth_spec(text);
      ADD_FAILURE() << "accepted";
    } catch (const tessera::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

TEST(Synth, SameArgumentsGiveTheSameBytes) {
  const std::vector<std::string> specs{"w:f32:37x11:5x4:zstd:3", "i:i32:9x9x3:4x4x2", "h:f16:100:7"};
  const auto a = synth_bytes(specs, 42);
  EXPECT_EQ(synth_bytes(specs, 42), a);
  EXPECT_NE(synth_bytes(specs, 43), a);
  // The walk and the integers do not depend on the chunking: same values, different files.
  const auto rechunked = open_memory(synth_bytes({"w:f32:37x11:37x11", "i:i32:9x9x3:9x1x1", "h:f16:100:100"}, 42));
  const auto original = open_memory(a);
  EXPECT_EQ(values_of<float>(rechunked, "w"), values_of<float>(original, "w"));
  EXPECT_EQ(values_of<std::int32_t>(rechunked, "i"), values_of<std::int32_t>(original, "i"));
  EXPECT_EQ(values_of<std::uint16_t>(rechunked, "h"), values_of<std::uint16_t>(original, "h"));
}

// The value for logical index i, computed independently with 128-bit arithmetic.
std::int64_t expected_int(std::uint64_t i, std::uint64_t seed, std::uint64_t m, bool is_signed) {
  const unsigned __int128 v = static_cast<unsigned __int128>(i) * 2654435761u + seed;
  const auto r = static_cast<std::int64_t>(v % m);
  return is_signed ? r - static_cast<std::int64_t>(m / 2) : r;
}

template <typename T>
void check_integers(DType dtype, const char* name, std::uint64_t m, std::uint64_t seed) {
  SCOPED_TRACE(name);
  const std::string spec = std::string("x:") + name + ":13x17x5:4x5x2:zstd";
  const auto file = open_memory(synth_bytes({spec}, seed));
  EXPECT_EQ(file.datasets()[0].dtype, dtype);
  const auto values = values_of<T>(file, "x");
  const bool is_signed = std::is_signed_v<T>;
  for (std::uint64_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(static_cast<std::int64_t>(values[i]), expected_int(i, seed, m, is_signed)) << "element " << i;
  // A few spelled out: u8 with seed 7 at index 1 is (2654435761 + 7) mod 256 = 184.
  if (dtype == DType::U8 && seed == 7) {
    EXPECT_EQ(values[0], 7);
    EXPECT_EQ(values[1], 184);
  }
}

TEST(Synth, IntegerValuesFollowTheFormula) {
  for (std::uint64_t seed : {0ull, 7ull, 123456789012345ull}) {
    check_integers<std::uint8_t>(DType::U8, "u8", 256, seed);
    check_integers<std::uint16_t>(DType::U16, "u16", 65536, seed);
    check_integers<std::int16_t>(DType::I16, "i16", 32768, seed);
    check_integers<std::int32_t>(DType::I32, "i32", 1000003, seed);
    check_integers<std::uint32_t>(DType::U32, "u32", 1000003, seed);
    check_integers<std::int64_t>(DType::I64, "i64", 1000003, seed);
    check_integers<std::uint64_t>(DType::U64, "u64", 1000003, seed);
  }
}

TEST(Synth, RandomWalkStepsAreStandardNormal) {
  constexpr std::size_t n = 100000;
  const auto file = open_memory(synth_bytes({"walk:f64:400x250:7x64:zstd"}, 2024));
  const auto walk = values_of<double>(file, "walk");
  ASSERT_EQ(walk.size(), n);
  double sum = 0, sum_sq = 0;
  std::size_t within_one = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double step = i == 0 ? walk[0] : walk[i] - walk[i - 1];
    sum += step;
    sum_sq += step * step;
    within_one += std::fabs(step) < 1.0;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sum_sq / n - mean * mean);
  // Five standard errors: 5/sqrt(n) for the mean, 5/sqrt(2n) for the standard deviation.
  EXPECT_NEAR(mean, 0.0, 0.016);
  EXPECT_NEAR(sd, 1.0, 0.012);
  EXPECT_NEAR(static_cast<double>(within_one) / n, 0.6827, 0.008);
}

TEST(Synth, FloatDtypesRoundTheSameWalk) {
  const auto f64 = values_of<double>(open_memory(synth_bytes({"x:f64:1000:64"}, 9)), "x");
  const auto f32 = values_of<float>(open_memory(synth_bytes({"x:f32:1000:100"}, 9)), "x");
  const auto f16 = values_of<std::uint16_t>(open_memory(synth_bytes({"x:f16:1000:1000:zstd"}, 9)), "x");
  for (std::size_t i = 0; i < f64.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f32[i]), std::bit_cast<std::uint32_t>(static_cast<float>(f64[i]))) << i;
    ASSERT_EQ(f16[i], tessera::float_to_half(static_cast<float>(f64[i]))) << i;
  }
  // Each dataset has its own generator: the second f64 dataset of a file is a different walk.
  const auto two = open_memory(synth_bytes({"x:f64:1000:64", "y:f64:1000:64"}, 9));
  EXPECT_EQ(values_of<double>(two, "x"), f64);
  EXPECT_NE(values_of<double>(two, "y"), f64);
}

TEST(Synth, PinnedValuesGuardTheAlgorithm) {
  // The walk for seed 0, dataset 0: mt19937_64, the polar method and portable_log. Any change to
  // the generator changes these (and every synthetic file); the Python test below derives the
  // same numbers independently.
  tet::SynthStream stream(DType::F64, 0, 0);
  std::vector<double> v(4);
  stream.fill(std::as_writable_bytes(std::span(v)));
  EXPECT_EQ(v[0], -0x1.ece008b6223b9p-2);
  EXPECT_EQ(v[1], -0x1.8482b23af8c29p-2);
  EXPECT_EQ(v[2], -0x1.41f67e8212f92p-2);
  EXPECT_EQ(v[3], -0x1.fd733f6ddfeecp-1);
  EXPECT_EQ(stream.position(), 4u);
}

TEST(Synth, WalkMatchesAnIndependentPythonImplementation) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 is not available";
  TempDir dir;
  const auto path = dir / "walk.tet";
  tet::SynthOptions options;
  options.datasets.push_back(tet::parse_synth_spec("a:u8:4:4"));
  options.datasets.push_back(tet::parse_synth_spec("w:f64:30x70:4x9:zstd"));
  options.seed = 99;
  tet::synth_write(path.string(), options);
  const auto file = tet::TetFile::open(path.string());
  const auto walk = values_of<double>(file, "w");
  std::string text;
  for (double x : walk) {
    char buf[32];
    text.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);  // shortest round-trip form
    text += "\n";
  }
  tessera::testing::write_file_text(dir / "walk.txt", text);
  // mt19937_64 as specified in [rand.predef], seeded with seed + 0x9E3779B97F4A7C15 × 1.
  const auto py = tessera::testing::run_python(R"(
import math, sys
M = 2**64 - 1
class MT64:
    def __init__(s, seed):
        s.mt = [seed & M] + [0] * 311
        for i in range(1, 312):
            s.mt[i] = (6364136223846793005 * (s.mt[i - 1] ^ (s.mt[i - 1] >> 62)) + i) & M
        s.i = 312
    def next(s):
        if s.i >= 312:
            for k in range(312):
                x = (s.mt[k] & 0xFFFFFFFF80000000) | (s.mt[(k + 1) % 312] & 0x7FFFFFFF)
                s.mt[k] = s.mt[(k + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
            s.i = 0
        y = s.mt[s.i]; s.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & M
g = MT64(99 + 0x9E3779B97F4A7C15)
uniform = lambda: 2.0 * ((g.next() >> 11) * 2.0**-53) - 1.0
want = [float(x) for x in open(sys.argv[1])]
assert len(want) == 30 * 70, len(want)
walk, steps = 0.0, []
while len(steps) < len(want):
    while True:
        u, v = uniform(), uniform()
        s = u * u + v * v
        if 0.0 < s < 1.0: break
    f = math.sqrt(-2.0 * math.log(s) / s)
    steps += [u * f, v * f]
bad = 0
for i, w in enumerate(want):
    walk += steps[i]
    if abs(walk - w) > 1e-9: bad += 1  # libm's log may differ from portable_log by an ulp
print(bad, "mismatches")
sys.exit(1 if bad else 0)
)",
                                               {(dir / "walk.txt").string()});
  EXPECT_EQ(py.rc, 0) << py.out << py.err;
}

TEST(Synth, PortableLogMatchesLibm) {
  for (double x : {1e-300, 1e-20, 0.001, 0.1, 0.5, 0.70710678118654752, 0.7071067811865476, 0.9, 0.999999, 1.0, 1.5,
                   2.0, 10.0, 1e10, 1e300, 4.9e-324}) {
    const double expected = std::log(x);
    EXPECT_NEAR(tet::portable_log(x), expected, std::max(1.0, std::fabs(expected)) * 6e-16) << x;
  }
  double x = 1e-12;
  while (x < 1.0) {
    ASSERT_NEAR(tet::portable_log(x), std::log(x), std::fabs(std::log(x)) * 6e-16 + 1e-300) << x;
    x *= 1.0137;
  }
}

TEST(Synth, FooterRecordsTheWrite) {
  TempDir dir;
  const auto path = dir / "synthetic.tet";
  tet::SynthOptions options;
  options.datasets.push_back(tet::parse_synth_spec("a:u8:3:2"));
  options.memory_budget_percent_bps = 500;
  options.memory_budget_bytes = 4096;
  // The same clock the writer reads (std::time may read a coarser one that lags it).
  const auto unix_seconds = [] {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  };
  const long long before = unix_seconds();
  const auto summary = tet::synth_write(path.string(), options);
  const long long after = unix_seconds();
  EXPECT_EQ(summary.datasets, 1u);
  EXPECT_EQ(summary.chunks, 2u);
  EXPECT_EQ(summary.bytes, fs::file_size(path));
  const auto file = tet::TetFile::open(path.string());
  ASSERT_TRUE(file.layout().footer);
  const auto& footer = *file.layout().footer;
  ASSERT_EQ(footer.history.size(), 1u);
  EXPECT_EQ(footer.history[0].op, "write");
  EXPECT_EQ(footer.history[0].source, "synthetic.tet");
  const long long at = std::stoll(footer.history[0].at);
  // The write's own time, however long it took: between the clock readings around it.
  EXPECT_GE(at, before);
  EXPECT_LE(at, after);
  EXPECT_EQ(footer.metadata.file->tool, "tessera tet synth");
  EXPECT_EQ(footer.metadata.file->library_version, std::string(tessera::kVersion));
  EXPECT_EQ(file.layout().index_header.memory_budget_percent_bps, 500);
  EXPECT_EQ(file.layout().index_header.memory_budget_bytes, 4096u);
}

TEST(SynthCli, WritesOneSummaryLineAndIsReproducible) {
  TempDir dir;
  const tessera::testing::RunOptions env{{}, {{"SOURCE_DATE_EPOCH", "1700000000"}}, {}};
  const std::vector<std::string> args{
      "tet",       "synth",          "out.tet", "--dataset", "temp:f32:20x30x4:6x7x4:zstd:3",
      "--dataset", "n:i64:50:8",     "--seed",  "11",        "--budget-bps",
      "2500",      "--budget-bytes", "65536"};
  auto in_dir = env;
  in_dir.cwd = dir.path();
  const auto r1 = run_cli(args, in_dir);
  ASSERT_EQ(r1.rc, 0) << r1.err;
  EXPECT_EQ(r1.err, "");
  const auto first = read_file_bytes(dir / "out.tet");
  EXPECT_EQ(r1.out, "wrote out.tet: 2 datasets, " + std::to_string(4 * 5 + 7) + " chunks, " +
                        std::to_string(first.size()) + " bytes\n");
  const auto r2 = run_cli(args, in_dir);
  ASSERT_EQ(r2.rc, 0) << r2.err;
  EXPECT_EQ(read_file_bytes(dir / "out.tet"), first);
  // The library with the same inputs writes the same bytes.
  tet::SynthOptions options;
  options.datasets = {tet::parse_synth_spec("temp:f32:20x30x4:6x7x4:zstd:3"), tet::parse_synth_spec("n:i64:50:8")};
  options.seed = 11;
  options.memory_budget_percent_bps = 2500;
  options.memory_budget_bytes = 65536;
  options.source = "out.tet";
  options.at = "1700000000";
  io::MemorySink sink;
  tet::synth_write(sink, options);
  EXPECT_EQ(sink.bytes(), first);
  EXPECT_EQ(open_memory(first).layout().footer->history[0].at, "1700000000");
}

TEST(SynthCli, ExitCodes) {
  TempDir dir;
  const auto out = (dir / "x.tet").string();
  auto expect_rc = [&](const std::vector<std::string>& args, int rc, const std::string& err_needle) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.rc, rc) << r.err;
    EXPECT_NE(r.err.find(err_needle), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  };
  expect_rc({"tet", "synth", out}, 2, "--dataset is required");
  expect_rc({"tet", "synth", "--dataset", "a:f32:4:4"}, 2, "OUT is required");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:4"}, 2, "invalid dataset spec \"a:f32:4\"");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:0:4"}, 2, "SHAPE `0` must be positive integers");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:4:4", "--dataset", "a:u8:4:4"}, 2,
            "duplicate dataset name \"a\"");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:4:4", "--seed", "minus"}, 2, "--seed");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:4:4", "--budget-bps", "10001"}, 2, "--budget-bps");
  expect_rc({"tet", "synth", out, "--dataset", "a:f32:4:4", "--budget-bytes", "4294967296"}, 2, "--budget-bytes");
  EXPECT_TRUE(fs::is_empty(dir.path()));
  expect_rc({"tet", "synth", (dir / "missing" / "x.tet").string(), "--dataset", "a:f32:4:4"}, 1,
            ": cannot create temporary file in ");
  const auto ok = run_cli({"tet", "synth", out, "--dataset", "a:f32:4:4", "--dataset", "b:u8:3x3:2x2"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("wrote " + out + ": 2 datasets, 5 chunks, ", 0), 0u) << ok.out;
}

}  // namespace
