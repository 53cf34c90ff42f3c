// codec/json: number styles, string escaping, writer layout and misuse. Expected strings are
// spelled out from tet.md §5.1 and Python's json module; the random sweeps compare against
// /usr/bin/python3 (json.dumps, and an independent Python implementation of the §5.1 table
// fed by repr / numpy float32 shortest digits).
#include "tessera/codec/json.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

namespace tessera::codec::json {
namespace {

namespace fs = std::filesystem;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool have_python() {
  std::error_code ec;
  return fs::exists("/usr/bin/python3", ec);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string hex_of(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

std::string unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

// --- Tet style, f64 -----------------------------------------------------------------------------

TEST(JsonTetF64, SpecExamples) {
  EXPECT_EQ(format_f64(21.0), "21.0");
  EXPECT_EQ(format_f64(720.0), "720.0");
  EXPECT_EQ(format_f64(2366400.0), "2366400.0");
  EXPECT_EQ(format_f64(1e15), "1000000000000000.0");
  EXPECT_EQ(format_f64(3.5), "3.5");
  EXPECT_EQ(format_f64(35.0 / 12.0), "2.9166666666666665");
  EXPECT_EQ(format_f64(2.0 / 3.0), "0.6666666666666666");
  EXPECT_EQ(format_f64(0.00001), "0.00001");
  EXPECT_EQ(format_f64(1e16), "1e16");
  EXPECT_EQ(format_f64(9223372036854775808.0), "9.223372036854776e18");
  EXPECT_EQ(format_f64(1e-6), "1e-6");
  EXPECT_EQ(format_f64(1.5e-7), "1.5e-7");
}

TEST(JsonTetF64, ZerosAndNonFinite) {
  EXPECT_EQ(format_f64(0.0), "0.0");
  EXPECT_EQ(format_f64(-0.0), "-0.0");
  EXPECT_EQ(format_f64(kNaN), "null");
  EXPECT_EQ(format_f64(-kNaN), "null");
  EXPECT_EQ(format_f64(kInf), "null");
  EXPECT_EQ(format_f64(-kInf), "null");
}

TEST(JsonTetF64, Extremes) {
  EXPECT_EQ(format_f64(5e-324), "5e-324");  // smallest subnormal
  EXPECT_EQ(format_f64(-5e-324), "-5e-324");
  EXPECT_EQ(format_f64(1e-310), "1e-310");
  EXPECT_EQ(format_f64(2.225073858507201e-308), "2.225073858507201e-308");    // largest subnormal
  EXPECT_EQ(format_f64(2.2250738585072014e-308), "2.2250738585072014e-308");  // smallest normal
  EXPECT_EQ(format_f64(1.7976931348623157e308), "1.7976931348623157e308");
  EXPECT_EQ(format_f64(-1.7976931348623157e308), "-1.7976931348623157e308");
  EXPECT_EQ(format_f64(1e100), "1e100");
  EXPECT_EQ(format_f64(1.23e-18), "1.23e-18");
}

TEST(JsonTetF64, LargeBoundaryAtKk16) {
  EXPECT_EQ(format_f64(1e15), "1000000000000000.0");  // kk = 16: positional
  EXPECT_EQ(format_f64(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(format_f64(1000000000000000.2), "1000000000000000.2");
  EXPECT_EQ(format_f64(1e16), "1e16");  // kk = 17: exponent
  EXPECT_EQ(format_f64(1.5e16), "1.5e16");
  EXPECT_EQ(format_f64(123456789012345680.0), "1.2345678901234568e17");
  EXPECT_EQ(format_f64(1e21), "1e21");
  EXPECT_EQ(format_f64(-1e16), "-1e16");
}

TEST(JsonTetF64, SmallBoundaryAtKkMinus5) {
  EXPECT_EQ(format_f64(0.1), "0.1");
  EXPECT_EQ(format_f64(0.0001), "0.0001");    // kk = -3
  EXPECT_EQ(format_f64(0.00001), "0.00001");  // kk = -4: still positional
  EXPECT_EQ(format_f64(0.000012345), "0.000012345");
  EXPECT_EQ(format_f64(-0.00005), "-0.00005");
  EXPECT_EQ(format_f64(0.000001), "1e-6");  // kk = -5: exponent
  EXPECT_EQ(format_f64(1.2345e-6), "1.2345e-6");
  EXPECT_EQ(format_f64(-1e-7), "-1e-7");
}

// --- Tet style, f32 -----------------------------------------------------------------------------

TEST(JsonTetF32, SpecExamplesAndShortestF32Digits) {
  EXPECT_EQ(format_f32(0.2f), "0.2");
  EXPECT_EQ(format_f32(-1.4638501f), "-1.4638501");
  EXPECT_EQ(format_f32(0.0042697787f), "0.0042697787");
  EXPECT_EQ(format_f32(0.1f), "0.1");
  EXPECT_EQ(format_f32(8388607.5f), "8388607.5");
  EXPECT_EQ(format_f32(16777216.0f), "16777216.0");
  // The same value through the f64 path shows why the f32 path exists.
  EXPECT_EQ(format_f64(static_cast<double>(0.2f)), "0.20000000298023224");
}

TEST(JsonTetF32, Boundaries) {
  EXPECT_EQ(format_f32(1e12f), "1000000000000.0");  // kk = 13: positional
  EXPECT_EQ(format_f32(9999999e6f), "9999999000000.0");
  EXPECT_EQ(format_f32(1.2345678e12f), "1234567800000.0");
  EXPECT_EQ(format_f32(1e13f), "1e13");  // kk = 14: exponent
  EXPECT_EQ(format_f32(1.5e13f), "1.5e13");
  EXPECT_EQ(format_f32(1e-5f), "0.00001");
  EXPECT_EQ(format_f32(1e-6f), "0.000001");  // kk = -5: positional for f32
  EXPECT_EQ(format_f32(1.5e-6f), "0.0000015");
  EXPECT_EQ(format_f32(1e-7f), "1e-7");  // kk = -6: exponent
  EXPECT_EQ(format_f32(-2.5e-7f), "-2.5e-7");
}

TEST(JsonTetF32, Extremes) {
  EXPECT_EQ(format_f32(std::numeric_limits<float>::max()), "3.4028235e38");
  EXPECT_EQ(format_f32(std::numeric_limits<float>::min()), "1.1754944e-38");
  EXPECT_EQ(format_f32(std::numeric_limits<float>::denorm_min()), "1e-45");
  EXPECT_EQ(format_f32(3e-39f), "3e-39");
  EXPECT_EQ(format_f32(0.0f), "0.0");
  EXPECT_EQ(format_f32(-0.0f), "-0.0");
  EXPECT_EQ(format_f32(std::numeric_limits<float>::quiet_NaN()), "null");
  EXPECT_EQ(format_f32(-std::numeric_limits<float>::infinity()), "null");
}

// --- Python style -------------------------------------------------------------------------------

TEST(JsonPythonFloat, ReprForms) {
  const auto py = [](double v) { return format_f64(v, FloatStyle::Python); };
  EXPECT_EQ(py(1e16), "1e+16");
  EXPECT_EQ(py(1e15), "1000000000000000.0");
  EXPECT_EQ(py(1e-5), "1e-05");
  EXPECT_EQ(py(0.0001), "0.0001");
  EXPECT_EQ(py(21.0), "21.0");
  EXPECT_EQ(py(1.5e-7), "1.5e-07");
  EXPECT_EQ(py(1e100), "1e+100");
  EXPECT_EQ(py(5e-324), "5e-324");
  EXPECT_EQ(py(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(py(-0.0), "-0.0");
  EXPECT_EQ(py(kNaN), "NaN");
  EXPECT_EQ(py(kInf), "Infinity");
  EXPECT_EQ(py(-kInf), "-Infinity");
  EXPECT_EQ(format_f32(1e-5f, FloatStyle::Python), "1e-05");
  EXPECT_EQ(format_f32(0.2f, FloatStyle::Python), "0.2");
  EXPECT_EQ(format_f32(1e13f, FloatStyle::Python), "10000000000000.0");
}

// Doubles whose formatting is interesting: random bit patterns, short decimals at every scale,
// both sides of each power of ten and the exact integers near 2^53.
std::vector<double> sample_doubles() {
  std::vector<double> v{0.0,
                        -0.0,
                        kNaN,
                        kInf,
                        -kInf,
                        5e-324,
                        1.7976931348623157e308,
                        2.2250738585072014e-308,
                        2.225073858507201e-308,
                        9007199254740992.0,
                        9007199254740994.0,
                        9223372036854775808.0,
                        0.1,
                        0.2,
                        0.3,
                        1.0 / 3.0,
                        2.0 / 3.0};
  std::mt19937_64 rng(20240229);
  for (int i = 0; i < 150; ++i) {
    double d;
    do d = std::bit_cast<double>(rng());
    while (!std::isfinite(d));
    v.push_back(d);
  }
  std::uniform_real_distribution<double> mant(1.0, 10.0);
  std::uniform_int_distribution<int> exp10(-30, 30), prec(0, 16);
  for (int i = 0; i < 150; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", prec(rng), (rng() & 1 ? -1 : 1) * mant(rng) * std::pow(10.0, exp10(rng)));
    v.push_back(std::strtod(buf, nullptr));
  }
  for (int k = -8; k <= 22; ++k) {
    const double p = std::pow(10.0, k);
    v.push_back(p);
    v.push_back(std::nextafter(p, 0.0));
    v.push_back(std::nextafter(p, kInf));
    v.push_back(-1.5 * p);
  }
  return v;
}

TEST(JsonPythonFloat, MatchesPythonAndSpecTableOnSamples) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 not available";
  const std::vector<double> values = sample_doubles();
  std::string input;
  for (const double d : values) input += std::to_string(std::bit_cast<std::uint64_t>(d)) + "\n";
  // The Tet column re-derives tet.md §5.1 from repr's digits, independently of the C++ code.
  const char* code = R"PY(
import sys, json, struct, math, decimal
def layout(r, maxkk, minkk):
    sign, digits, exp = decimal.Decimal(r).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop(); exp += 1
    s = ''.join(map(str, digits)); n = len(s); kk = n + exp
    neg = '-' if sign else ''
    if n <= kk <= maxkk: return neg + s + '0' * (kk - n) + '.0'
    if 0 < kk <= maxkk: return neg + s[:kk] + '.' + s[kk:]
    if minkk < kk <= 0: return neg + '0.' + '0' * (-kk) + s
    return neg + s[0] + ('.' + s[1:] if n > 1 else '') + 'e' + str(kk - 1)
def tet(x):
    if math.isnan(x) or math.isinf(x): return 'null'
    if x == 0: return '-0.0' if math.copysign(1, x) < 0 else '0.0'
    return layout(repr(x), 16, -5)
for line in sys.stdin:
    x = struct.unpack('<d', struct.pack('<Q', int(line)))[0]
    print(json.dumps(x), tet(x))
)PY";
  testing::RunOptions options;
  options.stdin_data = input;
  const testing::RunResult r = testing::run_python(code, {}, options);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t space = lines[i].find(' ');
    const std::string python = lines[i].substr(0, space);
    const std::string tet = lines[i].substr(space + 1);
    EXPECT_EQ(format_f64(values[i], FloatStyle::Python), python) << "bits " << std::bit_cast<std::uint64_t>(values[i]);
    EXPECT_EQ(format_f64(values[i], FloatStyle::Tet), tet) << "bits " << std::bit_cast<std::uint64_t>(values[i]);
  }
}

TEST(JsonTetF32, MatchesNumpyShortestDigitsOnSamples) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  std::vector<float> values{0.2f,
                            1e12f,
                            1e13f,
                            1e-6f,
                            1e-7f,
                            3e-39f,
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -0.0f};
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    float f;
    do f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    while (!std::isfinite(f));
    values.push_back(f);
  }
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int k = -9; k <= 15; ++k)
    for (int j = 0; j < 4; ++j) values.push_back(unit(rng) * std::pow(10.0f, static_cast<float>(k)));
  std::string input;
  for (const float f : values) input += std::to_string(std::bit_cast<std::uint32_t>(f)) + "\n";
  // numpy's str(float32) is the shortest round-trip f32 decimal (Dragon4), independent of
  // std::to_chars; the Python column applies repr's layout to those digits.
  const char* code = R"PY(
import sys, json, struct, math, decimal
import numpy as np
def layout(r, maxkk, minkk):
    sign, digits, exp = decimal.Decimal(r).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop(); exp += 1
    s = ''.join(map(str, digits)); n = len(s); kk = n + exp
    neg = '-' if sign else ''
    if n <= kk <= maxkk: return neg + s + '0' * (kk - n) + '.0'
    if 0 < kk <= maxkk: return neg + s[:kk] + '.' + s[kk:]
    if minkk < kk <= 0: return neg + '0.' + '0' * (-kk) + s
    return neg + s[0] + ('.' + s[1:] if n > 1 else '') + 'e' + str(kk - 1)
for line in sys.stdin:
    x = np.frombuffer(struct.pack('<I', int(line)), dtype='<f4')[0]
    if x == 0:
        t = '-0.0' if math.copysign(1, float(x)) < 0 else '0.0'
        print(t, t)
        continue
    digits = np.format_float_scientific(x, unique=True, trim='-')
    print(layout(digits, 13, -6), json.dumps(float(digits)))
)PY";
  testing::RunOptions options;
  options.stdin_data = input;
  const testing::RunResult r = testing::run_python(code, {}, options);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t space = lines[i].find(' ');
    EXPECT_EQ(format_f32(values[i]), lines[i].substr(0, space)) << "bits " << std::bit_cast<std::uint32_t>(values[i]);
    EXPECT_EQ(format_f32(values[i], FloatStyle::Python), lines[i].substr(space + 1))
        << "bits " << std::bit_cast<std::uint32_t>(values[i]);
  }
}

