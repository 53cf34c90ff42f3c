// Gene-major inputs read as cell rows (spec deltacells.md §7.2 "Reading patterns"): 10x
// MatrixMarket files (genes × cells coordinates) and column-compressed (CSC) h5ad matrices store
// each cell's entries scattered over the whole file, so they are transposed in two passes. The
// first pass counts the nonzeros of every cell (the CSR indptr, 8 bytes per cell, kept for the
// life of the source); the second scatters the entries of one band of cells into CSR buffers,
// reading the input once per band. A band holds at most `memory_budget` bytes of entries
// (16 per nonzero), but always at least the rows of one request; it grows by whole requests, so
// the writer's increasing requests are served by ceil(nnz × 16 / budget) passes at most.
//
// The input format is behind `GeneMajorEntries`: one implementation per format delivers the
// entries of a pass in blocks and validates what it reads (naming the file and structure).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "tessera/cells/csr_source.hpp"

namespace tessera::cells {

// Entries of one block, in input order. `cells` is always filled; `genes` and one of the two
// value spans (as `real_values()` says) only in a pass that asked for values.
struct EntryBlock {
  std::span<const std::int64_t> cells;  // 0-based, < n_cells (checked by the producer)
  std::span<const std::int64_t> genes;  // 0-based, < n_genes
  std::span<const std::int64_t> int_values;
  std::span<const double> real_values;
};

class GeneMajorEntries {
 public:
  virtual ~GeneMajorEntries() = default;
  virtual const std::string& name() const = 0;  // the input named in errors
  virtual std::uint64_t n_cells() const = 0;
  virtual std::uint64_t n_genes() const = 0;
  virtual bool real_values() const = 0;  // values are doubles (else integers)
  // One pass over every entry, in file order, delivered in blocks. Throws FormatError (naming
  // the file and structure) for malformed input, IoError for read failures.
  virtual void scan(bool with_values, const std::function<void(const EntryBlock&)>& sink) = 0;
  // Drops open files and buffers; the next scan reopens them.
  virtual void release() {}
};

struct TransposeOptions {
  std::uint64_t memory_budget = std::uint64_t{1} << 30;  // bytes of band entries (16 per nonzero)
};

// Thread-safety and lifetime: as every CsrBlockSource (one thread at a time); owns its input.
class TransposedCsrSource final : public CsrBlockSource {
 public:
  explicit TransposedCsrSource(std::unique_ptr<GeneMajorEntries> entries, TransposeOptions options = {});
  ~TransposedCsrSource() override;
  std::uint64_t n_cells() const override;
  std::uint64_t n_genes() const override;
  void read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) override;
  // Drops the band and the input's open files; the per-cell counts are kept.
  void release() override;
  std::string locate(std::uint64_t row) const override;
  // Passes over the input so far (the counting pass and every band).
  std::uint64_t passes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cells
