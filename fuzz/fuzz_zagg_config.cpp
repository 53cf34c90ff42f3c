// Fuzz target for YAML documents and zagg pipeline configs: the input is parsed as YAML (with
// small node and depth limits, so hostile aliases stop early) and, when it parses, interpreted
// as a zagg config. The input is also parsed as a row predicate (a stratum's `where`) and, when
// it parses, evaluated on a row of NaNs and a row of twos. A clean tessera::Error is an accepted
// outcome; the tree must dump to JSON.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "tessera/codec/yaml.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/row_predicate.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::fuzzing {

inline void exercise_row_predicate(std::string_view text) {
  try {
    const auto predicate = ragged::RowPredicate::parse(text, "fuzz where");
    const std::vector<double> nans(2, std::numeric_limits<double>::quiet_NaN()), twos(2, 2.0);
    std::vector<const double*> columns;
    for (std::size_t i = 0; i < predicate.columns().size(); ++i) columns.push_back(i % 2 ? nans.data() : twos.data());
    (void)predicate(columns, 0);
    (void)predicate(columns, 1);
  } catch (const Error&) {
  }
}

inline void exercise_zagg_config(std::string_view text) {
  exercise_row_predicate(text);
  codec::json::Json doc;
  try {
    doc = codec::yaml::parse(text, "fuzz.yaml", {.max_depth = 64, .max_nodes = 100'000});
  } catch (const Error&) {
    return;
  }
  (void)doc.dump(-1, ' ', false, codec::json::Json::error_handler_t::replace);
  try {
    (void)ragged::zagg::read_config(doc, "fuzz.yaml");
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_zagg_config({reinterpret_cast<const char*>(data), size});
  return 0;
}
#endif
