// read_tensors (spec §5.3) against zagg's own outputs on the moczarr strata leaf (bit for bit),
// the spec's worked windows and masks, numpy running the recipe independently, and the option
// and fit-policy rules.
#include <gtest/gtest.h>

#include <cstring>

#include "support.hpp"
#include "support/testing.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/synth.hpp"
#include "tessera/ragged/tdigest.hpp"

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;

struct Npy {
  codec::NpyHeader header;
  std::vector<std::byte> data;
};

Npy read_npy(const fs::path& path) {
  const auto src = io::open_file(path.string(), io::OpenMode::Pread);
  Npy n{codec::parse_npy_header(*src), {}};
  n.data = src->read_vector(n.header.data_offset, n.header.data_bytes);
  return n;
}

fs::path goldens() { return test::zagg_dir() / "moczarr/tests/data/strata_goldens"; }

std::vector<double> doubles(const Npy& n) {
  std::vector<double> v(n.data.size() / 8);
  std::memcpy(v.data(), n.data.data(), n.data.size());
  return v;
}

std::vector<std::uint64_t> words(const Npy& n) {
  std::vector<std::uint64_t> v(n.data.size() / 8);
  std::memcpy(v.data(), n.data.data(), n.data.size());
  return v;
}

TEST(RaggedTensors, StrataPerChunkGoldensBitForBit) {
  io::DirectoryStore store(test::strata_leaf().string());
  for (const std::string stratum : {"signal", "noise"}) {
    SCOPED_TRACE(stratum);
    const RaggedField f = RaggedField::open(store, "6/h_tdigest_" + stratum);
    const auto blocks = f.read_tensors();
    const Npy tensors = read_npy(goldens() / (stratum + "_tensors.npy"));
    const Npy masks = read_npy(goldens() / (stratum + "_masks.npy"));
    const auto windows = doubles(read_npy(goldens() / (stratum + "_windows.npy")));
    const auto ids = words(read_npy(goldens() / (stratum + "_morton.npy")));
    ASSERT_EQ(blocks.size(), tensors.header.shape[0]);
    const std::size_t tbytes = tensors.data.size() / blocks.size(), mbytes = masks.data.size() / blocks.size();
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const TensorBlock& b = blocks[i];
      ASSERT_EQ(b.tensor.size(), tbytes);
      EXPECT_EQ(std::memcmp(b.tensor.data(), tensors.data.data() + i * tbytes, tbytes), 0) << "tensor " << i;
      ASSERT_EQ(b.mask.size(), mbytes);
      EXPECT_EQ(std::memcmp(b.mask.data(), masks.data.data() + i * mbytes, mbytes), 0) << "mask " << i;
      EXPECT_EQ(b.offset, windows[2 * i]);
      EXPECT_EQ(b.gain, windows[2 * i + 1]);
      EXPECT_EQ(b.morton, ids[i]);
      EXPECT_EQ(b.side, 2u);
      EXPECT_EQ(b.n_bins, 128u);
    }
  }
}

TEST(RaggedTensors, StrataBlockOrder4GoldenBitForBit) {
  io::DirectoryStore store(test::strata_leaf().string());
  const RaggedField f = RaggedField::open(store, "6/h_tdigest_signal");
  TensorOptions o;
  o.block_order = 4;
  const auto blocks = f.read_tensors(o);
  ASSERT_EQ(blocks.size(), 1u);
  const TensorBlock& b = blocks[0];
  const Npy tensor = read_npy(goldens() / "signal_block_tensor.npy");
  const Npy mask = read_npy(goldens() / "signal_block_mask.npy");
  ASSERT_EQ(b.tensor.size(), tensor.data.size());
  EXPECT_EQ(std::memcmp(b.tensor.data(), tensor.data.data(), tensor.data.size()), 0);
  ASSERT_EQ(b.mask.size(), mask.data.size());
  EXPECT_EQ(std::memcmp(b.mask.data(), mask.data.data(), mask.data.size()), 0);
  const auto window = doubles(read_npy(goldens() / "signal_block_window.npy"));
  EXPECT_EQ(b.offset, window[0]);
  EXPECT_EQ(b.gain, window[1]);
  EXPECT_EQ(b.morton, words(read_npy(goldens() / "signal_block_morton.npy"))[0]);
  EXPECT_EQ(b.morton, 5345772757688778756ull);
  EXPECT_EQ(b.side, 4u);
  const std::vector<std::uint8_t> rows{2, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2};
  EXPECT_EQ(b.mask, rows);
  EXPECT_EQ(b.populated, 3u);
  EXPECT_EQ(b.observed_empty, 2u);
  EXPECT_TRUE(has_exact_occupancy(store));
}

