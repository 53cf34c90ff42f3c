// Stratified builds: the row predicates of a stratum's `where` (ragged/row_predicate.hpp) against
// what numpy makes of the same text, and the composition word (spec §2.7) against zagg's golden
// word and the quantization rules. The end-to-end build from a granule is checked against h5py +
// numpy in tests/python/test_ragged_granules.py.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/build.hpp"
#include "tessera/ragged/leaf_writer.hpp"
#include "tessera/ragged/row_predicate.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_zagg_config.cpp"
#undef TESSERA_FUZZ_NO_ENTRY_POINT

namespace tessera::ragged {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The predicate's value on every row of `columns` (one vector per column name, in columns() order).
std::vector<bool> rows_of(const RowPredicate& p, const std::vector<std::vector<double>>& columns) {
  std::vector<const double*> values;
  for (const auto& c : columns) values.push_back(c.data());
  std::vector<bool> out;
  for (std::size_t i = 0; i < columns.front().size(); ++i) out.push_back(p(values, i));
  return out;
}

std::string refusal(const std::string& text) {
  try {
    (void)RowPredicate::parse(text, "k");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RowPredicate, EvaluatesAsNumpyDoes) {
  const auto p = RowPredicate::parse("(a >= 2) | (b >= 2)", "k");
  EXPECT_EQ(p.columns(), (std::vector<std::string>{"a", "b"}));
  // numpy: (a >= 2) | (b >= 2) for a = [0, 2, 1, nan], b = [3, 0, 1, 2]
  EXPECT_EQ(rows_of(p, {{0, 2, 1, kNaN}, {3, 0, 1, 2}}), (std::vector<bool>{true, true, false, true}));
  const auto noise = RowPredicate::parse("~((a >= 2) | (b >= 2))", "k");
  EXPECT_EQ(rows_of(noise, {{0, 2, 1, kNaN}, {3, 0, 1, 2}}), (std::vector<bool>{false, false, true, false}));
  // & binds tighter than |; ~ tighter than &; a column may appear twice; numbers on either side.
  const auto mixed = RowPredicate::parse("(a == 1) | (b != 0) & ~(2 < a)", "k");
  EXPECT_EQ(mixed.columns(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rows_of(mixed, {{1, 3, 2, kNaN}, {0, 1, 1, 1}}), (std::vector<bool>{true, false, true, true}));
  // NaN compares false except by != (IEEE, as numpy).
  const auto ne = RowPredicate::parse("a != a", "k");
  EXPECT_EQ(rows_of(ne, {{1, kNaN}}), (std::vector<bool>{false, true}));
  const auto exp = RowPredicate::parse(" a<=-1.5e0 ", "k");
  EXPECT_EQ(rows_of(exp, {{-2, -1.5, 0}}), (std::vector<bool>{true, true, false}));
}

TEST(RowPredicate, TextsNumpyReadsOtherwiseAreRefused) {
  // Python binds `2 | b` first: refused, never evaluated as two comparisons.
  EXPECT_NE(refusal("a >= 2 | b >= 2").find("parenthesize each comparison"), std::string::npos);
  EXPECT_NE(refusal("a").find("a value, not a condition"), std::string::npos);
  EXPECT_NE(refusal("~a").find("the operand of ~ must be a condition"), std::string::npos);
  EXPECT_NE(refusal("1 < a < 3").find("a chained comparison"), std::string::npos);
  EXPECT_NE(refusal("(a > 1) and (b > 1)").find("'and'"), std::string::npos);
  EXPECT_NE(refusal("not (a > 1)").find("'not'"), std::string::npos);
  EXPECT_NE(refusal("np.abs(a) > 1").find("a call, attribute or subscript"), std::string::npos);
  EXPECT_NE(refusal("a[0] > 1").find("a call, attribute or subscript"), std::string::npos);
  EXPECT_NE(refusal("(a > 1").find("a missing ')'"), std::string::npos);
  EXPECT_NE(refusal("a > ").find("an incomplete expression"), std::string::npos);
  EXPECT_NE(refusal("a > 1e999").find("expected a column name"), std::string::npos);
  EXPECT_NE(refusal("").find("an incomplete expression"), std::string::npos);
  EXPECT_EQ(refusal("a >= 2 | b").substr(0, 17), "k: 'a >= 2 | b': ");
  // Deep nesting ends in an error, not a stack overflow.
  std::string parens(100'000, '('), tildes(100'000, '~');
  parens.append("a > 1");
  tildes.append("(a > 1)");
  EXPECT_NE(refusal(parens).find("levels deep"), std::string::npos);
  EXPECT_NE(refusal(tildes).find("levels deep"), std::string::npos);
  for (const std::string& text : {std::string(5000, '('), std::string(5000, '~'), std::string("((((a>1)|")})
    tessera::fuzzing::exercise_row_predicate(text);
}

TEST(CompositionWord, MatchesZaggsGoldenAndTheQuantizationRules) {
  // zagg's golden: one signal photon with per-surface confidences [4, -1, 0, 3, 1] at threshold
  // 2 → lanes [255, 0, 0, 255, 0, 0, 0, 255] → 0xFF000000FF0000FF, LSB-first.
  const std::array<double, 8> golden{1, 0, 0, 1, 0, 0, 0, 1};
  EXPECT_EQ(composition_word(golden, 1), 0xFF000000FF0000FFull);
  EXPECT_EQ(composition_word(golden, 1), 18374686483949814015ull);
  // N = 0 packs to 0.
  EXPECT_EQ(composition_word(std::array<double, 8>{}, 0), 0u);
  // The presence floor: 1 of 1000 rounds to 0 but is present, so 1.
  EXPECT_EQ(composition_word(std::array<double, 8>{1, 0, 0, 0, 0, 0, 0, 0}, 1000), 1u);
  // Ties to even: 255·1/2 = 127.5 → 128; 255·3/2 = 382.5 → clipped to 255.
  EXPECT_EQ(composition_word(std::array<double, 8>{1, 0, 0, 0, 0, 0, 0, 0}, 2), 128u);
  EXPECT_EQ(composition_word(std::array<double, 8>{0, 3, 0, 0, 0, 0, 0, 0}, 2), 255u << 8);
  // 255·5/34 = 37.5 → 38 (even); 255·3/34 = 22.5 → 22 (even).
  EXPECT_EQ(composition_word(std::array<double, 8>{0, 0, 5, 3, 0, 0, 0, 0}, 34), (38ull << 16) | (22ull << 24));
}

TEST(StrataBuild, BadStrataAreRefusedBeforeTheStoreIsTouched) {
  const tessera::testing::TempDir dir("strata-refused");
  const auto out = (dir.path() / "hive").string();
  build::BuildOptions o;
  o.inputs = {(dir.path() / "points.csv").string()};  // never read
  o.value_col = "h";
  FieldSpec signal;
  signal.name = "h_signal";
  signal.where = "(conf >= 2) | conf > 3";
  o.leaf.fields = {signal};
  try {
    (void)build::run(out, o);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'h_signal' where: '(conf >= 2) | conf > 3'"), std::string::npos)
        << e.what();
  }
  // Once rows carry class words, every field owns one of their 32 low bits.
  o.leaf.fields.clear();
  for (int i = 0; i < 33; ++i) {
    FieldSpec f;
    f.name = "f" + std::to_string(i);
    if (i == 0) f.where = "conf >= 2";
    o.leaf.fields.push_back(f);
  }
  EXPECT_THROW((void)build::run(out, o), UsageError);
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tessera::ragged
