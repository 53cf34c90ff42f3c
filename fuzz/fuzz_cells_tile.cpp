// Fuzz target for the deltacells tile reader: parse (stages 1–3) with CRC verification off, so
// mutations reach the chunk table, indptr and frames, then decode every chunk (stage 5) into
// int32 and float32 buffers on one and two threads and check both decodes agree, and that the
// narrow (uint16) decode fails with the same error or gives the same values; then the same with
// CRC verification on. A clean tessera::Error is an accepted
// outcome; any other exception, a crash or a sanitizer report is a finding.
//
// The corruption sweep (tests/cells/corruption_test.cpp) includes this file and drives
// `exercise_cells_tile` directly, so the fuzzer and the sweep exercise the same paths.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/tile.hpp"
#include "tessera/core/error.hpp"

namespace tessera::fuzzing {

// Nonzeros decoded per input at most: a few bytes of zstd can declare megabytes of output.
inline constexpr std::uint64_t kMaxTileNnz = std::uint64_t{1} << 20;

struct CellsReaderInconsistency {
  const char* what;
};

// Returns true when the tile parsed and decoded; throws whatever the reader throws.
inline bool exercise_cells_tile(std::span<const std::byte> bytes, bool verify_crc) {
  const cells::Tile tile =
      cells::Tile::parse(std::vector<std::byte>(bytes.begin(), bytes.end()), "<fuzz>", {.verify_crc = verify_crc});
  if (tile.nnz() > kMaxTileNnz) return false;
  const auto nnz = static_cast<std::size_t>(tile.nnz());
  std::vector<std::int32_t> indices(nnz), values(nnz), indices2(nnz);
  std::vector<float> valuesf(nnz);
  // The narrow form first: it must fail exactly when, and as, the int32 decode fails.
  const bool narrow = tile.narrow_decodable();
  std::vector<std::uint16_t> genes16(narrow ? nnz : 0), counts16(narrow ? nnz : 0);
  std::vector<cells::WideCount> wide;
  std::string narrow_error;
  if (narrow) {
    try {
      tile.decode_narrow(genes16, counts16, wide, {.threads = 1});
    } catch (const Error& e) {
      narrow_error = e.what();
    }
  }
  try {
    tile.decode(indices, values, {.threads = 1});
  } catch (const Error& e) {
    if (narrow && narrow_error != e.what()) throw CellsReaderInconsistency{"narrow decode disagrees on the error"};
    throw;
  }
  if (!narrow_error.empty()) throw CellsReaderInconsistency{"narrow decode failed where the int32 one did not"};
  tile.decode(indices2, valuesf, {.threads = 2});
  for (std::size_t i = 0; i < nnz; ++i) {
    if (indices[i] != indices2[i] || static_cast<float>(values[i]) != valuesf[i])
      throw CellsReaderInconsistency{"parallel decode differs from serial decode"};
    if (indices[i] < 0 || static_cast<std::uint64_t>(indices[i]) >= tile.n_genes() || values[i] < 1)
      throw CellsReaderInconsistency{"decoded entry outside the validated ranges"};
  }
  if (narrow) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < nnz; ++i) {
      const bool is_wide = values[i] > 65535;
      if (genes16[i] != static_cast<std::uint16_t>(indices[i]) ||
          counts16[i] != (is_wide ? 65535 : static_cast<std::uint16_t>(values[i])))
        throw CellsReaderInconsistency{"narrow decode differs from the int32 decode"};
      if (is_wide &&
          (w >= wide.size() || wide[w].position != i || wide[w++].count != static_cast<std::uint32_t>(values[i])))
        throw CellsReaderInconsistency{"narrow decode lists other wide counts"};
    }
    if (w != wide.size()) throw CellsReaderInconsistency{"narrow decode lists other wide counts"};
  }
  return true;
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const bool verify_crc : {false, true}) {
    try {
      tessera::fuzzing::exercise_cells_tile({reinterpret_cast<const std::byte*>(data), size}, verify_crc);
    } catch (const tessera::Error&) {
      // Malformed input rejected cleanly: the expected outcome for most inputs.
    }
  }
  return 0;
}
#endif
