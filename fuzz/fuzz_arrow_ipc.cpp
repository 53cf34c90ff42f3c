// Fuzz target for the Arrow IPC file reader: the input is opened as a whole file (magic, footer
// and message verification, schema, every buffer's bounds) and every value of every batch is
// copied out through the views. A clean tessera::Error is an accepted outcome.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/error.hpp"

namespace tessera::fuzzing {

inline void exercise_arrow_ipc(std::span<const std::byte> bytes) {
  try {
    const auto source = io::memory_source(bytes, "fuzz.arrow");
    const auto file = columnar::ArrowFile::open(*source);
    for (std::size_t b = 0; b < file.num_batches(); ++b)
      for (std::size_t f = 0; f < file.fields().size(); ++f) file.column(b, f).to_column().check_shape();
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_arrow_ipc({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
#endif