// --- Strings ------------------------------------------------------------------------------------

std::string quoted(std::string_view s, bool ascii_only = false) {
  std::string out;
  append_quoted(out, s, ascii_only);
  return out;
}

TEST(JsonString, Escapes) {
  EXPECT_EQ(quoted("plain"), "\"plain\"");
  EXPECT_EQ(quoted(""), "\"\"");
  EXPECT_EQ(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quoted("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(quoted(std::string_view("\x00\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(quoted("\x1b"), "\"\\u001b\"");
  EXPECT_EQ(quoted("a/b"), "\"a/b\"");
  EXPECT_EQ(quoted("\x7f"), "\"\x7f\"");
  EXPECT_EQ(quoted("caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80\"");
}

TEST(JsonString, AsciiOnly) {
  EXPECT_EQ(quoted("caf\xc3\xa9", true), "\"caf\\u00e9\"");
  EXPECT_EQ(quoted("\xe2\x98\x83", true), "\"\\u2603\"");
  EXPECT_EQ(quoted("\xef\xbf\xbf", true), "\"\\uffff\"");
  EXPECT_EQ(quoted("\xf0\x9f\x98\x80", true), "\"\\ud83d\\ude00\"");  // U+1F600
  EXPECT_EQ(quoted("\xf4\x8f\xbf\xbf", true), "\"\\udbff\\udfff\"");  // U+10FFFF
  EXPECT_EQ(quoted("\x7f", true), "\"\\u007f\"");
  EXPECT_EQ(quoted("a/\n", true), "\"a/\\n\"");
}

TEST(JsonString, InvalidUtf8) {
  // Copied through when non-ASCII is literal; no \u form exists for it under ascii_only.
  EXPECT_EQ(quoted("\xff"), "\"\xff\"");
  for (const char* bad :
       {"\xff", "\xc3", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xe2\x98"})
    EXPECT_THROW(quoted(bad, true), FormatError) << hex_of(bad);
}

TEST(JsonString, MatchesPythonJsonDumps) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 not available";
  std::vector<std::string> strings{"",
                                   "plain",
                                   "quote\" back\\slash",
                                   "/slash/",
                                   "\n\r\t\b\f",
                                   "\x7f",
                                   "caf\xc3\xa9",
                                   "\xe2\x98\x83\xef\xbf\xbf",
                                   "\xf0\x9f\x98\x80 astral",
                                   "\xf4\x8f\xbf\xbf"};
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  strings.push_back(controls);
  std::string input;
  for (const auto& s : strings) input += hex_of(s) + "\n";
  const char* code = R"PY(
import sys, json
for line in sys.stdin:
    s = bytes.fromhex(line.strip()).decode('utf-8')
    print(json.dumps(s).encode().hex(), json.dumps(s, ensure_ascii=False).encode('utf-8').hex())
)PY";
  testing::RunOptions options;
  options.stdin_data = input;
  const testing::RunResult r = testing::run_python(code, {}, options);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), strings.size());
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const std::size_t space = lines[i].find(' ');
    EXPECT_EQ(quoted(strings[i], true), unhex(lines[i].substr(0, space))) << hex_of(strings[i]);
    EXPECT_EQ(quoted(strings[i], false), unhex(lines[i].substr(space + 1))) << hex_of(strings[i]);
  }
}

