// tdigest::cdf and rasterize_at against numpy's interp, run on the same digests: digests with
// repeated means (numpy takes the last of equal means at or below a point), points in any order,
// on the means, between them and outside them, and bin edges a few rows apart as a sweep has them.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/ragged/tdigest.hpp"

namespace tessera::ragged {
namespace {

// A payload of float32 (mean, weight) rows.
std::vector<std::byte> payload_of(const std::vector<float>& means, const std::vector<float>& weights) {
  std::vector<std::byte> b(means.size() * 8);
  for (std::size_t i = 0; i < means.size(); ++i) {
    std::memcpy(b.data() + 8 * i, &means[i], 4);
    std::memcpy(b.data() + 8 * i + 4, &weights[i], 4);
  }
  return b;
}

std::string numbers(const std::vector<double>& v) {
  std::string s = "[";
  char buf[40];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.17g", v[i]);
    s += (i ? "," : "") + std::string(buf);
  }
  return s + "]";
}

TEST(TdigestCdf, AgreesWithNumpyInterpOnRepeatedMeansAndPointsInAnyOrder) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "numpy unavailable";
  const std::string script = R"PY(
import json, sys, numpy as np
cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    m = np.array(c["m"], dtype=np.float32).astype(np.float64)
    w = np.array(c["w"], dtype=np.float32).astype(np.float64)
    x = np.array(c["x"], dtype=np.float64)
    out.append([float(v).hex() for v in np.interp(x, m, np.cumsum(w) - w / 2, left=0.0, right=np.sum(w))])
print(json.dumps(out))
)PY";
  std::mt19937_64 rng(11);
  struct Case {
    std::vector<float> m, w;
    std::vector<double> x;
  };
  std::vector<Case> cases;
  for (int n = 0; n < 40; ++n) {
    Case c;
    const std::size_t k = 2 + rng() % (n < 20 ? 12 : 400);
    float mean = static_cast<float>(rng() % 100) / 4.0f - 10.0f;
    for (std::size_t j = 0; j < k; ++j) {
      // About one step in three repeats the mean before it.
      if (j > 0 && rng() % 3 != 0) mean += static_cast<float>(1 + rng() % 8) / 8.0f;
      c.m.push_back(mean);
      c.w.push_back(static_cast<float>(1 + rng() % 20) * (n % 2 ? 1.0f : 0.37f));
    }
    const double lo = c.m.front(), hi = c.m.back();
    for (std::size_t j = 0; j < k; j += 1 + rng() % 3) c.x.push_back(c.m[j]);  // on means, repeats included
    for (int i = 0; i < 30; ++i) c.x.push_back(lo - 1 + (hi - lo + 2) * static_cast<double>(rng() % 1000) / 999.0);
    std::shuffle(c.x.begin(), c.x.end(), rng);
    cases.push_back(std::move(c));
  }
  std::string json = "[";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<double> m(cases[i].m.begin(), cases[i].m.end()), w(cases[i].w.begin(), cases[i].w.end());
    json += (i ? "," : "") + std::string("{\"m\":") + numbers(m) + ",\"w\":" + numbers(w) +
            ",\"x\":" + numbers(cases[i].x) + "}";
  }
  json += "]";
  const auto dir = testing::TempDir("tdigest-cdf");
  const auto input = dir.path() / "cases.json";
  testing::write_file_text(input, json);
  const auto run = testing::run_python(script, {input.string()});
  ASSERT_EQ(run.rc, 0) << run.err;
  const auto want = codec::json::parse_strict(run.out);
  ASSERT_EQ(want.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const tdigest::Digest d = tdigest::decode(payload_of(c.m, c.w), "case");
    std::vector<double> got(c.x.size());
    tdigest::cdf(d, c.x, got);
    for (std::size_t p = 0; p < c.x.size(); ++p)
      EXPECT_EQ(got[p], std::strtod(want[i][p].get<std::string>().c_str(), nullptr))
          << "case " << i << " point " << c.x[p] << " of " << c.m.size() << " rows";
    // Counts over bin edges a few rows apart, as a sweep rasterizes a cell.
    const double res = (c.m.back() - c.m.front()) / 20 + 0.125, z_lo = c.m.front() - 3 * res;
    const auto edges = tdigest::bin_edges(z_lo, res, 32);
    std::vector<double> counts(32), scratch, at(edges.size());
    tdigest::rasterize_at(d, tdigest::pairwise_sum(d.weights), edges, counts, scratch);
    tdigest::cdf(d, edges, at);
    for (std::size_t b = 0; b < counts.size(); ++b)
      EXPECT_EQ(counts[b], std::max(0.0, at[b + 1] - at[b])) << "case " << i << " bin " << b;
  }
}

}  // namespace
}  // namespace tessera::ragged