TEST(RaggedTensors, SpecWorkedWindowsAndMasks) {
  io::DirectoryStore minimal(test::fixture_leaf("minimal").string());
  const RaggedField f = RaggedField::open(minimal, "6/h_tdigest");
  const auto blocks = f.read_tensors();
  ASSERT_EQ(blocks.size(), 3u);
  const double offsets[] = {22, 24, 21};
  const std::uint64_t starts[] = {0, 4, 12};
  const char* ids[] = {"112131", "112132", "112134"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(blocks[i].offset, offsets[i]);
    EXPECT_EQ(blocks[i].gain, 0.5);
    EXPECT_EQ(blocks[i].start, starts[i]);
    EXPECT_EQ(blocks[i].morton, morton::parse_decimal(ids[i]));
    EXPECT_EQ(blocks[i].order, 5);
  }
  // cell 5 is rank 1 of chunk 1 → (row 0, col 1); mask 2 there
  EXPECT_EQ(blocks[1].mask, (std::vector<std::uint8_t>{0, 2, 0, 0}));
  TensorOptions o;
  o.block_order = 4;
  const auto one = f.read_tensors(o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].offset, 21);
  EXPECT_EQ(one[0].morton, morton::parse_decimal("11213"));
  // the spec's cast example: cell 5 quantiles
  const auto d = tdigest::decode(f.read_cell(5).bytes, "cell 5");
  EXPECT_EQ(tdigest::quantile(d, 0.05), static_cast<double>(24.579000473022461f));
  EXPECT_EQ(tdigest::quantile(d, 0.95), static_cast<double>(34.298999786376953f));
  // kitchen_sink signal: exact occupancy gives state 1 at (row 0, col 3) for cell 5
  io::DirectoryStore ks(test::fixture_leaf("kitchen_sink").string());
  const auto sig = RaggedField::open(ks, "6/h_tdigest_signal").read_tensors(o);
  ASSERT_EQ(sig.size(), 1u);
  EXPECT_EQ(sig[0].mask[0 * 4 + 3], 1);
  EXPECT_EQ(sig[0].observed_empty, 1u);
  // the column has no exact occupancy: the 2-state mask
  io::DirectoryStore column((test::fixture_leaf("column").parent_path() / "all.pyramid.zarr").string());
  EXPECT_FALSE(has_exact_occupancy(column));
  const auto col = RaggedField::open(column, "5/h_tdigest").read_tensors();
  ASSERT_EQ(col.size(), 1u);
  EXPECT_EQ(col[0].mask, (std::vector<std::uint8_t>{2, 2, 0, 2}));
  EXPECT_EQ(col[0].morton, morton::parse_decimal("11213"));
  const auto top = RaggedField::open(column, "4/h_tdigest").read_tensors();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].side, 1u);
}

// numpy runs the spec recipe on the digests recorded in the expected files (independent of
// tessera's decoder) for every fit policy and dtype; tessera must agree bit for bit.
TEST(RaggedTensors, AgreesWithNumpyOnEveryFixtureFieldPolicyAndDtype) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "numpy unavailable";
  const std::string script = R"PY(
import json, sys, numpy as np
exp = json.load(open(sys.argv[1])); field = sys.argv[2]; n_bins = int(sys.argv[3]); res0 = float(sys.argv[4])
fit = sys.argv[5]; dtype = sys.argv[6]; bottom = 0.05; top = 0.95
def quantile(m, w, q):
    n = np.sum(w); t = q * (n - 1); U = np.cumsum(w); K = len(m)
    for k in range(K):
        lo = 0.0 if k == 0 else U[k-1]; hi = U[k] - 1
        if t <= hi:
            if hi <= lo: return m[k]
            frac = (t - lo) / (hi - lo)
            if k == 0: lv = m[0]; hv = m[0] if K == 1 else (m[0] + m[1]) / 2
            else: lv = (m[k-1] + m[k]) / 2; hv = m[k] if k == K-1 else (m[k] + m[k+1]) / 2
            return lv + frac * (hv - lv)
    return m[-1]
