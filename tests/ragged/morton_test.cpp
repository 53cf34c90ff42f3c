// Morton words against mortie's 1080-record golden file and the golden vectors (spec §3).
#include <gtest/gtest.h>

#include "support.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged {
namespace {

using codec::json::Json;
using test::word_of;

TEST(Morton, AllPackedGoldenRecordsBothDirections) {
  const Json doc = test::read_json(test::zagg_dir() / "mortie/packed_u64_golden.json");
  const Json& records = doc["records"];
  ASSERT_EQ(records.size(), 1080u);
  for (const Json& r : records) {
    const std::uint64_t word = r["word"].get<std::uint64_t>();
    const int base = r["base_cell"].get<int>(), order = r["order"].get<int>();
    std::vector<int> tuples;
    for (const Json& t : r["tuples"]) tuples.push_back(t.get<int>());
    SCOPED_TRACE(r["decimal_repr"].get<std::string>());
    // fields → word
    EXPECT_EQ(morton::pack_area(base, tuples), word);
    EXPECT_EQ(morton::from_nested(r["nested"].get<std::uint64_t>(), order), word);
    EXPECT_EQ(morton::parse_decimal(r["decimal_repr"].get<std::string>()), word);
    // word → fields
    const auto info = morton::inspect(word);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->base_cell, base);
    EXPECT_EQ(info->order, order);
    EXPECT_FALSE(info->point);
    for (int n = 1; n <= order; ++n) EXPECT_EQ(morton::tuple_at(word, n), tuples[static_cast<std::size_t>(n - 1)]);
    EXPECT_EQ(morton::nested(word), r["nested"].get<std::uint64_t>());
    EXPECT_EQ(morton::to_decimal(word), r["decimal_repr"].get<std::string>());
  }
}

TEST(Morton, GoldenVectorExamplesAndFixtureCells) {
  const Json g = test::read_json(test::zagg_dir() / "golden_vectors.json")["morton_words"];
  for (const Json& e : g["examples"]) {
    const std::uint64_t w = word_of(e["word"]);
    EXPECT_EQ(morton::parse_decimal(e["decimal"].get<std::string>()), w);
    EXPECT_EQ(morton::to_decimal(w), e["decimal"].get<std::string>());
    EXPECT_EQ(morton::order_of(w), e["order"].get<int>());
    EXPECT_EQ(morton::base_cell_of(w), e["base_cell"].get<int>());
    EXPECT_EQ(morton::nested(w), e["nested_id"].get<std::uint64_t>());
    EXPECT_EQ(morton::parse_word_or_decimal(e["word_hex"].get<std::string>()), w);
  }
  // Cells-axis index ↔ word of the fixture shard (spec §3.4).
  const std::uint64_t shard = morton::parse_decimal("11213");
  for (const auto& [index, word] : g["fixture_cell_words_minimal_index_to_word"].items()) {
    const std::uint64_t i = std::stoull(index);
    EXPECT_EQ(morton::descendant(shard, 2, i), word_of(word));
    EXPECT_EQ(morton::nested(word_of(word)) - morton::nested(shard) * 16, i);
    EXPECT_EQ(morton::clip(word_of(word), 4), shard);
  }
}

