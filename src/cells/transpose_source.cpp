// The two-pass, band-by-band transpose of gene-major inputs into cell rows (spec deltacells.md
// §7.2).
#include "tessera/cells/transpose_source.hpp"

#include <algorithm>
#include <variant>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cells {

struct TransposedCsrSource::Impl {
  std::unique_ptr<GeneMajorEntries> entries;
  TransposeOptions options;
  std::vector<std::int64_t> indptr;  // from the counting pass; empty until then
  std::uint64_t passes = 0;
  // The band in memory: cells [band_lo, band_hi), entries in cell-major order.
  bool has_band = false;
  std::uint64_t band_lo = 0, band_hi = 0;
  std::vector<std::int64_t> band_indices;
  std::variant<std::vector<std::int64_t>, std::vector<double>> band_values;

  [[noreturn]] void changed() const {
    throw FormatError(entries->name() + ": the file changed while it was read", entries->name());
  }

  const std::vector<std::int64_t>& counts() {
    if (!indptr.empty()) return indptr;
    const std::uint64_t n_cells = entries->n_cells();
    std::vector<std::int64_t> per_cell(static_cast<std::size_t>(n_cells) + 1, 0);
    ++passes;
    entries->scan(false, [&](const EntryBlock& b) {
      for (const std::int64_t c : b.cells) {
        if (c < 0 || static_cast<std::uint64_t>(c) >= n_cells)
          throw FormatError(
              entries->name() + ": cell " + std::to_string(c) + " outside 0.." + std::to_string(n_cells - 1),
              entries->name());
        ++per_cell[static_cast<std::size_t>(c) + 1];
      }
    });
    for (std::size_t c = 0; c < n_cells; ++c) per_cell[c + 1] += per_cell[c];
    indptr = std::move(per_cell);
    return indptr;
  }

  template <typename T>
  void scatter(const EntryBlock& b, std::span<const T> values, std::vector<T>& out, std::vector<std::int64_t>& cursor,
               std::int64_t base) {
    for (std::size_t k = 0; k < b.cells.size(); ++k) {
      const auto c = static_cast<std::uint64_t>(b.cells[k]);
      if (c < band_lo || c >= band_hi) continue;
      auto& at = cursor[c - band_lo];
      if (at >= indptr[c + 1]) changed();
      band_indices[static_cast<std::size_t>(at - base)] = b.genes[k];
      out[static_cast<std::size_t>(at - base)] = values[k];
      ++at;
    }
  }

  // The entries of cells [lo, hi) scattered into cell-major order.
  void load_band(std::uint64_t lo, std::uint64_t hi) {
    const auto& ip = counts();
    const auto base = ip[lo];
    const auto n = static_cast<std::size_t>(ip[hi] - base);
    band_lo = lo;
    band_hi = hi;
    has_band = false;
    band_indices.assign(n, 0);
    const bool real = entries->real_values();
    if (real) band_values = std::vector<double>(n, 0.0);
    else band_values = std::vector<std::int64_t>(n, 0);
    std::vector<std::int64_t> cursor(ip.begin() + static_cast<std::ptrdiff_t>(lo),
                                     ip.begin() + static_cast<std::ptrdiff_t>(hi));
    ++passes;
    entries->scan(true, [&](const EntryBlock& b) {
      if (b.genes.size() != b.cells.size() || (real ? b.real_values.size() : b.int_values.size()) != b.cells.size())
        throw FormatError(entries->name() + ": entry block without genes or values", entries->name());
      if (real) scatter(b, b.real_values, std::get<std::vector<double>>(band_values), cursor, base);
      else scatter(b, b.int_values, std::get<std::vector<std::int64_t>>(band_values), cursor, base);
    });
    for (std::uint64_t c = lo; c < hi; ++c)
      if (cursor[c - lo] != ip[c + 1]) changed();
    has_band = true;
  }

  // Makes cells [lo, hi) resident; a new band extends by whole requests of `step` cells while it
  // fits the budget.
  void ensure(std::uint64_t lo, std::uint64_t hi, std::uint64_t step) {
    if (has_band && lo >= band_lo && hi <= band_hi) return;
    const auto& ip = counts();
    const std::uint64_t n_cells = entries->n_cells();
    const std::uint64_t budget = std::max<std::uint64_t>(1, options.memory_budget / 16);
    std::uint64_t end = hi;
    while (end < n_cells) {
      const std::uint64_t next = std::min(n_cells, end + std::max<std::uint64_t>(1, step));
      if (static_cast<std::uint64_t>(ip[next] - ip[lo]) > budget) break;
      end = next;
    }
    drop_band();
    load_band(lo, end);
  }

  void drop_band() {
    has_band = false;
    band_indices = {};
    band_values = std::vector<std::int64_t>{};
  }
};

TransposedCsrSource::TransposedCsrSource(std::unique_ptr<GeneMajorEntries> entries, TransposeOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->entries = std::move(entries);
  impl_->options = options;
}

TransposedCsrSource::~TransposedCsrSource() = default;

std::uint64_t TransposedCsrSource::n_cells() const { return impl_->entries->n_cells(); }
std::uint64_t TransposedCsrSource::n_genes() const { return impl_->entries->n_genes(); }
std::uint64_t TransposedCsrSource::passes() const { return impl_->passes; }

std::string TransposedCsrSource::locate(std::uint64_t row) const {
  return impl_->entries->name() + " cell " + std::to_string(row);
}

void TransposedCsrSource::release() {
  impl_->drop_band();
  impl_->entries->release();
}

void TransposedCsrSource::read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) {
  Impl& m = *impl_;
  if (count > n_cells() || first > n_cells() - count)
    throw UsageError("rows " + std::to_string(first) + ".." + std::to_string(first + count) + " outside 0.." +
                     std::to_string(n_cells()));
  const std::uint64_t hi = first + count;
  m.ensure(first, hi, count);
  const auto& ip = m.indptr;
  const auto base = ip[m.band_lo];
  const auto a = static_cast<std::ptrdiff_t>(ip[first] - base);
  const auto b = static_cast<std::ptrdiff_t>(ip[hi] - base);
  out.indptr.resize(count + 1);
  for (std::uint64_t c = 0; c <= count; ++c) out.indptr[c] = ip[first + c] - ip[first];
  out.indices.assign(m.band_indices.begin() + a, m.band_indices.begin() + b);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        out.values = V(v.begin() + a, v.begin() + b);
      },
      m.band_values);
}

}  // namespace tessera::cells