def raster(m, w, z, r, n):
    e = z + r * np.arange(n + 1); W = np.sum(w)
    if len(m) == 1: c = np.where(e >= m[0], W, 0.0)
    else: c = np.interp(e, m, np.cumsum(w) - w / 2, left=0.0, right=W)
    return np.maximum(np.diff(c), 0.0)
chunks = {}
for cell in exp["cells"]:
    rows = cell[field]
    if rows: chunks.setdefault(cell["index"] // 4, []).append((cell["index"] % 4, np.array(rows, dtype=np.float32).astype(np.float64)))
out = []
for ch in sorted(chunks):
    ds = chunks[ch]; qs = [(quantile(d[:,0], d[:,1], bottom), quantile(d[:,0], d[:,1], top)) for _, d in ds]
    zl = np.floor(min(q[0] for q in qs)); zh = np.ceil(max(q[1] for q in qs)); need = zh - zl; res = res0; n = n_bins
    if fit == "raise" and need > n_bins * res0: out.append(None); continue
    if fit == "degrade_resolution":
        while need > n_bins * res: res *= 2
    if fit == "collapse_bins":
        if need > n_bins * res0: out.append(None); continue
        n = 2 ** int(np.floor(np.log2(n_bins)))
        while n // 2 >= 1 and (n // 2) * res0 >= need: n //= 2
    t = np.zeros((2, 2, n), dtype=np.float64)
    for rank, d in ds:
        x = (rank & 1) | ((rank >> 1) & 2) ; y = ((rank >> 1) & 1)
        t[y, x] = raster(d[:,0], d[:,1], zl, res, n)
    t = t.astype(np.float32) if dtype == "float32" else np.rint(t).astype(np.uint32 if dtype == "uint32" else np.uint16)
    out.append({"offset": float(zl + 0.0), "gain": res, "n": n, "hex": t.tobytes().hex()})
print(json.dumps(out))
)PY";
  struct Case {
    std::string fixture, field;
  };
  const std::vector<Case> cases{{"minimal", "h_tdigest"},
                                {"kitchen_sink", "h_tdigest_signal"},
                                {"kitchen_sink", "h_tdigest_noise"},
                                {"flux", "rx_flux"},
                                {"temporal", "h_tdigest"},
                                {"strata", "h_tdigest_noise"}};
  struct Params {
    std::uint32_t n_bins;
    double res;
    FitPolicy fit;
    TensorDType dtype;
  };
  const std::vector<Params> params{{128, 0.5, FitPolicy::Raise, TensorDType::U32},
                                   {128, 0.5, FitPolicy::Raise, TensorDType::F32},
                                   {16, 0.25, FitPolicy::DegradeResolution, TensorDType::U16},
                                   {100, 0.5, FitPolicy::CollapseBins, TensorDType::F32},
                                   {8, 0.5, FitPolicy::Raise, TensorDType::U32}};
  for (const Case& c : cases) {
    const fs::path leaf = c.fixture == "strata" ? test::strata_leaf() : test::fixture_leaf(c.fixture);
    const fs::path exp = c.fixture == "strata" ? test::zagg_dir() / "moczarr/tests/data/strata_hive.expected.json"
                                               : test::zagg_dir() / "tests/data/spec" / (c.fixture + ".expected.json");
    io::DirectoryStore store(leaf.string());
    const RaggedField f = RaggedField::open(store, "6/" + c.field);
    for (const Params& p : params) {
      SCOPED_TRACE(c.fixture + " " + c.field + " " + std::string(name_of(p.fit)) + " " + std::string(name_of(p.dtype)) +
                   " " + std::to_string(p.n_bins));
      const auto run =
          testing::run_python(script, {exp.string(), c.field, std::to_string(p.n_bins), std::to_string(p.res),
                                       std::string(name_of(p.fit)), std::string(name_of(p.dtype))});
      ASSERT_EQ(run.rc, 0) << run.err;
      const auto want = codec::json::parse_strict(run.out);
      TensorOptions o;
      o.n_bins = p.n_bins;
      o.resolution = p.res;
      o.fit = p.fit;
      o.dtype = p.dtype;
      bool any_raise = false;
      for (const auto& w : want) any_raise = any_raise || w.is_null();
      if (any_raise) {
        EXPECT_THROW(f.read_tensors(o), UsageError);
        continue;
      }
      const auto blocks = f.read_tensors(o);
      ASSERT_EQ(blocks.size(), want.size());
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        EXPECT_EQ(blocks[i].offset, want[i]["offset"].get<double>());
        EXPECT_EQ(blocks[i].gain, want[i]["gain"].get<double>());
        EXPECT_EQ(blocks[i].n_bins, want[i]["n"].get<std::uint32_t>());
        static const char* hexd = "0123456789abcdef";
        std::string hex;
        for (auto x : blocks[i].tensor)
          hex += hexd[std::to_integer<int>(x) >> 4], hex += hexd[std::to_integer<int>(x) & 15];
        EXPECT_EQ(hex, want[i]["hex"].get<std::string>()) << "block " << i;
      }
    }
  }
}

