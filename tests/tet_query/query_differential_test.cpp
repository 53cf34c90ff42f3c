// Differential test of the query engine against numpy (/usr/bin/python3): hundreds of random small
// files (every dtype, ranks 1–3, clipped edge tiles, raw and zstd) written with tet::TetWriter,
// and random queries on them (every op, strided selections, partial axes), run in-process. One
// python process recomputes every answer from the raw arrays (query_differential_check.py) with
// the tolerances of the test plan: 1e-12·max(1, Σ|x|) for sums, means and norms (Σx² for var and
// std), relative 1e-12 for products, exact for counts, extremes, arg indices, median/quantile and
// integer sums below 2^53, and the spec's histogram rule re-implemented in Python.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <random>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera {
namespace {

using nlohmann::json;

constexpr int kFiles = 520;
constexpr int kQueriesPerFile = 7;

const DType kDtypes[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8,
                         DType::U16, DType::I16, DType::U32, DType::U64, DType::F16};
const char* const kOps[] = {"sum",        "mean",       "min",         "max",       "var",
                            "std",        "product",    "norm_l1",     "norm_l2",   "count",
                            "all_finite", "any_nan",    "any_inf",     "arg_min",   "arg_max",
                            "median",     "quantile",   "histogram",   "nan_count", "inf_count",
                            "null_count", "covariance", "correlation", "nan_mean",  "nan_std"};

template <typename T>
void put(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Random element bytes for one dtype; floats include NaN, ±inf, −0 and repeated values sometimes.
std::vector<std::byte> random_data(DType t, std::uint64_t n, std::mt19937_64& rng, bool specials, bool small_ints) {
  std::vector<std::byte> out;
  std::uniform_int_distribution<int> pick(0, 99);
  std::normal_distribution<double> normal(0.0, 100.0);
  auto float_value = [&]() -> double {
    const int r = pick(rng);
    if (specials && r < 4) return std::nan("");
    if (specials && r < 6) return r == 4 ? HUGE_VAL : -HUGE_VAL;
    if (r < 8) return -0.0;
    if (small_ints) return static_cast<double>(static_cast<int>(normal(rng) / 20));
    return normal(rng);
  };
  for (std::uint64_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::F32: put(out, static_cast<float>(float_value())); break;
      case DType::F64: put(out, float_value()); break;
      case DType::F16: put(out, float_to_half(static_cast<float>(float_value() / 4))); break;
      case DType::I32: put(out, static_cast<std::int32_t>(small_ints ? rng() % 9 : rng())); break;
      case DType::I64: put(out, static_cast<std::int64_t>(small_ints ? rng() % 9 : rng() >> (rng() % 64))); break;
      case DType::U8: put(out, static_cast<std::uint8_t>(rng())); break;
      case DType::U16: put(out, static_cast<std::uint16_t>(small_ints ? rng() % 5 : rng())); break;
      case DType::I16: put(out, static_cast<std::int16_t>(rng())); break;
      case DType::U32: put(out, static_cast<std::uint32_t>(rng())); break;
      case DType::U64: put(out, static_cast<std::uint64_t>(small_ints ? rng() % 7 : rng() >> (rng() % 64))); break;
      default: break;
    }
  }
  return out;
}

TEST(QueryDifferential, AgreesWithNumpy) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "needs /usr/bin/python3 with numpy";
  testing::TempDir dir("query-diff");
  std::mt19937_64 rng(20240607);
  json cases = json::array();
  int executed = 0;
  for (int f = 0; f < kFiles; ++f) {
    const DType dtype = kDtypes[f % 10];
    const std::size_t rank = 1 + rng() % 3;
    std::vector<std::uint64_t> shape(rank), chunks(rank);
    std::uint64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      shape[d] = 1 + rng() % (rank == 1 ? 40 : 7);
      chunks[d] = 1 + rng() % (shape[d] + 1);
      n *= shape[d];
    }
    const bool specials = rng() % 3 == 0, small_ints = rng() % 3 == 0;
    const auto data = random_data(dtype, n, rng, specials, small_ints);
    const std::string tet = (dir / ("f" + std::to_string(f) + ".tet")).string();
    const std::string raw = (dir / ("f" + std::to_string(f) + ".bin")).string();
    {
      tet::WriterOptions options;
      options.threads = 1;
      tet::TetWriter writer(tet, options);
      tet::DatasetSpec spec;
      spec.name = "d";
      spec.dtype = dtype;
      spec.shape = shape;
      spec.chunk_shape = chunks;
      spec.codec = rng() % 2 ? tet::Codec::Zstd : tet::Codec::Raw;
      writer.write_dataset(writer.add_dataset(spec), data);
      writer.commit();
    }
    testing::write_file_bytes(raw, data);

