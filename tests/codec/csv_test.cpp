// RFC 4180 records (codec/csv.hpp): quoting, doubled quotes, line breaks inside quotes, CRLF, a
// byte-order mark, line numbers, and errors that name the file and line. Records are also read
// through refills of every size from one byte up, so a quote, CR or pair split across two reads
// parses the same. The corruption test sends truncations, bit flips and deep runs of quotes of
// the fuzz seeds through the fuzz target's own round-trip check.
#include "tessera/codec/csv.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_csv_records.cpp"
#undef TESSERA_FUZZ_NO_ENTRY_POINT

namespace tessera::codec::csv {
namespace {

using Records = std::vector<std::vector<std::string>>;

// Every record of `text` read through refills of at most `step` bytes, with the line each starts on.
Records read_in_steps(const std::string& text, std::size_t step, std::vector<std::uint64_t>* lines = nullptr) {
  RecordReader reader(refill_from(text, step), "points.csv");
  Records records;
  std::vector<std::string_view> fields;
  while (reader.next(fields)) {
    records.emplace_back(fields.begin(), fields.end());
    if (lines) lines->push_back(reader.line());
  }
  return records;
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_all(text, "points.csv");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Csv, Rfc4180Fields) {
  const std::string text =
      "\xEF\xBB\xBFlat,lon,\"name, with comma\"\r\n"
      "1.5,\"2.5\",\"say \"\"hi\"\"\"\r\n"
      "3,4,\"two\nlines\"\n"
      ",,\n"
      "5,6,\"\"";
  const Records want = {{"lat", "lon", "name, with comma"},
                        {"1.5", "2.5", "say \"hi\""},
                        {"3", "4", "two\nlines"},
                        {"", "", ""},
                        {"5", "6", ""}};
  EXPECT_EQ(parse_all(text), want);
  for (std::size_t step = 1; step <= text.size(); ++step) {
    std::vector<std::uint64_t> lines;
    EXPECT_EQ(read_in_steps(text, step, &lines), want) << "refills of " << step << " bytes";
    EXPECT_EQ(lines, (std::vector<std::uint64_t>{1, 2, 3, 5, 6})) << "refills of " << step << " bytes";
  }
}

TEST(Csv, LinesAndTrailingSeparators) {
  EXPECT_EQ(parse_all("a,b\n1,2\n"), (Records{{"a", "b"}, {"1", "2"}}));
  EXPECT_EQ(parse_all("a,b\n\n1,\n"), (Records{{"a", "b"}, {""}, {"1", ""}}));
  EXPECT_EQ(parse_all("a\r\nb"), (Records{{"a"}, {"b"}}));
  EXPECT_EQ(parse_all("\"x\r\ny\"\r\n"), (Records{{"x\r\ny"}}));           // a CR inside quotes is kept
  EXPECT_EQ(parse_all("5'10\",ab\"c\n"), (Records{{"5'10\"", "ab\"c"}}));  // a quote inside an unquoted field
  EXPECT_TRUE(parse_all("").empty());
  EXPECT_TRUE(parse_all("\xEF\xBB\xBF").empty());
}

TEST(Csv, MalformedRecordsNameFileAndLine) {
  EXPECT_EQ(error_of("a,b\n1,\"2\n3,4\n"),
            "points.csv: line 2: a quoted field is not closed before the end of the file");
  EXPECT_EQ(error_of("a,b\n\"1\"x,2\n"),
            "points.csv: line 2, field 1: characters after the closing quote (a quote inside a quoted field is written "
            "\"\")");
}

TEST(Csv, ARecordLongerThanTheLimitIsALimitError) {
  const std::string text = "a\n\"" + std::string(3u << 20, 'x');  // an unclosed quote, 3 MiB long
  std::size_t handed_out = 0;
  RecordReader reader(
      [&, refill = refill_from(text)](std::span<char> out) mutable {
        const std::size_t n = refill(out);
        handed_out += n;
        return n;
      },
      "points.csv", std::size_t{1} << 20);
  std::vector<std::string_view> fields;
  ASSERT_TRUE(reader.next(fields));
  EXPECT_THROW((void)reader.next(fields), LimitError);
  EXPECT_LT(handed_out, text.size()) << "the reader kept reading past its limit";
}

TEST(Csv, CorruptedRecordsEndInAnErrorOrARoundTrip) {
  const auto seeds = tessera::testing::source_dir() / "fuzz" / "corpus" / "fuzz_csv_records";
  std::vector<std::string> inputs;
  for (const char* name : {"quoted.csv", "bom.csv"}) {
    const std::string text = tessera::testing::read_file_text(seeds / name);
    for (std::size_t n = 0; n <= text.size(); ++n) inputs.push_back(text.substr(0, n));
    for (std::size_t i = 0; i < text.size(); ++i)
      for (const unsigned char bit : {0x01, 0x22, 0x80}) {
        std::string flipped = text;
        flipped[i] = static_cast<char>(static_cast<unsigned char>(flipped[i]) ^ bit);
        inputs.push_back(flipped);
      }
  }
  inputs.push_back(std::string(100000, '"'));  // deep runs of quotes: pairs all the way down
  inputs.push_back(std::string(100001, '"'));
  inputs.push_back("\"" + std::string(70000, ','));  // a record longer than the target's limit
  for (const std::string& input : inputs) {
    SCOPED_TRACE(::testing::PrintToString(input.substr(0, 80)));
    EXPECT_NO_THROW(tessera::fuzzing::exercise_csv(input));
  }
}

}  // namespace
}  // namespace tessera::codec::csv
