// select_columns (include/tessera/cells/batch_columns.hpp): a table built once maps each stored
// column to its output columns; then, block by block of rows, the kept nonzeros are counted,
// scattered into output columns (a counting sort) and gathered back into rows column by column,
// so every row comes out with ascending indices without a comparison sort.
//
// When no stored column is asked for twice, a block never has more nonzeros out than in, so its
// output fits where its input was: the batch's own buffers are reused, and a large batch does
// not fault in a second copy of itself (on these machines fresh pages cost more than the sort).
#include "tessera/cells/batch_columns.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

// Rows per block: a block's nonzeros (a few hundred kilobytes) stay in cache while they are
// scattered into columns and gathered back.
constexpr std::uint64_t kBlockRows = 256;
// A permutation of at least this many nonzeros is split over threads (a whole-dataset
// to_anndata is tens of millions; a training batch, a few hundred thousand, stays on one).
constexpr std::uint64_t kParallelNonzeros = std::uint64_t{1} << 21;

// Stored column -> output columns, as a CSR over the stored columns (`first`, `targets`).
struct ColumnMap {
  std::vector<std::uint64_t> first;
  std::vector<std::int32_t> targets;
  bool repeats = false;      // some stored column has more than one output column
  bool permutation = false;  // every stored column has exactly one output column
  // Without repeats: the output column of each stored column, -1 when it is not kept (one load
  // per nonzero instead of two).
  std::vector<std::int32_t> single;

  ColumnMap(std::uint64_t n_genes, std::span<const std::int64_t> positions) : first(n_genes + 1, 0) {
    for (const std::int64_t p : positions) {
      if (p < 0 || static_cast<std::uint64_t>(p) >= n_genes)
        throw UsageError("gene column " + std::to_string(p) + " outside [0, " + std::to_string(n_genes) + ")");
      if (++first[static_cast<std::uint64_t>(p) + 1] > 1) repeats = true;
    }
    for (std::uint64_t s = 0; s < n_genes; ++s) first[s + 1] += first[s];
    targets.resize(positions.size());
    std::vector<std::uint64_t> fill(first.begin(), first.end() - 1);
    for (std::size_t k = 0; k < positions.size(); ++k)
      targets[fill[static_cast<std::uint64_t>(positions[k])]++] = static_cast<std::int32_t>(k);
    permutation = !repeats && positions.size() == n_genes;
    if (!repeats) {
      single.assign(n_genes, -1);
      for (std::size_t k = 0; k < positions.size(); ++k)
        single[static_cast<std::uint64_t>(positions[k])] = static_cast<std::int32_t>(k);
    }
  }
  // Calls f(output column) for each output column of `stored`.
  template <typename F>
  void for_each_target(std::int32_t stored, F&& f) const {
    const auto s = static_cast<std::uint64_t>(stored);
    if (!repeats) {
      if (single[s] >= 0) f(static_cast<std::uint64_t>(single[s]));
      return;
    }
    for (std::uint64_t t = first[s]; t < first[s + 1]; ++t) f(static_cast<std::uint64_t>(targets[t]));
  }
  std::uint64_t multiplicity(std::int32_t stored) const noexcept {
    const auto s = static_cast<std::uint64_t>(stored);
    return first[s + 1] - first[s];
  }
};

