// Row predicates: the boolean expressions over a point's named columns that select the rows of a
// stratified t-digest field (zagg's `build_tdigest_where`, whose `where` numpy evaluates over the
// granule's variables), e.g.
//
//   (signal_conf_land >= 2) | (signal_conf_ocean >= 2)
//   ~((signal_conf_land >= 2) | (signal_conf_ocean >= 2))
//
// The accepted language is the part of Python's expression grammar these configs use, with
// Python's precedence: a comparison `operand OP operand` (OP one of >= > <= < == !=; operands a
// column name or a number; no chains), combined with `&`, `|` and `~` and grouped by parentheses.
// As in Python, `|` and `&` bind tighter than a comparison, so `a >= 2 | b >= 2` is not two
// comparisons: it is refused (the operands of `|`, `&` and `~` must be comparisons), never
// evaluated differently from numpy. Comparisons follow IEEE rules, as numpy's: NaN compares
// false except by `!=`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ragged {

class RowPredicate {
 public:
  // UsageError naming `key` (where the text came from, e.g. a config key) and what is wrong.
  static RowPredicate parse(std::string_view text, const std::string& key);

  // The column names the expression reads, in order of first use.
  const std::vector<std::string>& columns() const noexcept { return columns_; }
  const std::string& text() const noexcept { return text_; }

  // The value for row `row`, where `values[i]` holds column `columns()[i]`.
  bool operator()(std::span<const double* const> values, std::size_t row) const;

  struct Node;

 private:
  std::string text_;
  std::vector<std::string> columns_;
  std::shared_ptr<const Node> root_;
};

}  // namespace tessera::ragged