TEST(Morton, SpecExamplesPointWordsAndClip) {
  // spec §3.1
  EXPECT_EQ(morton::parse_decimal("11213"), 0x1120000000000004ull);
  EXPECT_EQ(morton::parse_decimal("1121311"), 0x1120000000000006ull);
  EXPECT_EQ(morton::parse_decimal("-5112333"), 0xB06A000000000006ull);
  EXPECT_EQ(morton::nested(0xB06A000000000006ull), 41066u);
  const std::uint64_t point = morton::parse_decimal("112131123333333333333333442343p");
  EXPECT_EQ(point, 0x11206AAAAAAABDBEull);
  EXPECT_EQ(point, 1234103579139816894ull);
  EXPECT_TRUE(morton::is_point(point));
  EXPECT_EQ(morton::to_decimal(point), "112131123333333333333333442343p");
  // the unmarked order-29 string is the area word of the same path
  const std::uint64_t area29 = morton::parse_decimal("112131123333333333333333442343");
  EXPECT_FALSE(morton::is_point(area29));
  EXPECT_EQ(morton::order_of(area29), 29);
  EXPECT_EQ(morton::nested(area29), morton::nested(point));
  // coarsening a point equals coarsening the area word
  for (int k = 0; k <= 28; ++k) EXPECT_EQ(morton::clip(point, k), morton::clip(area29, k)) << k;
  EXPECT_EQ(morton::clip(point, 6), 0x1120000000000006ull);
  EXPECT_EQ(morton::clip(point, 29), point);  // at or above the order: unchanged
  EXPECT_EQ(morton::order_of(morton::clip(point, 28)), 28);
  // common ancestors
  const std::uint64_t ws[] = {morton::parse_decimal("1121311"), morton::parse_decimal("1121344")};
  EXPECT_EQ(morton::common_ancestor(ws), morton::parse_decimal("11213"));
  const std::uint64_t same[] = {point, point};
  EXPECT_EQ(morton::common_ancestor(same), area29);  // always the area word for 2+ inputs
  const std::uint64_t one[] = {point};
  EXPECT_EQ(morton::common_ancestor(one), point);  // one word: kind preserved
  const std::uint64_t bases[] = {morton::parse_decimal("11"), morton::parse_decimal("21")};
  EXPECT_THROW(morton::common_ancestor(bases), FormatError);
}

TEST(Morton, InvalidWordsAndIds) {
  EXPECT_FALSE(morton::is_valid(0));
  EXPECT_FALSE(morton::is_valid(0xD000000000000000ull));                 // prefix 13
  EXPECT_FALSE(morton::is_valid(0x1120000000000004ull | (1ull << 40)));  // body bits below order 4
  EXPECT_THROW(morton::check(0, "x"), FormatError);
  EXPECT_THROW(morton::nested(0xF000000000000000ull), FormatError);
  for (const char* bad :
       {"", "-", "7", "-7", "0", "115", "1p", "1121p", "11a", "-1-1", "1111111111111111111111111111111"})
    EXPECT_THROW(morton::parse_decimal(bad), UsageError) << bad;
  EXPECT_THROW(morton::parse_decimal("17", morton::Source::File), FormatError);
  EXPECT_EQ(morton::parse_word_or_decimal("word:1233986297899515908"), 0x1120000000000004ull);
  EXPECT_EQ(morton::parse_word_or_decimal("0x1120000000000004"), 0x1120000000000004ull);
  EXPECT_THROW(morton::parse_word_or_decimal("word:12"), UsageError);
  EXPECT_THROW(morton::parse_word_or_decimal("0xzz"), UsageError);
  EXPECT_THROW(morton::from_nested(48, 1), UsageError);
}

TEST(Morton, RankDeinterleaveGoldens) {
  const Json g = test::read_json(test::zagg_dir() / "golden_vectors.json")["rank_xy_deinterleave"];
  for (const char* table : {"depth6", "depth8"}) {
    for (const Json& e : g[table]) {
      const auto xy = morton::rank_to_xy(e["rank"].get<std::uint64_t>());
      EXPECT_EQ(xy.x, e["x"].get<std::uint32_t>());
      EXPECT_EQ(xy.y, e["y"].get<std::uint32_t>());
      const auto rc = morton::rank_to_rowcol(e["rank"].get<std::uint64_t>());
      EXPECT_EQ(rc.row, e["row"].get<std::uint32_t>());
      EXPECT_EQ(rc.col, e["col"].get<std::uint32_t>());
      EXPECT_EQ(morton::rowcol_to_rank(rc.row, rc.col), e["rank"].get<std::uint64_t>());
    }
  }
  // depth 2 table, y = 3 at the top
  const Json& rows = g["depth2_full_table_rows_y3_to_y0"];
  for (std::uint32_t i = 0; i < 4; ++i)
    for (std::uint32_t x = 0; x < 4; ++x) EXPECT_EQ(morton::xy_to_rank(x, 3 - i), rows[i][x].get<std::uint64_t>());
  // ranks 0..3 land at (0,0) (0,1) (1,0) (1,1)
  EXPECT_EQ(morton::rank_to_rowcol(1).col, 1u);
  EXPECT_EQ(morton::rank_to_rowcol(2).row, 1u);
  for (std::uint64_t r = 0; r < 65536; ++r) {
    const auto p = morton::rank_to_xy(r);
    ASSERT_EQ(morton::xy_to_rank(p.x, p.y), r);
  }
}

}  // namespace
}  // namespace tessera::ragged
