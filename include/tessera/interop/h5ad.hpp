// AnnData `.h5ad` files as converter inputs (spec deltacells.md §7.1, §7.5): the matrix `X`,
// `layers/NAME` or `raw/X` (with `raw/var`) as a source of cell rows for the cells dataset writer.
//
// The matrix may be
// * a CSR group (`encoding-type` `csr_matrix`, or the legacy attribute `h5sparse_format` `csr`):
//   each request reads its slice of `indptr`, then the `indices`/`data` range it covers;
// * a CSC group (`csc_matrix` / `csc`): transposed in two passes (cells::TransposedCsrSource). The
//   first streams `indices` to count each cell's nonzeros (8 bytes per cell are kept); the second
//   streams `indptr`, `indices` and `data` once per band of cells, a band holding at most
//   `memory_budget` bytes (16 per nonzero). Memory stays bounded; the file is read
//   1 + ceil(16 × nnz / memory_budget) times;
// * a dense 2-D dataset: row blocks of a few million elements.
// The shape comes from the `shape` (or `h5sparse_shape`) attribute. Gene names are the var
// index (`var/<_index>`; `raw/var` with use_raw); the obs index, when present, must list one
// name per cell. Everything else in the file is ignored.
//
// Errors name the file and the object: FormatError for malformed structure (`a.h5ad: X/indptr:
// decreases at entry 7 (12 then 9)`), UnsupportedError for valid encodings this reader does not
// handle (a legacy compound var table, an unavailable HDF5 filter), IoError when the file cannot
// be opened.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"

namespace tessera::interop {

struct H5adOptions {
  std::string layer{};                                   // read layers/<layer> instead of X
  bool use_raw = false;                                  // read raw/X with raw/var
  std::uint64_t memory_budget = std::uint64_t{1} << 30;  // band size of the CSC transpose
};

enum class H5adLayout { Csr, Csc, Dense };

// What a scan of one file sees; no matrix data is read (two `indptr` elements excepted).
struct H5adScan {
  std::string path;
  std::string matrix;  // "X", "layers/<name>" or "raw/X"
  H5adLayout layout = H5adLayout::Csr;
  std::uint64_t n_cells = 0;
  std::uint64_t n_genes = 0;
  std::uint64_t nnz = 0;               // stored entries (n_cells × n_genes for dense)
  bool real_values = false;            // the values are floating point (else integers or booleans)
  std::vector<std::string> var_names;  // the var index, in source column order
  std::vector<std::string> layers;     // names under layers/ (where counts often are)
  bool has_raw = false;                // raw/X exists
  // What a deltacells dataset does not take from the file: the members of obsm, varm, obsp, varp
  // and uns (`obsm/X_pca`), the layers and raw/X not converted, and X when another matrix is.
  std::vector<std::string> not_converted;
};

H5adScan scan_h5ad(const std::string& path, const H5adOptions& options = {});

// The cells of one scanned file. The file is opened on the first read and closed by release().
std::unique_ptr<cells::CsrBlockSource> open_h5ad_matrix(const H5adScan& scan, const H5adOptions& options = {});

}  // namespace tessera::interop
