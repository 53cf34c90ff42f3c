// RFC 4180 comma-separated records, read incrementally from any byte stream: fields in double
// quotes may hold commas, line breaks and doubled quotes (`""` is one `"`); records end with LF or
// CRLF (a CR inside a quoted field is kept); a UTF-8 byte-order mark before the first record is
// skipped. A quote inside an unquoted field is kept as a character (as Python's csv module does).
// Memory is bounded by the longest record, which may not exceed `max_record_bytes`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::codec::csv {

// Thread-safety: one thread at a time. Lifetime: owns its buffer (the fields `next` returns view it).
class RecordReader {
 public:
  // Fills the span with the stream's next bytes and returns how many; 0 at the end.
  using Refill = std::function<std::size_t(std::span<char>)>;

  // `name` (a file path) begins every error message.
  RecordReader(Refill refill, std::string name, std::size_t max_record_bytes = std::size_t{64} << 20);
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record's fields, quotes removed and `""` unescaped; false at the end of the stream.
  // The views stay valid until the next call. FormatError (naming the file and line) for a quoted
  // field that is not closed, or characters between a closing quote and the next separator;
  // LimitError for a record longer than the limit.
  [[nodiscard]] bool next(std::vector<std::string_view>& fields);
  // The line the record returned last starts on (1-based; line breaks inside quotes count).
  [[nodiscard]] std::uint64_t line() const noexcept { return record_line_; }

 private:
  // Scans from pos_ for the end of one record; npos when the buffer ends first (the scan then
  // resumes there after a refill).
  std::size_t find_record_end(std::uint64_t& lines);
  bool refill();

  // How far the scan of the current record got, relative to pos_, and its state there.
  struct Scan {
    std::size_t offset = 0;
    bool quoted = false;
    bool field_start = true;
    std::uint64_t lines = 0;
  };

  Refill refill_;
  std::string name_;
  std::size_t max_record_bytes_;
  std::string buffer_;
  std::size_t pos_ = 0;
  bool at_end_ = false;
  bool started_ = false;
  std::uint64_t next_line_ = 1;
  std::uint64_t record_line_ = 0;
  Scan scan_;
};

// A refill over text in memory, handing out at most `step` bytes per call (small steps split
// quotes, pairs and CRLF across reads in tests and fuzzing). `text` must outlive the reader.
RecordReader::Refill refill_from(std::string_view text, std::size_t step = SIZE_MAX);

// All records of a whole text (tests, small inputs).
std::vector<std::vector<std::string>> parse_all(std::string_view text, const std::string& name = "csv");

}  // namespace tessera::codec::csv