// --- Writer layout ------------------------------------------------------------------------------

void write_sample(JsonWriter& w) {
  w.begin_object();
  w.key("name").value("t\"1");
  w.key("n").value(3);
  w.key("big").value(std::numeric_limits<std::uint64_t>::max());
  w.key("neg").value(std::numeric_limits<std::int64_t>::min());
  w.key("f").value(0.5);
  w.key("g").value_f32(0.2f);
  w.key("ok").value(true);
  w.key("none").value(nullptr);
  w.key("empty_a").begin_array().end_array();
  w.key("empty_o").begin_object().end_object();
  w.key("list")
      .begin_array()
      .value(1)
      .begin_array()
      .value("x")
      .end_array()
      .begin_object()
      .key("k")
      .value(false)
      .end_object()
      .end_array();
  w.end_object();
}

TEST(JsonWriterLayout, Compact) {
  std::string out;
  JsonWriter w(out, DumpOptions::tet_compact());
  write_sample(w);
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(out, R"({"name":"t\"1","n":3,"big":18446744073709551615,"neg":-9223372036854775808,"f":0.5,"g":0.2,)"
                 R"("ok":true,"none":null,"empty_a":[],"empty_o":{},"list":[1,["x"],{"k":false}]})");
}

TEST(JsonWriterLayout, Pretty) {
  std::string out;
  JsonWriter w(out, DumpOptions::tet_pretty());
  write_sample(w);
  EXPECT_EQ(out, R"({
  "name": "t\"1",
  "n": 3,
  "big": 18446744073709551615,
  "neg": -9223372036854775808,
  "f": 0.5,
  "g": 0.2,
  "ok": true,
  "none": null,
  "empty_a": [],
  "empty_o": {},
  "list": [
    1,
    [
      "x"
    ],
    {
      "k": false
    }
  ]
})");
}