TEST(RaggedTensors, OptionRulesAndLimits) {
  io::DirectoryStore store(test::fixture_leaf("minimal").string());
  const RaggedField f = RaggedField::open(store, "6/h_tdigest");
  const auto refused = [&](auto mutate) {
    TensorOptions o;
    mutate(o);
    return f.read_tensors(o);
  };
  EXPECT_THROW(refused([](TensorOptions& o) { o.n_bins = 0; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.n_bins = (1u << 20) + 1; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.resolution = 0; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.resolution = std::nan(""); }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.bottom = 0.9, o.top = 0.1; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.top = 1.5; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.block_order = 6; }), UsageError);  // finer than a chunk
  EXPECT_THROW(refused([](TensorOptions& o) { o.block_order = 3; }), UsageError);  // axis not a multiple
  EXPECT_THROW(refused([](TensorOptions& o) { o.max_block_bytes = 100; }), LimitError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.n_bins = 4, o.fit = FitPolicy::CollapseBins; }), UsageError);
  EXPECT_THROW(refused([](TensorOptions& o) { o.subtree = morton::parse_decimal("1121311"); }),
               UsageError);  // finer than a chunk
  EXPECT_THROW(refused([](TensorOptions& o) { o.subtree = morton::parse_decimal("112131123333333333333333442343p"); }),
               UsageError);
  // raise names the window and suggests the other policies
  try {
    refused([](TensorOptions& o) { o.n_bins = 4; });
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("degrade_resolution"), std::string::npos);
  }
  // subtree: a chunk, a disjoint word (one warning, nothing yielded), the whole shard
  TensorOptions o;
  o.subtree = morton::parse_decimal("112132");
  auto blocks = f.read_tensors(o);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].start, 4u);
  std::vector<Warning> warnings;
  o.subtree = morton::parse_decimal("1121");  // an ancestor: the whole axis
  EXPECT_EQ(f.read_tensors(o).size(), 3u);
  o.subtree = morton::parse_decimal("21");
  o.warn = [&](const Warning& w) { warnings.push_back(w); };
  EXPECT_TRUE(f.read_tensors(o).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].code, "subtree_disjoint");
  // with a subtree the block order floor is the visited span's order
  o.subtree = morton::parse_decimal("112133");  // chunk 2: absent, nothing yielded
  o.warn = nullptr;
  EXPECT_TRUE(f.read_tensors(o).empty());
  o.subtree = morton::parse_decimal("112134");
  o.block_order = 4;
  EXPECT_THROW(f.read_tensors(o), UsageError);
  o.block_order = 5;
  EXPECT_EQ(f.read_tensors(o).size(), 1u);
  // integer overflow of the cast is a LimitError (RD-6): weight 300 in one bin into uint16 is fine,
  // so check the parsers instead
  EXPECT_EQ(parse_fit_policy("collapse_bins"), FitPolicy::CollapseBins);
  EXPECT_EQ(parse_tensor_dtype("uint16"), TensorDType::U16);
  EXPECT_THROW(parse_fit_policy("x"), UsageError);
  EXPECT_THROW(parse_tensor_dtype("int8"), UsageError);
  // flux + integer dtype warns
  io::DirectoryStore flux(test::fixture_leaf("flux").string());
  warnings.clear();
  TensorOptions fo;
  fo.warn = [&](const Warning& w) { warnings.push_back(w); };
  EXPECT_EQ(RaggedField::open(flux, "6/rx_flux").read_tensors(fo).size(), 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].code, "flux_integer_cast");
}

