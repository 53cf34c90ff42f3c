// Concatenated inputs and the gene identifier check (spec deltacells.md §7.1, §7.2).
#include "tessera/cells/concat_source.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

// Appends `piece` to `out` (whose indptr already ends where the piece starts), widening the
// values to doubles when the two kinds meet.
void append(CsrBlock& out, const CsrBlock& piece) {
  const std::int64_t offset = out.indptr.back();
  for (std::size_t r = 1; r < piece.indptr.size(); ++r) out.indptr.push_back(piece.indptr[r] + offset);
  out.indices.insert(out.indices.end(), piece.indices.begin(), piece.indices.end());
  const bool both_integers = std::holds_alternative<std::vector<std::int64_t>>(out.values) &&
                             std::holds_alternative<std::vector<std::int64_t>>(piece.values);
  if (both_integers) {
    auto& v = std::get<std::vector<std::int64_t>>(out.values);
    const auto& p = std::get<std::vector<std::int64_t>>(piece.values);
    v.insert(v.end(), p.begin(), p.end());
    return;
  }
  if (auto* ints = std::get_if<std::vector<std::int64_t>>(&out.values)) {
    std::vector<double> widened(ints->begin(), ints->end());
    out.values = std::move(widened);
  }
  auto& v = std::get<std::vector<double>>(out.values);
  std::visit([&](const auto& p) { v.insert(v.end(), p.begin(), p.end()); }, piece.values);
}

}  // namespace

ConcatCsrSource::ConcatCsrSource(std::vector<std::unique_ptr<CsrBlockSource>> parts) : parts_(std::move(parts)) {
  if (parts_.empty()) throw UsageError("no inputs to concatenate");
  n_genes_ = parts_.front()->n_genes();
  std::uint64_t total = 0;
  for (const auto& p : parts_) {
    if (p->n_genes() != n_genes_)
      throw UsageError("inputs differ in their number of genes (" + std::to_string(p->n_genes()) + " and " +
                       std::to_string(n_genes_) + ")");
    first_cell_.push_back(total);
    total += p->n_cells();
  }
  first_cell_.push_back(total);
}

void ConcatCsrSource::read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) {
  if (count > n_cells() || first > n_cells() - count)
    throw UsageError("rows " + std::to_string(first) + ".." + std::to_string(first + count) + " outside 0.." +
                     std::to_string(n_cells()));
  out.indptr.assign(1, 0);
  out.indices.clear();
  std::vector<std::int64_t> ints;
  if (auto* v = std::get_if<std::vector<std::int64_t>>(&out.values)) ints.swap(*v);
  ints.clear();
  out.values = std::move(ints);
  const std::uint64_t end = first + count;
  for (std::uint64_t row = first; row < end;) {
    // The part holding `row` (parts without cells are skipped).
    const auto it = std::upper_bound(first_cell_.begin(), first_cell_.end(), row);
    const auto f = static_cast<std::size_t>(it - first_cell_.begin() - 1);
    if (current_ != f) {
      if (current_ < parts_.size()) parts_[current_]->release();
      current_ = f;
    }
    const std::uint64_t lo = row - first_cell_[f];
    const std::uint64_t hi = std::min(end, first_cell_[f + 1]) - first_cell_[f];
    parts_[f]->read_rows(lo, hi - lo, piece_);
    if (piece_.n_rows() != hi - lo)
      throw FormatError("input " + std::to_string(f) + " returned " + std::to_string(piece_.n_rows()) + " rows for " +
                        std::to_string(hi - lo) + " requested");
    append(out, piece_);
    row = first_cell_[f] + hi;
  }
}

void ConcatCsrSource::release() {
  for (auto& p : parts_) p->release();
  current_ = SIZE_MAX;
  piece_ = CsrBlock{};
}

std::string ConcatCsrSource::locate(std::uint64_t row) const {
  if (row >= n_cells()) return {};
  const auto it = std::upper_bound(first_cell_.begin(), first_cell_.end(), row);
  const auto f = static_cast<std::size_t>(it - first_cell_.begin() - 1);
  return parts_[f]->locate(row - first_cell_[f]);
}

void check_same_genes(std::span<const std::string> a, const std::string& first_label, std::span<const std::string> b,
                      const std::string& label) {
  if (std::equal(a.begin(), a.end(), b.begin(), b.end())) return;
  std::size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  const std::string detail = k < a.size() && k < b.size()
                                 ? "gene " + std::to_string(k) + " is '" + b[k] + "', expected '" + a[k] + "'"
                                 : std::to_string(b.size()) + " genes, expected " + std::to_string(a.size());
  throw FormatError(label + ": gene identifiers differ from " + first_label + " (" + detail + ")", label);
}

}  // namespace tessera::cells
