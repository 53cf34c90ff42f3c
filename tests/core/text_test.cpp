// core/text: UTF-8 validation, the ASCII case-insensitive search, and the code-point-counting
// table helpers (query table output and history listings).
#include <gtest/gtest.h>

#include "tessera/core/text.hpp"

namespace tessera {
namespace {

TEST(Text, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("temp\xC3\xA9rature"));  // é
  EXPECT_FALSE(is_valid_utf8("\xC3"));               // truncated sequence
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));           // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));       // surrogate
}

TEST(Text, CaseInsensitiveSearch) {
  EXPECT_TRUE(contains_ascii_ci("Temperature", "TEMP"));
  EXPECT_FALSE(contains_ascii_ci("pressure", "temp"));
}

TEST(Text, WidthCountsCodePoints) {
  EXPECT_EQ(utf8_width(""), 0u);
  EXPECT_EQ(utf8_width("abc"), 3u);
  EXPECT_EQ(utf8_width("\xC3\xA9t\xC3\xA9"), 3u);  // été
  EXPECT_EQ(utf8_width("\xE2\x80\xA6"), 1u);       // …
}

TEST(Text, TruncateKeepsWholeCodePointsAndMarksTheCut) {
  EXPECT_EQ(truncate_utf8("short", 5), "short");
  EXPECT_EQ(truncate_utf8("longer", 5), "long\xE2\x80\xA6");
  EXPECT_EQ(truncate_utf8("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3), "\xC3\xA9\xC3\xA9\xE2\x80\xA6");
  EXPECT_EQ(utf8_width(truncate_utf8("abcdefghij", 4)), 4u);
  EXPECT_EQ(truncate_utf8("abc", 1), "\xE2\x80\xA6");
}

TEST(Text, PaddingCountsCodePoints) {
  EXPECT_EQ(pad_right("\xC3\xA9", 3), "\xC3\xA9  ");
  EXPECT_EQ(pad_left("7", 3), "  7");
  EXPECT_EQ(pad_left("toolong", 3), "toolong");
}

}  // namespace
}  // namespace tessera