TEST(JsonWriterLayout, ScalarsAndEmptyTopLevel) {
  EXPECT_EQ(dump(Json::array(), DumpOptions::tet_pretty()), "[]");
  EXPECT_EQ(dump(Json::object(), DumpOptions::tet_pretty()), "{}");
  EXPECT_EQ(dump(Json("s")), "\"s\"");
  EXPECT_EQ(dump(Json(1e16)), "1e16");
  EXPECT_EQ(dump(Json(1e16), DumpOptions::python_pretty()), "1e+16");
  EXPECT_EQ(dump(Json(kNaN)), "null");
  EXPECT_EQ(dump(Json(kNaN), DumpOptions::python_canonical()), "NaN");
  EXPECT_EQ(dump(Json(-kInf), DumpOptions::python_canonical()), "-Infinity");
  EXPECT_EQ(dump(Json(-7)), "-7");
  EXPECT_EQ(dump(Json(std::uint64_t{7})), "7");
  EXPECT_EQ(dump(Json(1.0)), "1.0");
  EXPECT_EQ(dump(Json(nullptr)), "null");
}

TEST(JsonWriterLayout, IntegerOverloads) {
  std::string out;
  JsonWriter w(out);
  w.begin_array();
  w.value(-1).value(2u).value(std::int8_t{-3}).value(std::uint16_t{4}).value(5LL).value(6ULL);
  w.value(std::size_t{7}).value(std::int64_t{-8});
  w.end_array();
  EXPECT_EQ(out, "[-1,2,-3,4,5,6,7,-8]");
}