TEST(RaggedTensors, ThreadCountsGiveIdenticalResults) {
  io::DirectoryStore store(test::strata_leaf().string());
  const RaggedField f = RaggedField::open(store, "6/h_tdigest_noise");
  TensorOptions o1, o2;
  o1.threads = 1;
  o2.threads = 2;
  const auto a = f.read_tensors(o1), b = f.read_tensors(o2);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor, b[i].tensor);
}

// The sweep kernels fuse steps the spec lists separately (decode + validate, two quantiles in one
// walk, a CDF that finds each point's row on its own, bin edges computed once per block); each
// must equal the separate steps.
TEST(RaggedTensors, FusedDigestKernelsEqualTheSeparateSteps) {
  io::DirectoryStore strata(test::strata_leaf().string()), minimal(test::fixture_leaf("minimal").string()),
      flux(test::fixture_leaf("flux").string());
  const std::vector<std::pair<const io::Store*, std::string>> fields{
      {&strata, "6/h_tdigest_signal"}, {&strata, "6/h_tdigest_noise"}, {&minimal, "6/h_tdigest"}, {&flux, "6/rx_flux"}};
  std::size_t digests = 0;
  for (const auto& [store, field] : fields) {
    SCOPED_TRACE(field);
    const RaggedField f = RaggedField::open(*store, field);
    for (std::int64_t cell = 0; cell < static_cast<std::int64_t>(f.payload().size()); ++cell) {
      const auto bytes = f.read_cell(cell).bytes;
      if (bytes.empty()) continue;
      ++digests;
      const tdigest::Digest d = tdigest::decode(bytes, "cell");
      tdigest::Digest checked;
      tdigest::decode_checked_into(bytes, "cell", checked);
      EXPECT_EQ(checked.means, d.means);
      EXPECT_EQ(checked.weights, d.weights);
      const double total = tdigest::pairwise_sum(d.weights);
      for (const auto& [qa, qb] : {std::pair{0.05, 0.95}, std::pair{0.0, 1.0}, std::pair{0.5, 0.5}}) {
        const auto q = tdigest::quantiles(d, qa, qb, total);
        EXPECT_EQ(q.a, tdigest::quantile(d, qa));
        EXPECT_EQ(q.b, tdigest::quantile(d, qb));
      }
      // Unsorted points, repeats, NaN and points outside the means: each equals its own walk.
      const double lo = d.means.front(), hi = d.means.back(), mid = (lo + hi) / 2;
      const std::vector<double> x{mid, lo, hi + 1, lo - 1, mid, std::nan(""), hi, lo + (hi - lo) / 4, mid};
      std::vector<double> all(x.size()), one(1);
      tdigest::cdf(d, x, all);
      for (std::size_t i = 0; i < x.size(); ++i) {
        tdigest::cdf(d, std::span<const double>(&x[i], 1), one);
        if (std::isnan(one[0])) EXPECT_TRUE(std::isnan(all[i])) << "cell " << cell << " point " << i;
        else EXPECT_EQ(all[i], one[0]) << "cell " << cell << " point " << i;
      }
      // Counts from edges shared by a block's cells: max(0, CDF(e_{i+1}) − CDF(e_i)), each CDF
      // taken on its own, for bins reaching past both ends of the digest.
      constexpr std::uint32_t kBins = 16;
      const double res = (hi - lo) / 12 + 0.25, z_lo = lo - 2 * res;
      std::vector<double> counts(kBins), scratch, at(1), next(1);
      tdigest::rasterize_at(d, total, tdigest::bin_edges(z_lo, res, kBins), counts, scratch);
      for (std::uint32_t i = 0; i < kBins; ++i) {
        const double e0 = z_lo + res * static_cast<double>(i), e1 = z_lo + res * static_cast<double>(i + 1);
        tdigest::cdf(d, std::span<const double>(&e0, 1), at);
        tdigest::cdf(d, std::span<const double>(&e1, 1), next);
        EXPECT_EQ(counts[i], std::max(0.0, next[0] - at[0])) << "cell " << cell << " bin " << i;
      }
    }
  }
  EXPECT_GT(digests, 10u);
  // A broken row is reported as validate reports it.
  const auto row = [](float mean, float weight) {
    std::vector<std::byte> b(8);
    std::memcpy(b.data(), &mean, 4);
    std::memcpy(b.data() + 4, &weight, 4);
    return b;
  };
  for (const auto& [m1, w1] :
       {std::pair{1.0f, -1.0f}, std::pair{0.5f, 1.0f}, std::pair{NAN, 1.0f}, std::pair{2.0f, INFINITY}}) {
    std::vector<std::byte> payload = row(1, 1);
    const auto second = row(m1, w1);
    payload.insert(payload.end(), second.begin(), second.end());
    std::string want, got;
    try {
      tdigest::validate(tdigest::decode(payload, "cell"), "cell");
    } catch (const FormatError& e) {
      want = e.what();
    }
    tdigest::Digest d;
    try {
      tdigest::decode_checked_into(payload, "cell", d);
    } catch (const FormatError& e) {
      got = e.what();
    }
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want);
  }
}

