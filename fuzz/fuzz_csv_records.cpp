// Fuzz target for the RFC 4180 record reader: the input is read as CSV through refills of 7 bytes
// (so quotes, doubled quotes and CRLF split across reads); whatever parses must write back, every
// field quoted, to text that parses to the same records. A clean tessera::Error is an accepted
// outcome.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/csv.hpp"
#include "tessera/core/error.hpp"

namespace tessera::fuzzing {

struct CsvInconsistency {
  const char* what;
};

inline std::vector<std::vector<std::string>> read_records(std::string_view text, std::size_t step) {
  codec::csv::RecordReader reader(codec::csv::refill_from(text, step), "fuzz.csv", std::size_t{1} << 16);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string_view> fields;
  while (reader.next(fields)) records.emplace_back(fields.begin(), fields.end());
  return records;
}

inline void exercise_csv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  try {
    records = read_records(text, 7);
  } catch (const Error&) {
    return;
  }
  std::string written;
  for (const auto& record : records) {
    for (std::size_t i = 0; i < record.size(); ++i) {
      if (i) written += ',';
      written += '"';
      for (const char c : record[i]) written += c == '"' ? std::string("\"\"") : std::string(1, c);
      written += '"';
    }
    written += "\r\n";
  }
  if (read_records(written, written.size() + 1) != records) throw CsvInconsistency{"parse(write(x)) != x"};
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_csv({reinterpret_cast<const char*>(data), size});
  return 0;
}
#endif