    for (int qi = 0; qi < kQueriesPerFile; ++qi) {
      json doc = {{"dataset", "d"}};
      json sel = json::array();
      for (std::size_t d = 0; d < rank; ++d) {
        json axis = json::object();
        std::uint64_t start = 0, stop = shape[d], step = 1;
        if (rng() % 2) {
          start = rng() % shape[d];
          stop = start + 1 + rng() % (shape[d] - start);
          step = 1 + rng() % 3;
          axis = {{"start", start}, {"stop", stop}, {"step", step}};
        }
        sel.push_back(axis);
      }
      if (rng() % 3) doc["selection"] = sel;
      else sel = json::array();  // the whole dataset: the checker slices nothing
      const std::string op = kOps[rng() % std::size(kOps)];
      json axes = json::array();
      if (op == "covariance" || op == "correlation") {
        if (rank != 2) continue;
        axes.push_back(rng() % 2);
      } else if (rank > 1 && rng() % 2) {
        for (std::size_t d = 0; d < rank; ++d)
          if (rng() % 2) axes.push_back(d);
        if (axes.size() == rank) axes.erase(axes.begin());
      }
      if (op == "quantile") {
        doc[op] = {{"q", (rng() % 5 == 0) ? 1.0 : static_cast<double>(rng() % 1000) / 999.0}, {"axes", axes}};
      } else if (op == "histogram") {
        doc[op] = {{"bins", 1 + rng() % 6}, {"axes", axes}};
        if (rng() % 3 == 0) {
          doc[op]["min"] = -50.0;
          doc[op]["max"] = 60.0;
        }
      } else if (op == "null_count") {
        double fill = 0;
        if (specials && rng() % 2) fill = std::nan("");
        else if (n > 0) {
          // A value that occurs in the data, promoted like the engine promotes it.
          const std::size_t es = dtype_size(dtype), at = rng() % n;
          const std::byte* p = data.data() + at * es;
          switch (dtype) {
            case DType::F32: {
              float v;
              std::memcpy(&v, p, 4);
              fill = v;
              break;
            }
            case DType::F64: std::memcpy(&fill, p, 8); break;
            case DType::F16: {
              std::uint16_t h;
              std::memcpy(&h, p, 2);
              fill = half_to_double(h);
              break;
            }
            default: fill = static_cast<double>(std::to_integer<std::uint8_t>(p[0]) % 5); break;
          }
        }
        doc[op] = {{"axes", axes}};
        if (!std::isnan(fill)) doc[op]["fill"] = fill;
        else doc[op]["fill"] = "nan";  // replaced below: JSON has no NaN literal
      } else {
        doc[op] = axes;
      }
      if (rng() % 4 == 0) doc["execution"] = {{"fold_parallel", false}};

      tet::QueryDocument parsed;
      if (op == "null_count" && doc[op]["fill"].is_string()) {
        doc[op].erase("fill");
        parsed = tet::parse_query_json(doc.dump());
        parsed.operation->fill = std::nan("");
      } else {
        parsed = tet::parse_query_json(doc.dump());
      }
      json record = {{"raw", raw},        {"dtype", std::string(dtype_info(dtype).name)},
                     {"shape", shape},    {"selection", sel},
                     {"op", op},          {"axes", axes},
                     {"params", doc[op]}, {"nan_fill", parsed.operation->fill && std::isnan(*parsed.operation->fill)}};
      tet::QueryOptions options;
      options.tet_path = tet;
      options.execute = true;
      options.preview = 0;
      // Every fourth file pretends the host has 64 bytes of RAM: folds run out of core (linear
      // scans where the selection allows) and tier-C ops spill to a temporary file.
      if (f % 4 == 0) ::setenv("TESSERA_TET_AVAILABLE_RAM_BYTES", "64", 1);
      else ::unsetenv("TESSERA_TET_AVAILABLE_RAM_BYTES");
      // Every third file is read through pread copies instead of the map (io/read_path.hpp), raw
      // chunks in pieces, so numpy checks both paths.
      ::setenv("TESSERA_READ_PATH", f % 3 == 1 ? "pread" : "mmap", 1);
      try {
        const auto response = tet::run_query(parsed, options);
        record["execution"] = json::parse(response.tree["execution"].dump());
        // JSON text turns NaN into null; the checker reads nulls as NaN.
        ++executed;
      } catch (const Error& e) {
        record["error"] = e.what();
      }
      cases.push_back(std::move(record));
    }
  }
  ::unsetenv("TESSERA_TET_AVAILABLE_RAM_BYTES");
  ::unsetenv("TESSERA_READ_PATH");
  const std::string manifest = (dir / "cases.json").string();
  testing::write_file_text(manifest, cases.dump());
  const auto script = testing::read_file_text(testing::source_dir() / "tests/tet_query/query_differential_check.py");
  const auto result = testing::run_python(script, {manifest});
  EXPECT_EQ(result.rc, 0) << result.err;
  EXPECT_NE(result.out.find("checked " + std::to_string(cases.size()) + " cases, 0 failures"), std::string::npos)
      << result.out.substr(0, 20000) << result.err;
  EXPECT_GE(executed, 3000);
}

}  // namespace
}  // namespace tessera