// The selection from (indptr_in, indices_in, values_in) into (indptr_out, indices_out,
// values_out), which may be the input's own index and value buffers when the map has no repeats:
// a block's reads all happen before its writes, and its writes end where its input ended.
template <typename V>
void select_rows(const std::vector<std::int64_t>& indptr_in, const std::int32_t* indices_in, const V* values_in,
                 const ColumnMap& map, std::uint64_t columns, std::vector<std::int64_t>& indptr_out,
                 std::int32_t* indices_out, V* values_out, std::uint64_t row_begin, std::uint64_t row_end) {
  const std::uint64_t rows = row_end;
  std::vector<std::uint64_t> column_start(columns + 1);
  std::vector<std::uint64_t> row_cursor(kBlockRows);
  std::vector<std::uint16_t> column_rows;  // row within the block of each scattered nonzero
  std::vector<V> column_values;
  for (std::uint64_t r0 = row_begin; r0 < rows; r0 += kBlockRows) {
    const std::uint64_t r1 = std::min(rows, r0 + kBlockRows);
    const auto begin = static_cast<std::uint64_t>(indptr_in[r0]), end = static_cast<std::uint64_t>(indptr_in[r1]);
    // Count the block's nonzeros per output column and per row.
    std::fill(column_start.begin(), column_start.end(), 0);
    for (std::uint64_t r = r0; r < r1; ++r) {
      std::uint64_t kept = 0;
      for (auto j = static_cast<std::uint64_t>(indptr_in[r]); j < static_cast<std::uint64_t>(indptr_in[r + 1]); ++j)
        map.for_each_target(indices_in[j], [&](std::uint64_t k) {
          ++column_start[k + 1];
          ++kept;
        });
      indptr_out[r + 1] = indptr_out[r] + static_cast<std::int64_t>(kept);
    }
    for (std::uint64_t k = 0; k < columns; ++k) column_start[k + 1] += column_start[k];
    // Scatter into columns, rows ascending within each (rows are visited in order).
    const std::uint64_t block_nnz = column_start[columns];
    column_rows.resize(block_nnz);
    column_values.resize(block_nnz);
    for (std::uint64_t j = begin, r = r0; j < end; ++j) {
      while (static_cast<std::uint64_t>(indptr_in[r + 1]) <= j) ++r;
      map.for_each_target(indices_in[j], [&](std::uint64_t k) {
        const std::uint64_t at = column_start[k]++;
        column_rows[at] = static_cast<std::uint16_t>(r - r0);
        column_values[at] = values_in[j];
      });
    }
    // column_start[k] is now the end of column k: gather back into rows, columns ascending.
    for (std::uint64_t r = r0; r < r1; ++r) row_cursor[r - r0] = static_cast<std::uint64_t>(indptr_out[r]);
    for (std::uint64_t k = 0, at = 0; k < columns; ++k)
      for (; at < column_start[k]; ++at) {
        const std::uint64_t to = row_cursor[column_rows[at]]++;
        indices_out[to] = static_cast<std::int32_t>(k);
        values_out[to] = column_values[at];
      }
  }
}

template <typename V>
SparseBatch select_values(SparseBatch&& batch, std::vector<V> SparseBatch::*values, const ColumnMap& map,
                          std::uint64_t columns) {
  const std::uint64_t rows = batch.n_rows();
  if (!map.repeats) {  // in place: the output fits where the input was
    const std::vector<std::int64_t> indptr_in = batch.indptr;
    std::vector<V>& v = batch.*values;
    if (map.permutation && batch.indices.size() >= kParallelNonzeros) {
      // Every row keeps its length, so each range of rows writes exactly where it reads: the
      // ranges are independent and run on several threads (indptr is already the output's).
      const std::uint64_t parts = std::clamp<std::uint64_t>(std::thread::hardware_concurrency(), 1, 4);
      const std::uint64_t step = (rows / parts + kBlockRows) / kBlockRows * kBlockRows;
      std::vector<std::thread> threads;
      std::vector<std::exception_ptr> errors(parts);
      for (std::uint64_t p = 0; p < parts && p * step < rows; ++p)
        threads.emplace_back([&, p] {
          try {
            select_rows(indptr_in, batch.indices.data(), v.data(), map, columns, batch.indptr, batch.indices.data(),
                        v.data(), p * step, std::min(rows, (p + 1) * step));
          } catch (...) {
            errors[p] = std::current_exception();
          }
        });
      for (auto& t : threads) t.join();
      for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
    } else {
      batch.indptr.assign(rows + 1, 0);
      select_rows(indptr_in, batch.indices.data(), v.data(), map, columns, batch.indptr, batch.indices.data(), v.data(),
                  0, rows);
    }
    const auto nnz = static_cast<std::size_t>(batch.indptr.back());
    batch.indices.resize(nnz);
    v.resize(nnz);
    batch.n_genes = columns;
    return std::move(batch);
  }
  std::uint64_t nnz = 0;
  for (const std::int32_t j : batch.indices) nnz += map.multiplicity(j);
  SparseBatch out;
  out.values = batch.values;
  out.n_genes = columns;
  out.indices.resize(nnz);
  (out.*values).resize(nnz);
  out.indptr.assign(rows + 1, 0);
  select_rows(batch.indptr, batch.indices.data(), (batch.*values).data(), map, columns, out.indptr, out.indices.data(),
              (out.*values).data(), 0, rows);
  return out;
}

}  // namespace

SparseBatch select_columns(SparseBatch batch, std::span<const std::int64_t> positions) {
  if (positions.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw LimitError("select_columns: more than 2^31 - 1 columns");
  const ColumnMap map(batch.n_genes, positions);
  switch (batch.values) {
    case Values::Int32: return select_values(std::move(batch), &SparseBatch::values_int32, map, positions.size());
    case Values::Float32: return select_values(std::move(batch), &SparseBatch::values_float32, map, positions.size());
  }
  throw UsageError("select_columns: unknown value type");
}

}  // namespace tessera::cells
