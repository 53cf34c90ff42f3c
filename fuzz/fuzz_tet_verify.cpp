// Fuzz target for `verify` in deep mode (every chunk decode-checked) and its three renderings.
// verify reports a malformed file instead of throwing, so only tessera::Error from the source is
// an accepted exception. One cross-check: a report with ok == true means the file is valid, so
// TetFile::open must accept it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace tet = tessera::tet;
  const std::shared_ptr<const tessera::io::ByteSource> source =
      tessera::io::memory_source({reinterpret_cast<const std::byte*>(data), size}, "<fuzz>");
  tet::VerifyReport report;
  try {
    report = tet::verify(*source, tet::VerifyOptions{.deep_decode = true, .threads = 1});
  } catch (const tessera::Error&) {
    return 0;
  }
  (void)tet::render_verify_json(report);
  (void)tet::render_verify_text(report);
  (void)tet::render_verify_quiet(report);
  if (report.ok) {
    try {
      (void)tet::TetFile::open(source);
    } catch (const tessera::Error&) {
      std::abort();  // verify accepted a file that open rejects
    }
  }
  return 0;
}