TEST(JsonWriterLayout, EmbeddedTreeFollowsIndentAndSortKeys) {
  const Json tree = {{"b", 1}, {"a", {{"d", Json::array()}, {"c", {1.5, "x"}}}}};
  std::string out;
  DumpOptions options = DumpOptions::tet_pretty();
  options.sort_keys = true;
  JsonWriter w(out, options);
  // Streamed members keep their order; only the embedded tree is sorted.
  w.begin_object().key("z").value(tree).key("y").value(0).end_object();
  EXPECT_EQ(out, R"({
  "z": {
    "a": {
      "c": [
        1.5,
        "x"
      ],
      "d": []
    },
    "b": 1
  },
  "y": 0
})");
  EXPECT_EQ(dump(tree), R"({"b":1,"a":{"d":[],"c":[1.5,"x"]}})");
  EXPECT_EQ(dump(tree, {0, false, FloatStyle::Tet, false}),
            "{\n\"b\": 1,\n\"a\": {\n\"d\": [],\n\"c\": [\n1.5,\n\"x\"\n]\n}\n}");
}

TEST(JsonWriterLayout, Misuse) {
  {
    std::string out;
    JsonWriter w(out);
    EXPECT_THROW(w.key("a"), UsageError);
    w.begin_object();
    EXPECT_THROW(w.value(1), UsageError);
    EXPECT_THROW(w.end_array(), UsageError);
    w.key("a");
    EXPECT_THROW(w.key("b"), UsageError);
    EXPECT_THROW(w.end_object(), UsageError);
    w.value(1);
    w.end_object();
    EXPECT_TRUE(w.complete());
    EXPECT_THROW(w.value(2), UsageError);
    EXPECT_THROW(w.end_object(), UsageError);
  }
  {
    std::string out;
    JsonWriter w(out);
    w.begin_array();
    EXPECT_THROW(w.key("a"), UsageError);
    EXPECT_THROW(w.end_object(), UsageError);
    EXPECT_FALSE(w.complete());
  }
  std::string out;
  EXPECT_THROW(JsonWriter(out, {-2, false, FloatStyle::Tet, false}), UsageError);
  EXPECT_THROW(dump(Json::binary({1, 2, 3})), UsageError);
}

