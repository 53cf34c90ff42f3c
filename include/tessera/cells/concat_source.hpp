// Several converter inputs read as one sequence of cells (spec deltacells.md §7.1, §7.2): the
// rows of part 0, then those of part 1, … A request that crosses a boundary is served from each
// part in turn, so a tile spans files as needed and the result never depends on how the cells
// are split into files. When reading moves past a part, that part is released (its buffers and
// open files dropped), so only one input is open at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/cells/csr_source.hpp"

namespace tessera::cells {

// Thread-safety and lifetime: as every CsrBlockSource (one thread at a time); owns its parts.
class ConcatCsrSource final : public CsrBlockSource {
 public:
  // Every part must have the same n_genes (UsageError otherwise); parts may hold no cells.
  explicit ConcatCsrSource(std::vector<std::unique_ptr<CsrBlockSource>> parts);
  std::uint64_t n_cells() const override { return first_cell_.back(); }
  std::uint64_t n_genes() const override { return n_genes_; }
  // Values come back as integers when every part touched delivered integers, else as doubles.
  void read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) override;
  void release() override;
  std::string locate(std::uint64_t row) const override;

  CsrBlockSource& part(std::size_t i) { return *parts_[i]; }

 private:
  std::vector<std::unique_ptr<CsrBlockSource>> parts_;
  std::vector<std::uint64_t> first_cell_;  // global index of each part's first cell, then n_cells
  std::uint64_t n_genes_ = 0;
  std::size_t current_ = SIZE_MAX;  // the part read last
  CsrBlock piece_;
};

// §7.1: every input lists the same gene identifiers in the same order. Throws a FormatError
// "<label>: gene identifiers differ from <first_label> (gene k is 'b', expected 'a')" (or the
// two counts when one list is a prefix of the other).
void check_same_genes(std::span<const std::string> first, const std::string& first_label,
                      std::span<const std::string> other, const std::string& label);

}  // namespace tessera::cells
