// Cell Ranger HDF5 matrices (`filtered_feature_bc_matrix.h5`, …) as converter inputs (spec
// deltacells.md §7.1, §7.5). Version 3 and later: the group `matrix` with `data`, `indices`,
// `indptr`, `shape` (= [features, barcodes]), `barcodes` and `features/{id, name, feature_type
// [, genome]}`. Version 2: one group per genome with `genes` and `gene_names` instead of
// `features`; `genome` chooses when there are several. The matrix is CSC of features × barcodes,
// i.e. CSR of cells × genes: each request reads its `indptr` slice and the entries it covers.
//
// Errors name the file and the object (`a.h5: matrix/indices: entry 9 is 40, outside 0..35`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"

namespace tessera::interop {

// What a scan of one file sees; no matrix data is read (two `indptr` elements excepted).
struct TenxH5Scan {
  std::string path;
  std::string group;          // "matrix" (v3+) or the genome's group (v2)
  std::uint64_t n_cells = 0;  // barcodes
  std::uint64_t n_genes = 0;  // features
  std::uint64_t nnz = 0;
  bool real_values = false;
  std::vector<std::string> gene_ids;       // features/id or genes
  std::vector<std::string> gene_symbols;   // features/name or gene_names
  std::vector<std::string> feature_types;  // features/feature_type ("Gene Expression" when absent)
  std::vector<std::string> genomes;        // features/genome; empty when absent (and for v2 files)
  std::vector<std::string> barcodes;       // <group>/barcodes: the cell names (obs_names)
};

// `genome` selects the group of a multi-genome v2 file (UsageError when it is needed and
// missing, or names no genome of the file; also when given for a v3 file, which has none).
TenxH5Scan scan_tenx_h5(const std::string& path, const std::string& genome = {});

// The cells of one scanned file. The file is opened on the first read and closed by release().
std::unique_ptr<cells::CsrBlockSource> open_tenx_h5_matrix(const TenxH5Scan& scan);

}  // namespace tessera::interop
