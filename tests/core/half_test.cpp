// binary16 conversions checked bit for bit against numpy: every half pattern widened to float,
// and about a million floats (random patterns, every rounding tie, overflow and subnormal edges)
// narrowed to half.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/half.hpp"

namespace {

using tessera::testing::run_python;
using tessera::testing::TempDir;

std::string hex(std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

bool half_is_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
bool float_bits_are_nan(std::uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0; }

// Reads a file of little-endian words written by numpy's tofile.
template <typename T>
std::vector<T> read_words(const std::filesystem::path& path) {
  const auto bytes = tessera::testing::read_file_bytes(path);
  std::vector<T> words(bytes.size() / sizeof(T));
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = tessera::load_le<T>(bytes.data() + i * sizeof(T));
  return words;
}

TEST(Half, KnownValues) {
  EXPECT_EQ(tessera::half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(tessera::half_to_float(0xC000), -2.0f);
  EXPECT_EQ(tessera::half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(tessera::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(tessera::half_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(tessera::half_to_float(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(tessera::half_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(tessera::half_to_float(0x7C00), INFINITY);
  EXPECT_EQ(tessera::half_to_double(0x3555), 0x1.554p-2);
  EXPECT_EQ(tessera::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(tessera::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(tessera::float_to_half(65520.0f), 0x7C00);  // the tie above 65504 rounds to even: inf
  EXPECT_EQ(tessera::float_to_half(-0.0f), 0x8000);
  EXPECT_TRUE(half_is_nan(tessera::float_to_half(NAN)));
}

TEST(Half, WideningMatchesNumpyForEveryPattern) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  TempDir dir;
  const auto out = dir / "widened.f32";
  const auto r = run_python(
      "import sys, numpy as np\n"
      "np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32).tofile(sys.argv[1])\n",
      {out.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto expected = read_words<std::uint32_t>(out);
  ASSERT_EQ(expected.size(), 65536u);

  int mismatches = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float got = tessera::half_to_float(static_cast<std::uint16_t>(h));
    const std::uint32_t got_bits = std::bit_cast<std::uint32_t>(got);
    const std::uint32_t want = expected[h];
    const bool ok = float_bits_are_nan(want) ? (std::isnan(got) && (got_bits >> 31) == (want >> 31)) : got_bits == want;
    // The double widening must be the float widening, exactly.
    const bool ok_double = float_bits_are_nan(want) ? std::isnan(tessera::half_to_double(static_cast<std::uint16_t>(h)))
                                                    : tessera::half_to_double(static_cast<std::uint16_t>(h)) ==
                                                          static_cast<double>(std::bit_cast<float>(want));
    if ((!ok || !ok_double) && ++mismatches <= 10)
      ADD_FAILURE() << "half " << hex(h, 4) << ": tessera " << hex(got_bits, 8) << ", numpy " << hex(want, 8);
  }
  EXPECT_EQ(mismatches, 0);
}

// Inputs for narrowing: the boundaries named in IEEE 754 binary16, every tie between adjacent
// finite halves (and one float ulp either side of it), and random floats.
std::vector<std::uint32_t> narrowing_inputs() {
  std::vector<std::uint32_t> in;
  const float boundaries[] = {
      0.0f,
      1.0f,
      65504.0f,
      65519.996f,
      65520.0f,
      65536.0f,
      1e10f,
      INFINITY,
      NAN,
      std::ldexp(1.0f, -24),  // smallest subnormal half
      std::ldexp(1.0f, -25),  // tie between 0 and the smallest subnormal: to 0
      std::nextafter(std::ldexp(1.0f, -25), 1.0f),
      std::ldexp(3.0f, -26),  // between 2^-25 and 2^-24: rounds up
      std::ldexp(1.0f, -26),
      std::ldexp(1.0f, -14),
      std::ldexp(1023.5f, -24),
      std::ldexp(1.0f, -149),
      std::nextafter(std::ldexp(1.0f, -14), 0.0f),
      1.0f + std::ldexp(1.0f, -11),
      1.0f + std::ldexp(3.0f, -11),
      2048.0f,
      2049.0f,
      2051.0f,
      3.14159265f,
      1e-5f,
      6.1e-5f,
      5.96e-8f,
      3.4028235e38f,
  };
  for (float f : boundaries) {
    in.push_back(std::bit_cast<std::uint32_t>(f));
    in.push_back(std::bit_cast<std::uint32_t>(-f));
  }
  for (std::uint32_t nan_bits : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7F802000u, 0xFFC00001u})
    in.push_back(nan_bits);
  for (std::uint16_t h = 0; h < 0x7BFF; ++h) {
    const double lo = tessera::half_to_double(h);
    const double hi = tessera::half_to_double(static_cast<std::uint16_t>(h + 1));
    const float tie = static_cast<float>((lo + hi) / 2);  // exact: halves have 11 significant bits
    for (float f : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, INFINITY)}) {
      in.push_back(std::bit_cast<std::uint32_t>(f));
      in.push_back(std::bit_cast<std::uint32_t>(-f));
    }
  }
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 400'000; ++i) in.push_back(static_cast<std::uint32_t>(rng()));
  // Mostly in and around the half range, where rounding matters: exponents 2^-27 .. 2^17.
  std::uniform_int_distribution<std::uint32_t> exponent(100, 144);
  for (int i = 0; i < 600'000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    in.push_back((bits & 0x807FFFFFu) | (exponent(rng) << 23));
  }
  return in;
}

TEST(Half, NarrowingMatchesNumpyRoundToNearestEven) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  const auto inputs = narrowing_inputs();
  TempDir dir;
  const auto in_path = dir / "in.f32";
  const auto out_path = dir / "out.f16";
  std::vector<std::byte> in_bytes;
  for (std::uint32_t b : inputs) tessera::append_le(in_bytes, b);
  tessera::testing::write_file_bytes(in_path, in_bytes);
  const auto r = run_python(
      "import sys, numpy as np\n"
      "with np.errstate(all='ignore'):\n"
      "    np.fromfile(sys.argv[1], dtype='<f4').astype(np.float16).tofile(sys.argv[2])\n",
      {in_path.string(), out_path.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto expected = read_words<std::uint16_t>(out_path);
  ASSERT_EQ(expected.size(), inputs.size());

  int mismatches = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::uint16_t got = tessera::float_to_half(std::bit_cast<float>(inputs[i]));
    const std::uint16_t want = expected[i];
    // NaN payloads are not specified by IEEE 754 narrowing; NaN-ness and sign are.
    const bool ok = half_is_nan(want) ? (half_is_nan(got) && (got & 0x8000u) == (want & 0x8000u)) : got == want;
    if (!ok && ++mismatches <= 10)
      ADD_FAILURE() << "float " << hex(inputs[i], 8) << " (" << std::bit_cast<float>(inputs[i]) << "): tessera "
                    << hex(got, 4) << ", numpy " << hex(want, 4);
  }
  EXPECT_EQ(mismatches, 0) << "of " << inputs.size() << " inputs";
}

}  // namespace
