// Canonicalization of CSR row blocks (spec deltacells.md §4.1) and the in-memory source.
#include "tessera/cells/csr_source.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rules.hpp"
#include "tessera/cells/count_errors.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

std::string cell_label(const CanonicalizeOptions& o, std::uint64_t r) {
  const std::uint64_t cell = o.first_cell + r;
  std::string where = o.locate ? o.locate(cell) : std::string();
  return "cell " + std::to_string(cell) + (where.empty() ? std::string() : " (" + where + ")");
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <typename T>
void canonicalize_values(const CsrBlock& b, const std::vector<T>& values, const CanonicalizeOptions& o,
                         CanonicalTile& out) {
  const std::uint64_t n_rows = b.n_rows();
  out.indptr.assign(n_rows + 1, 0);
  out.indices.clear();
  out.values.clear();
  out.indices.reserve(b.indices.size());
  out.values.reserve(b.indices.size());
  std::vector<std::pair<std::uint32_t, T>> row;
  for (std::uint64_t r = 0; r < n_rows; ++r) {
    const auto lo = static_cast<std::size_t>(b.indptr[r]);
    const auto hi = static_cast<std::size_t>(b.indptr[r + 1]);
    row.clear();
    bool sorted = true;
    for (std::size_t j = lo; j < hi; ++j) {
      const std::int64_t src = b.indices[j];
      if (src < 0 || static_cast<std::uint64_t>(src) >= o.n_genes)
        detail::fail(o.tile_name, cell_label(o, r),
                     "column " + std::to_string(src) + " outside 0.." + std::to_string(o.n_genes - 1), "");
      const std::uint32_t stored = o.stored_of_source.empty() ? static_cast<std::uint32_t>(src)
                                                              : o.stored_of_source[static_cast<std::size_t>(src)];
      if (!row.empty() && stored <= row.back().first) sorted = false;
      row.emplace_back(stored, values[j]);
    }
    if (!sorted) {
      std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
      // Sum duplicates (in the value type: exact for integers, and for doubles below 2^53).
      std::size_t w = 0;
      for (std::size_t i = 0; i < row.size(); ++i) {
        if (w > 0 && row[w - 1].first == row[i].first) {
          if constexpr (std::is_integral_v<T>) {
            if (__builtin_add_overflow(row[w - 1].second, row[i].second, &row[w - 1].second))
              detail::fail<LimitError>(o.tile_name, cell_label(o, r), "summed count overflows", "");
          } else {
            row[w - 1].second += row[i].second;
          }
        } else {
          row[w++] = row[i];
        }
      }
      row.resize(w);
    }
    for (const auto& entry : row) {
      const std::uint32_t gene = entry.first;
      const T v = entry.second;
      const auto describe = [&] {
        if constexpr (std::is_integral_v<T>) return std::to_string(v);
        else return format_double(v);
      };
      if constexpr (!std::is_integral_v<T>) {
        if (!std::isfinite(v) || v != std::floor(v))
          detail::fail<NonIntegerCount>(
              o.tile_name, cell_label(o, r),
              "gene " + std::to_string(gene) + " has value " + describe() + "; counts must be finite integers", "");
      }
      if (v < 0)
        detail::fail(o.tile_name, cell_label(o, r),
                     "gene " + std::to_string(gene) + " has negative count " + describe(), "");
      if (v > static_cast<T>(o.max_value))
        detail::fail<LimitError>(
            o.tile_name, cell_label(o, r),
            "gene " + std::to_string(gene) + " has count " + describe() + ", above the maximum " +
                std::to_string(o.max_value) +
                (o.version == 1 ? "; version 1 stores counts as uint16, write version 2 (--format-version 2)" : ""),
            "");
      if (v == 0) continue;  // explicit zeros are dropped
      out.indices.push_back(gene);
      out.values.push_back(static_cast<std::uint32_t>(v));
    }
    out.indptr[r + 1] = static_cast<std::int64_t>(out.indices.size());
  }
}

}  // namespace

MemoryCsrSource::MemoryCsrSource(std::uint64_t n_genes, CsrBlock matrix)
    : n_genes_(n_genes), matrix_(std::move(matrix)) {}

void MemoryCsrSource::read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) {
  if (first + count > matrix_.n_rows()) throw UsageError("read_rows past the end of the matrix");
  const auto lo = matrix_.indptr[first], hi = matrix_.indptr[first + count];
  out.indptr.resize(count + 1);
  for (std::uint64_t r = 0; r <= count; ++r) out.indptr[r] = matrix_.indptr[first + r] - lo;
  out.indices.assign(matrix_.indices.begin() + lo, matrix_.indices.begin() + hi);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        out.values = V(v.begin() + lo, v.begin() + hi);
      },
      matrix_.values);
}

CanonicalTile canonicalize(const CsrBlock& b, const CanonicalizeOptions& o) {
  const std::size_t entries = b.indices.size();
  const std::size_t n_values = std::visit([](const auto& v) { return v.size(); }, b.values);
  if (b.indptr.empty() || b.indptr[0] != 0) detail::fail(o.tile_name, "CSR block", "indptr must start at 0", "");
  for (std::size_t r = 0; r + 1 < b.indptr.size(); ++r)
    if (b.indptr[r + 1] < b.indptr[r])
      detail::fail(o.tile_name, "CSR block", "indptr decreases at row " + std::to_string(o.first_cell + r), "");
  if (static_cast<std::uint64_t>(b.indptr.back()) != entries || n_values != entries)
    detail::fail(o.tile_name, "CSR block",
                 "indptr ends at " + std::to_string(b.indptr.back()) + " but there are " + std::to_string(entries) +
                     " indices and " + std::to_string(n_values) + " values",
                 "");
  CanonicalTile out;
  std::visit([&](const auto& v) { canonicalize_values(b, v, o, out); }, b.values);
  return out;
}

}  // namespace tessera::cells
