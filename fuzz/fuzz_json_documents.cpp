// Fuzz target for the JSON rules every format shares (docs/reliability.md): the strict parser
// with its nesting limit, the selection parser, the cells where-document parser, the TOML nesting
// bound, the `.tet` footer extension and the message escaping.
// Only tessera::Error may escape. Cross-checks: an accepted document nests within the limit and
// reads back identically from its own dump; an accepted footer extension serialises to text that
// parses back to the same serialisation; printable_text always yields valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessera/cells/obs_filter.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/tet/footer_extension.hpp"
#include "tessera/tet_query/query_document.hpp"
#include "tessera/tet_query/selection.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace json = tessera::codec::json;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!tessera::is_valid_utf8(tessera::printable_text(text))) std::abort();
  (void)tessera::tet::toml_nesting_depth(text);
  try {
    (void)tessera::tet::parse_selection_text(std::string(text));
  } catch (const tessera::Error&) {
  }
  try {
    (void)tessera::cells::parse_obs_where(text);
  } catch (const tessera::Error&) {
  }
  try {
    if (const auto ext = tessera::tet::parse_footer_extension(text)) {
      const std::string once = tessera::tet::serialize_footer_extension(*ext);
      const auto back = tessera::tet::parse_footer_extension(once);
      if (!back || tessera::tet::serialize_footer_extension(*back) != once) std::abort();
    }
  } catch (const tessera::Error&) {
  }
  json::Json tree;
  try {
    tree = json::parse_strict(text, "fuzz.json");
  } catch (const tessera::Error& e) {
    if (!tessera::is_valid_utf8(e.what())) std::abort();
    return 0;
  }
  if (json::nesting_depth(text) > json::kMaxNestingDepth) std::abort();
  const std::string again = json::dump(tree, json::DumpOptions::tet_compact());
  if (again.find("null") != std::string::npos) return 0;  // infinities dump as null in the Tet style
  try {
    if (json::parse_strict(again, "again.json") != tree) std::abort();
  } catch (const tessera::Error&) {
    std::abort();
  }
  return 0;
}
