// HDF5 matrices as sources of cell rows for the cells converter (spec deltacells.md §7.1, §7.2),
// shared by the h5ad and 10x HDF5 readers. Each source opens its file on the first read and
// closes it on release(), so a conversion of many files keeps one open at a time.
//
// * Compressed sparse groups (`data`, `indices`, `indptr`) whose major axis is the cells (h5ad
//   CSR, 10x's features × barcodes CSC): a request reads its `indptr` slice, then only the
//   `indices`/`data` range it covers.
// * The same groups with the genes as the major axis (h5ad CSC): transposed in two passes by
//   cells::TransposedCsrSource, streaming `indptr`, `indices` and `data` in bounded blocks.
// * Dense 2-D datasets: row blocks of at most a few million elements (a row wider than that is
//   read in column pieces), nonzeros kept.
//
// Malformed input is a FormatError naming the file and the dataset (`a.h5ad: X/indptr: …`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/cells/csr_source.hpp"
#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop::detail {

struct SparseGroup {
  std::string path;           // the file
  std::string group;          // "X", "layers/counts", "raw/X", "matrix", "GRCh38"
  std::uint64_t n_major = 0;  // indptr has n_major + 1 entries
  std::uint64_t n_minor = 0;  // indices lie in 0 .. n_minor − 1
  std::uint64_t nnz = 0;      // entries of `data` and `indices`
  bool real_values = false;   // `data` holds floating point (else integers or booleans)
};

// Checks the group's three datasets without reading the matrix: each 1-D and numeric, `indptr`
// of n_major + 1 entries starting at 0 and ending at the common length of `data` and `indices`.
SparseGroup check_sparse_group(const Hdf5File& file, const std::string& group, std::uint64_t n_major,
                               std::uint64_t n_minor);

// Cells are the major axis: rows read directly.
std::unique_ptr<cells::CsrBlockSource> open_major_rows(const SparseGroup& group);
// Cells are the minor axis: the two-pass transpose with bands of at most `memory_budget` bytes.
std::unique_ptr<cells::CsrBlockSource> open_minor_rows(const SparseGroup& group, std::uint64_t memory_budget);
// A dense cells × genes dataset.
std::unique_ptr<cells::CsrBlockSource> open_dense_rows(const std::string& path, const std::string& dataset,
                                                       std::uint64_t n_cells, std::uint64_t n_genes);

}  // namespace tessera::interop::detail
