// codec::json::release: any tree, however large or deep, is emptied element by element.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "tessera/codec/json.hpp"

namespace tessera::codec::json {
namespace {

// release empties any tree, large arrays and deep nesting included, and leaves it null; what it
// freed is checked for leaks under the address sanitizer (scripts/test.sh stage 2).
TEST(JsonRelease, EmptiesTreesOfEveryShape) {
  Json tree = Json::object();
  Json values = Json::array();
  for (int i = 0; i < 100000; ++i) values.push_back(i * 0.5);
  tree["values"] = std::move(values);
  tree["nested"] = Json::parse(R"({"a": [1, {"b": [true, null, "text"]}, []], "c": {}})");
  tree["scalar"] = 3;
  release(tree);
  EXPECT_TRUE(tree.is_null());

  // The deepest tree a parse accepts.
  std::string deep(kMaxNestingDepth, '[');
  deep += std::string(kMaxNestingDepth, ']');
  Json nested = parse_strict(deep);
  release(nested);
  EXPECT_TRUE(nested.is_null());

  // Scalars and null stay as they are, then become null.
  Json number = 2.5;
  release(number);
  EXPECT_TRUE(number.is_null());
}

}  // namespace
}  // namespace tessera::codec::json
