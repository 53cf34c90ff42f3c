// The shared JSON field layer: exact integer ranges (never a bool or a float), lists that refuse
// one bad element, and Fields' located errors. Trees come from parse_strict, as in every format.
#include "tessera/codec/json_fields.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "support/error_text.hpp"
#include "tessera/core/error.hpp"

namespace tessera::codec::json {
namespace {

Json parsed(std::string_view text) { return parse_strict(text, "test.json"); }

TEST(JsonValues, IntegersAreExactAndTyped) {
  EXPECT_EQ(as_int64(parsed("-9223372036854775808")), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(as_int64(parsed("9223372036854775807")), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(as_int64(parsed("9223372036854775808")));  // above int64: refused, not wrapped
  EXPECT_EQ(as_uint64(parsed("18446744073709551615")), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(as_uint64(parsed("-1")));
  for (const char* not_integer : {"1.0", "true", "\"1\"", "null", "[1]"}) {
    EXPECT_FALSE(as_int64(parsed(not_integer))) << not_integer;
    EXPECT_FALSE(as_uint64(parsed(not_integer))) << not_integer;
  }
  // The sorted tree type tet's footer reads converts the same way.
  EXPECT_EQ(as_uint64(nlohmann::json::parse("7")), 7u);
}

TEST(JsonValues, ListsRefuseOneBadElement) {
  EXPECT_EQ(as_int64_list(parsed("[1, -2, 3]")), (std::vector<std::int64_t>{1, -2, 3}));
  EXPECT_FALSE(as_int64_list(parsed("[1, 2.5]")));
  EXPECT_FALSE(as_uint64_list(parsed("[1, -2]")));
  EXPECT_FALSE(as_uint64_list(parsed("{\"a\": 1}")));
  EXPECT_EQ(as_string_list(parsed("[\"a\", \"\"]")), (std::vector<std::string>{"a", ""}));
  EXPECT_FALSE(as_string_list(parsed("[\"a\", null]")));
  EXPECT_EQ(as_uint64_list(parsed("[]")), std::vector<std::uint64_t>{});
}

TEST(JsonValues, MemberIsNullForAbsentOrNonObjects) {
  const Json doc = parsed(R"({"a": 1})");
  ASSERT_NE(member(doc, "a"), nullptr);
  EXPECT_EQ(member(doc, "b"), nullptr);
  EXPECT_EQ(member(parsed("[1]"), "a"), nullptr);
}

auto failure_of(const auto& read) { return testing::what_of<FormatError>(read); }

TEST(JsonFields, ErrorsNamePathStructureAndMember) {
  const Json doc = parsed(R"({"spec": "x", "order": 30, "n": -1, "big": 9223372036854775808})");
  const Fields f(doc, "hive/morton_hive.json", "manifest");
  EXPECT_EQ(f.string("spec"), "x");
  EXPECT_EQ(failure_of([&] { (void)f.get("gone"); }), "hive/morton_hive.json: manifest.gone: missing");
  EXPECT_EQ(failure_of([&] { (void)f.string("order"); }), "hive/morton_hive.json: manifest.order: must be a string");
  EXPECT_EQ(failure_of([&] { (void)f.integer_in("order", 0, 29); }),
            "hive/morton_hive.json: manifest.order: must be an integer in 0..29");
  EXPECT_EQ(failure_of([&] { (void)f.unsigned_integer("n"); }),
            "hive/morton_hive.json: manifest.n: must be a non-negative integer");
  EXPECT_EQ(failure_of([&] { (void)f.integer("big"); }),
            "hive/morton_hive.json: manifest.big: must be an integer in the int64 range");
  EXPECT_EQ(f.integer("n"), -1);
  EXPECT_EQ(failure_of([&] {
              const Json array = parsed("[]");
              const Fields g(array, "k", "stamp");
            }),
            "k: stamp: must be a JSON object");
}

}  // namespace
}  // namespace tessera::codec::json
