// Error texts are printable, valid UTF-8 (docs/reliability.md): bytes quoted from a file that are
// not valid UTF-8, and control characters, are shown as \xNN in what(), structure() and describe().
#include <gtest/gtest.h>

#include <string>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"

namespace tessera {
namespace {

TEST(PrintableText, KeepsValidUtf8AndEscapesTheRest) {
  EXPECT_EQ(printable_text("plain ASCII"), "plain ASCII");
  EXPECT_EQ(printable_text("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(printable_text("a\xff"
                           "b"),
            "a\\xffb");
  EXPECT_EQ(printable_text("\xc3"), "\\xc3");                    // truncated sequence
  EXPECT_EQ(printable_text("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable_text(std::string("\x1b[31m\r\x7f\0", 8)), "\\x1b[31m\\x0d\\x7f\\x00");
  EXPECT_EQ(printable_text("line\n\tindented"), "line\n\tindented");
}

TEST(PrintableText, ErrorsNeverCarryRawBytes) {
  const FormatError e("bad key \"\xff\"", "dir/\xfe.json", "struct\x01");
  EXPECT_EQ(std::string(e.what()), "bad key \"\\xff\"");
  EXPECT_EQ(e.structure(), "struct\\x01");
  EXPECT_EQ(e.path(), "dir/\xfe.json");  // kept as bytes: it names a file
  EXPECT_EQ(e.describe(), "dir/\\xfe.json: struct\\x01: bad key \"\\xff\"");
  EXPECT_TRUE(is_valid_utf8(e.describe()));
}

// The JSON parser's own message quotes the offending byte; it reaches users escaped.
TEST(PrintableText, InvalidUtf8InJsonIsAFormatErrorWithAnEscapedByte) {
  try {
    codec::json::parse_strict("{\"a\":\"\xff\"}", "x.json");
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(is_valid_utf8(what)) << what;
    EXPECT_EQ(what.find('\xff'), std::string::npos) << what;
    EXPECT_NE(what.find("\\xff"), std::string::npos) << what;
    EXPECT_EQ(e.path(), "x.json");
  }
}

}  // namespace
}  // namespace tessera
