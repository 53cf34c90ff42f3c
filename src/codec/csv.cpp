#include "tessera/codec/csv.hpp"

#include <algorithm>
#include <utility>

#include "tessera/core/error.hpp"

namespace tessera::codec::csv {
namespace {

constexpr std::size_t kReadSize = std::size_t{1} << 20;
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

RecordReader::RecordReader(Refill refill, std::string name, std::size_t max_record_bytes)
    : refill_(std::move(refill)), name_(std::move(name)), max_record_bytes_(max_record_bytes) {}

bool RecordReader::refill() {
  if (at_end_) return false;
  buffer_.erase(0, pos_);
  pos_ = 0;
  const std::size_t old = buffer_.size();
  buffer_.resize(old + kReadSize);
  const std::size_t n = refill_(std::span(buffer_.data() + old, kReadSize));
  buffer_.resize(old + std::min(n, kReadSize));
  if (n == 0) at_end_ = true;
  return n > 0;
}

std::size_t RecordReader::find_record_end(std::uint64_t& lines) {
  // Resumes where the previous scan of this record stopped (the buffer only grew since), so a
  // record that arrives in many small reads is scanned once.
  for (std::size_t i = pos_ + scan_.offset; i < buffer_.size(); ++i) {
    const char c = buffer_[i];
    if (scan_.quoted) {
      if (c == '"') {
        // A quote is either the first of an escaped pair or the closing one: the next byte says
        // which, so a quote at the end of the buffer waits for more input.
        if (i + 1 == buffer_.size() && !at_end_) {
          scan_.offset = i - pos_;
          return std::string::npos;
        }
        if (i + 1 < buffer_.size() && buffer_[i + 1] == '"') ++i;
        else scan_.quoted = false;
      } else if (c == '\n') {
        ++scan_.lines;
      }
      continue;
    }
    if (c == '"' && scan_.field_start) scan_.quoted = true;
    else if (c == '\n') {
      lines = scan_.lines;
      scan_ = {};
      return i;
    }
    scan_.field_start = c == ',';
  }
  if (!at_end_) {
    scan_.offset = buffer_.size() - pos_;
    return std::string::npos;
  }
  if (scan_.quoted)
    throw FormatError(
        name_ + ": line " + std::to_string(next_line_) + ": a quoted field is not closed before the end of the file",
        name_, "csv");
  lines = scan_.lines;
  scan_ = {};
  return buffer_.size();
}

bool RecordReader::next(std::vector<std::string_view>& fields) {
  fields.clear();
  if (!started_) {
    while (buffer_.size() - pos_ < kByteOrderMark.size() && refill()) {
    }
    if (std::string_view(buffer_).substr(pos_).starts_with(kByteOrderMark)) pos_ += kByteOrderMark.size();
    started_ = true;
  }
  std::size_t end = 0;
  std::uint64_t lines = 0;
  for (;;) {
    if (pos_ >= buffer_.size() && !refill()) return false;
    end = find_record_end(lines);
    if (end != std::string::npos) break;
    if (buffer_.size() - pos_ > max_record_bytes_)
      throw LimitError(name_ + ": line " + std::to_string(next_line_) + ": a record longer than " +
                           std::to_string(max_record_bytes_) + " bytes (an unclosed quote?)",
                       name_, "csv");
    refill();
  }
  record_line_ = next_line_;
  next_line_ += lines + (end < buffer_.size() ? 1 : 0);
  const std::size_t next_pos = end < buffer_.size() ? end + 1 : end;
  std::size_t stop = end;
  if (stop > pos_ && buffer_[stop - 1] == '\r') --stop;  // CRLF: the CR sits outside any quotes

  // Split [pos_, stop) into fields; quoted fields are unescaped in place (they only shrink).
  std::size_t i = pos_;
  for (;;) {
    if (i < stop && buffer_[i] == '"') {
      std::size_t read = i + 1, write = i;
      for (;;) {
        if (buffer_[read] == '"') {
          if (read + 1 < stop && buffer_[read + 1] == '"') {
            buffer_[write++] = '"';
            read += 2;
            continue;
          }
          ++read;
          break;
        }
        buffer_[write++] = buffer_[read++];
      }
      fields.emplace_back(buffer_.data() + i, write - i);
      if (read < stop && buffer_[read] != ',')
        throw FormatError(name_ + ": line " + std::to_string(record_line_) + ", field " +
                              std::to_string(fields.size()) +
                              ": characters after the closing quote (a quote inside a quoted field is written \"\")",
                          name_, "csv");
      i = read;
    } else {
      const std::size_t comma = std::min(buffer_.find(',', i), stop);
      fields.emplace_back(buffer_.data() + i, comma - i);
      i = comma;
    }
    if (i >= stop) break;
    ++i;  // past the comma: another field follows, empty if the record ends here
  }
  pos_ = next_pos;
  return true;
}

RecordReader::Refill refill_from(std::string_view text, std::size_t step) {
  return [text, step, offset = std::size_t{0}](std::span<char> out) mutable {
    const std::size_t n = std::min({out.size(), step, text.size() - offset});
    std::copy_n(text.data() + offset, n, out.data());
    offset += n;
    return n;
  };
}

std::vector<std::vector<std::string>> parse_all(std::string_view text, const std::string& name) {
  RecordReader reader(refill_from(text), name);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string_view> fields;
  while (reader.next(fields)) records.emplace_back(fields.begin(), fields.end());
  return records;
}

}  // namespace tessera::codec::csv
