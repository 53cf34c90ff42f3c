// What the obs/var input tests share: the fixture script (tests/obs_input/obs_fixtures.py), and
// comparing columns read by tessera with the values pandas / anndata produced, printed by the
// script as Python would print them (`str()` of each value, null for missing).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/columnar/column.hpp"

namespace tessera::obs_input::test {

inline bool have_anndata() {
  static const bool ok =
      tessera::testing::run_process({"/usr/bin/python3", "-c", "import anndata, h5py, scipy, pandas"}).rc == 0;
  return ok;
}

inline std::string fixtures_script() {
  return (tessera::testing::source_dir() / "tests/obs_input/obs_fixtures.py").string();
}

// Runs the fixture script; the test fails (and the caller should return) when it fails.
inline ::testing::AssertionResult fixture(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/python3", fixtures_script()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = tessera::testing::run_process(argv);
  if (r.rc != 0) return ::testing::AssertionFailure() << "obs_fixtures.py failed: " << r.err << r.out;
  return ::testing::AssertionSuccess();
}

// Python's str() of row `r` (floats as repr, `nan`/`inf`; booleans True/False).
inline std::string python_text(const columnar::Column& c, std::uint64_t r) {
  using columnar::ColumnType;
  const auto real = [](double v) -> std::string {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    return codec::json::format_f64(v, codec::json::FloatStyle::Python);
  };
  switch (c.type) {
    case ColumnType::Float: return real(static_cast<double>(c.value<float>(r)));
    case ColumnType::Double: return real(c.value<double>(r));
    case ColumnType::Bool: return c.value<std::uint8_t>(r) != 0 ? "True" : "False";
    case ColumnType::String: return std::string(c.string(r));
    default:
      return columnar::visit_value_type(c.type, [&](auto tag) { return std::to_string(c.value<decltype(tag)>(r)); });
  }
  return {};
}

// Every row of `c` equals the expected strings (null = missing).
inline void expect_values(const columnar::Column& c, const nlohmann::json& want, const std::string& what) {
  ASSERT_TRUE(want.is_array()) << what;
  ASSERT_EQ(c.length, want.size()) << what;
  for (std::uint64_t r = 0; r < c.length; ++r) {
    if (want[r].is_null()) {
      EXPECT_FALSE(c.is_valid(r)) << what << " row " << r << " should be missing";
      continue;
    }
    ASSERT_TRUE(c.is_valid(r)) << what << " row " << r << " is missing, expected " << want[r].dump();
    EXPECT_EQ(python_text(c, r), want[r].get<std::string>()) << what << " row " << r;
  }
}

}  // namespace tessera::obs_input::test