TEST(JsonWriterLayout, PythonLayoutsMatchJsonDumps) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 not available";
  Json doc = Json::object();
  doc["zeta"] = {1, 2.5, -0.0, 1e-5, 1e16, 123456789.125, kNaN, kInf, -kInf};
  doc["alpha"] = {{"nested", Json::object()}, {"list", Json::array()}, {"s", "caf\xc3\xa9 \xf0\x9f\x98\x80\x7f/\n"}};
  doc["\xc3\xa9"] = true;
  doc["Z"] = nullptr;
  doc["\xf0\x9f\x98\x80"] = std::numeric_limits<std::uint64_t>::max();
  doc["\xef\xbf\xbf"] = std::numeric_limits<std::int64_t>::min();
  doc["a b"] = Json::parse(R"([{"x":{"y":[1,[2,[3]],{}]}}])");
  // Python reads the document in insertion order; each layout is then produced on both sides.
  const std::string compact = dump(doc, {-1, false, FloatStyle::Python, true});
  const char* code = R"PY(
import sys, json
doc = json.loads(sys.stdin.read())
print(json.dumps(doc, indent=2).encode().hex())
print(json.dumps(doc, sort_keys=True, separators=(',', ':')).encode().hex())
print(json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True).encode('utf-8').hex())
)PY";
  testing::RunOptions options;
  options.stdin_data = compact;
  const testing::RunResult r = testing::run_python(code, {}, options);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(dump(doc, DumpOptions::python_pretty()), unhex(lines[0]));
  EXPECT_EQ(dump(doc, DumpOptions::python_canonical()), unhex(lines[1]));
  EXPECT_EQ(dump(doc, {2, true, FloatStyle::Python, false}), unhex(lines[2]));
}

}  // namespace
}  // namespace tessera::codec::json