// The checked decode folds the rules into one flag: a broken row of any kind must be found
// wherever it sits (first, middle or last row; the unsorted rule against the row before), with
// validate's message, and digests that keep the rules (ties between means included) must decode as
// the plain decode does.
TEST(RaggedTensors, CheckedDecodeFindsABrokenRowAtEveryPosition) {
  const auto payload_of = [](const std::vector<std::pair<float, float>>& rows) {
    std::vector<std::byte> b(rows.size() * 8);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::memcpy(b.data() + 8 * i, &rows[i].first, 4);
      std::memcpy(b.data() + 8 * i + 4, &rows[i].second, 4);
    }
    return b;
  };
  const std::vector<std::pair<float, float>> breaks{{NAN, 1.0f},      {INFINITY, 1.0f}, {-INFINITY, 1.0f},
                                                    {0.0f, 0.0f},     {0.0f, -2.0f},    {0.0f, NAN},
                                                    {0.0f, INFINITY}, {-100.0f, 1.0f}};  // the last: unsorted
  std::size_t cases = 0;
  for (std::size_t n = 1; n <= 13; ++n) {
    std::vector<std::pair<float, float>> rows;
    for (std::size_t i = 0; i < n; ++i)
      rows.emplace_back(static_cast<float>(i / 2) - 3.0f, 1.0f + static_cast<float>(i));
    const auto good = payload_of(rows);
    tdigest::Digest d;
    tdigest::decode_checked_into(good, "cell", d);
    const tdigest::Digest plain = tdigest::decode(good, "cell");
    EXPECT_EQ(d.means, plain.means);
    EXPECT_EQ(d.weights, plain.weights);
    for (std::size_t at = 0; at < n; ++at) {
      for (const auto& [mean, weight] : breaks) {
        if (at == 0 && mean == -100.0f) continue;  // the first row has nothing before it
        auto broken = rows;
        broken[at] = {std::isfinite(mean) && mean != -100.0f ? rows[at].first : mean, weight};
        const auto payload = payload_of(broken);
        std::string want, got;
        try {
          tdigest::validate(tdigest::decode(payload, "cell"), "cell");
        } catch (const FormatError& e) {
          want = e.what();
        }
        try {
          tdigest::decode_checked_into(payload, "cell", d);
        } catch (const FormatError& e) {
          got = e.what();
        }
        ASSERT_FALSE(want.empty()) << n << " rows, row " << at;
        EXPECT_EQ(got, want) << n << " rows, row " << at;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 600u);
}

// A sweep reuses its buffers: decoded chunks from batch to batch, and the tensors and masks a sink
// leaves in its blocks, kept for the process's next sweep too. None of it may leak into a later
// block: a leaf of many batches read whole (sinks that keep, copy or half-keep their blocks; 1 and
// 2 threads; blocks of one and of several read chunks) gives the blocks that one-chunk subtree
// sweeps give (each a separate call, starting from what the one before left behind).
// A small leaf of one shard: 4096 cells in 64 read chunks of 64, several batches at any thread
// count.
SynthLeafOptions small_leaf(std::uint32_t max_centroids, std::uint64_t seed) {
  SynthLeafOptions s;
  s.cell_order = 15;
  s.shard_order = 9;
  s.chunk_order = 12;
  s.shard_decimal = "1111111111";
  s.max_centroids = max_centroids;
  s.seed = seed;
  return s;
}

TEST(RaggedTensors, ReusedBuffersLeaveNoTraceInLaterBlocks) {
  testing::TempDir dir;
  io::DirectoryStore hive(dir.path().string());
  SynthLeafOptions s = small_leaf(60, 5);
  s.populated_fraction = 0.3;
  const SynthLeafReport report = synth_hive(hive, s);
  io::DirectoryStore leaf((dir / report.leaf_key).string());
  const RaggedField f = RaggedField::open(leaf, "15/h_tdigest");

  TensorOptions o;
  o.fit = FitPolicy::DegradeResolution;
  o.n_bins = 16;
  const std::vector<TensorBlock> kept = f.read_tensors(o);  // the sink keeps every block
  ASSERT_GT(kept.size(), 32u);
  const auto same = [](const TensorBlock& a, const TensorBlock& b) {
    return a.start == b.start && a.morton == b.morton && a.order == b.order && a.side == b.side &&
           a.n_bins == b.n_bins && a.offset == b.offset && a.gain == b.gain && a.tensor == b.tensor &&
           a.mask == b.mask && a.populated == b.populated && a.observed_empty == b.observed_empty &&
           a.weight_in_window == b.weight_in_window;
  };
  for (const TensorBlock& b : kept) {
    TensorOptions one = o;
    one.subtree = b.morton;
    const auto fresh = f.read_tensors(one);
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_TRUE(same(fresh[0], b)) << "block at " << b.start;
  }
  for (const unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    o.threads = threads;
    std::size_t i = 0;
    f.read_tensors(o, [&](TensorBlock&& b) {  // copies: every buffer goes back to the reader
      ASSERT_LT(i, kept.size());
      EXPECT_TRUE(same(b, kept[i++])) << "block at " << b.start;
    });
    EXPECT_EQ(i, kept.size());
    i = 0;
    f.read_tensors(o, [&](TensorBlock&& b) {  // keeps the tensor, gives the mask back
      const std::vector<std::byte> tensor = std::move(b.tensor);
      b.tensor = tensor;
      ASSERT_LT(i, kept.size());
      EXPECT_TRUE(same(b, kept[i++])) << "block at " << b.start;
    });
  }
  // Blocks of four read chunks, assembled across batches.
  o.block_order = s.cell_order - 4;
  const std::vector<TensorBlock> coarse = f.read_tensors(o);
  ASSERT_GT(coarse.size(), 4u);
  std::size_t i = 0;
  f.read_tensors(o, [&](TensorBlock&& b) {
    ASSERT_LT(i, coarse.size());
    EXPECT_TRUE(same(b, coarse[i++])) << "block at " << b.start;
  });
  EXPECT_EQ(i, coarse.size());
}

// A shard read whole is viewed in its map or copied out chunk by chunk with pread, as
// TESSERA_READ_PATH forces or the machine's probe picks: the same blocks, bit for bit, either way,
// from a local leaf and from the same objects held in memory.
TEST(RaggedTensors, EveryReadPathGivesTheSameBlocks) {
  testing::TempDir dir;
  io::DirectoryStore hive(dir.path().string());
  const SynthLeafReport report = synth_hive(hive, small_leaf(80, 9));
  io::DirectoryStore leaf((dir / report.leaf_key).string());
  io::MemoryStore memory;
  for (const std::string& key : leaf.list("")) memory.put(key, *leaf.get(key));

  TensorOptions o;
  o.fit = FitPolicy::DegradeResolution;
  o.n_bins = 24;
  std::vector<TensorBlock> mapped;
  {
    const testing::ScopedEnv path("TESSERA_READ_PATH", "mmap");
    mapped = RaggedField::open(leaf, "15/h_tdigest").read_tensors(o);
  }
  ASSERT_GT(mapped.size(), 16u);
  const auto expect_same = [&](const std::vector<TensorBlock>& got) {
    ASSERT_EQ(got.size(), mapped.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].start, mapped[i].start);
      EXPECT_EQ(got[i].offset, mapped[i].offset);
      EXPECT_EQ(got[i].tensor, mapped[i].tensor) << "block at " << got[i].start;
      EXPECT_EQ(got[i].mask, mapped[i].mask);
    }
  };
  for (const char* path : {"pread", "auto"}) {
    SCOPED_TRACE(path);
    const testing::ScopedEnv env("TESSERA_READ_PATH", path);
    expect_same(RaggedField::open(leaf, "15/h_tdigest").read_tensors(o));
    expect_same(RaggedField::open(memory, "15/h_tdigest").read_tensors(o));
  }
}

}  // namespace
}  // namespace tessera::ragged
