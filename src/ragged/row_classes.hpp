// The class word of a build's rows (private to the ragged module): which stratified fields a row
// belongs to (each field's `where`) and what the composition array counts of it, computed once
// when the row is read and spilled with it, so the aggregation of a cell needs no column but
// the word.
//
//   bit f (f < 32)   the row passes the `where` of field f (fields without one take every row)
//   bits 32 + i      surface column i (i < 5) reaches the composition threshold
//   bits 37, 38, 39  the row's strongest surface confidence is exactly 2, 3, 4
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/ragged/build.hpp"
#include "tessera/ragged/row_predicate.hpp"

namespace tessera::ragged::build::detail {

class RowClasses {
 public:
  static constexpr std::size_t kMaxStrata = 32;

  // Parses every field's `where` (UsageError naming the field).
  explicit RowClasses(const LeafSpec& leaf);

  // Whether rows carry a class word at all (a stratified field or a composition array).
  bool any() const noexcept { return any_; }
  // The columns the words are computed from, each once.
  const std::vector<std::string>& columns() const noexcept { return columns_; }

  // The class words of rows [begin, end) of `block` into out[begin, end). The block must carry
  // every column (see `check`).
  void classify(const PointBlock& block, std::size_t begin, std::size_t end, std::span<std::uint64_t> out) const;
  // UsageError naming `input` when `block` lacks a column the words need.
  void check(const PointBlock& block, const std::string& input) const;

  static bool in_field(std::uint64_t word, std::size_t field) noexcept { return (word >> field) & 1; }

 private:
  struct Bound {
    RowPredicate predicate;
    std::vector<std::size_t> columns;  // predicate column i → columns_ index
  };
  bool any_ = false;
  std::vector<std::optional<Bound>> where_;  // per field
  std::vector<std::size_t> surfaces_;        // composition surface columns → columns_ index
  double threshold_ = 0;
  std::vector<std::string> columns_;
};

// The spec §2.7 word of one cell from its rows' class words and weights (empty: weight 1 each);
// `of` is the index of the field whose rows the fractions are of.
std::uint64_t cell_composition(std::span<const std::uint64_t> words, std::span<const double> weights, std::size_t of);

}  // namespace tessera::ragged::build::detail
