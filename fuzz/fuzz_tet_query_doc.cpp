// Fuzz target for query documents (spec tet.md §3): the input is parsed as JSON or TOML with the
// same format sniffing as the CLI. Only tessera::Error may escape the parser. Cross-checks: an
// accepted document re-serialized in its flat form (what history stores) parses again to the same
// flat form, and its operation echo always serializes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/tet_query/query_document.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace tet = tessera::tet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tet::QueryDocument doc;
  try {
    doc = tet::parse_query_text(text, tet::detect_query_syntax(std::nullopt, text));
  } catch (const tessera::Error&) {
    return 0;
  }
  if (doc.operation) (void)tet::operation_echo(*doc.operation).dump();
  const auto flat = tet::query_document_json(doc);
  // NaN fills and percents have no JSON text; the flat form of such documents is not re-read.
  const std::string again_text = flat.dump();
  if (again_text.find("null") != std::string::npos) return 0;
  try {
    const auto again = tet::parse_query_json(again_text);
    if (tet::query_document_json(again) != flat) std::abort();
  } catch (const tessera::Error&) {
    std::abort();  // a document that parsed once must parse again from its own flat form
  }
  return 0;
}
