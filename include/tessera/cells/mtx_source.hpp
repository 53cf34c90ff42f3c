// 10x Genomics MatrixMarket directories as a source of cell rows for the dataset writer (spec
// deltacells.md §7.1, §7.2). A directory holds `matrix.mtx[.gz]` (coordinate integer, real
// holding integers, or pattern; rows = features, columns = barcodes, 1-based),
// `features.tsv[.gz]` (id, name, type) or `genes.tsv[.gz]` (id, name), and `barcodes.tsv[.gz]`.
//
// The matrix is gene × cell, so rows are transposed in two passes over each file by
// `TransposedCsrSource` (transpose_source.hpp): the first validates every entry and counts the
// nonzeros of each cell (the CSR indptr); the second scatters the entries of one band of cells at
// a time into CSR buffers sized by `memory_budget`, reading the file once per band.
//
// Malformed input is a FormatError naming the file and line (`matrix.mtx.gz: line 7: ...`);
// a well-formed MatrixMarket variant 10x never writes (array, symmetric, complex) is an
// UnsupportedError. The reader only needs zlib (plain files are read through it too).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"
#include "tessera/cells/gene_files.hpp"
#include "tessera/cells/transpose_source.hpp"

namespace tessera::cells {

enum class MtxField { Integer, Real, Pattern };

// One directory as a scan sees it: the files, the matrix header and the two tables. Entries
// are not read.
struct MtxDirectory {
  std::string path;           // the directory as given
  std::string matrix_file;    // path of matrix.mtx or matrix.mtx.gz
  std::string features_file;  // path of features.tsv[.gz] or genes.tsv[.gz]
  std::string barcodes_file;  // path of barcodes.tsv[.gz]
  MtxField field = MtxField::Integer;
  std::uint64_t n_genes = 0;  // rows of the size line
  std::uint64_t n_cells = 0;  // columns of the size line
  std::uint64_t n_entries = 0;
  std::vector<std::string> gene_ids;       // features column 1
  std::vector<std::string> gene_symbols;   // column 2 (the id when absent)
  std::vector<std::string> feature_types;  // column 3 ("Gene Expression" when absent)
  std::vector<std::string> barcodes;
};

// Finds the three files of `path`, reads the matrix header and size line, the features and the
// barcodes, and checks the size line against the two tables.
MtxDirectory scan_mtx_directory(const std::string& path);

struct MtxSourceOptions {
  // Bytes of CSR entries (16 per nonzero) one band may hold; a band always holds at least the
  // rows of one request.
  std::uint64_t memory_budget = std::uint64_t{1} << 30;
};

// The cells of one directory (the tables are not kept), transposed band by band.
std::unique_ptr<TransposedCsrSource> open_mtx_matrix(const MtxDirectory& directory, MtxSourceOptions options = {});

// The cells of several directories, in the given order, as one CsrBlockSource (a ConcatCsrSource
// of open_mtx_matrix parts). Every directory must list the same gene ids in the same order (else
// a FormatError naming the first that differs). Not thread-safe (the writer calls it from one
// thread at a time).
class MtxCsrSource final : public CsrBlockSource {
 public:
  explicit MtxCsrSource(std::vector<MtxDirectory> directories, MtxSourceOptions options = {});
  ~MtxCsrSource() override;
  MtxCsrSource(const MtxCsrSource&) = delete;
  MtxCsrSource& operator=(const MtxCsrSource&) = delete;

  std::uint64_t n_cells() const override;
  std::uint64_t n_genes() const override;
  void read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) override;
  void release() override;
  std::string locate(std::uint64_t row) const override;

  const std::vector<MtxDirectory>& directories() const;
  // How many times a matrix file has been read from the start (counting and band passes).
  std::uint64_t matrix_passes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cells
