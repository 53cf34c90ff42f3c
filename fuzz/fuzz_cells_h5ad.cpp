// Fuzz target for the converter's h5ad reading path (interop/h5ad over the HDF5 room): the input
// is written to a scratch file (libhdf5 reads files), scanned, and every cell read and
// canonicalized as `tessera cells convert` would. Any input must either read or fail with a
// tessera::Error; anything else (a crash, a foreign exception) is a finding. Seeds: small
// AnnData files with CSR, CSC and dense X in fuzz/corpus/fuzz_cells_h5ad/.
//
// The scan runs in-process here, so libhdf5 1.10's known faults on damaged global heaps
// (H5HG_read out of bounds or looping while it converts variable-length strings) show up as
// findings inside libhdf5; the CLI runs the scan in a child process for that reason
// (docs/compat.md D16). Triage by the top frame: only findings in tessera code are ours.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tessera/cells/csr_source.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/h5ad.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/fuzz_cells_h5ad." + std::to_string(::getpid()) + ".h5ad";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    const bool ok = std::fwrite(data, 1, size, f) == size;
    std::fclose(f);
    if (!ok) return 0;
  } else {
    return 0;
  }
  try {
    const auto scan = tessera::interop::scan_h5ad(path);
    if (scan.n_cells > (1u << 20) || scan.n_genes > (1u << 20)) return 0;  // claims too large to read here
    auto source = tessera::interop::open_h5ad_matrix(scan, {.memory_budget = 1 << 16});
    tessera::cells::CsrBlock block;
    tessera::cells::CanonicalizeOptions o;
    o.n_genes = scan.n_genes;
    o.max_value = 0x7fffffff;
    for (std::uint64_t first = 0; first < scan.n_cells; first += 64) {
      const std::uint64_t count = std::min<std::uint64_t>(64, scan.n_cells - first);
      source->read_rows(first, count, block);
      o.first_cell = first;
      (void)tessera::cells::canonicalize(block, o);
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
