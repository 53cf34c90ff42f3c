// select_columns (include/tessera/cells/batch_columns.hpp): a table built once maps each stored
// column to its output columns; then, block by block of rows, the kept nonzeros are counted,
// scattered into output columns (a counting sort) and gathered back into rows column by column,
// so every row comes out with ascending indices without a comparison sort.
#include "tessera/cells/batch_columns.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

// Rows per block: a block's nonzeros (a few hundred thousand bytes) stay in cache while they are
// scattered into columns and gathered back.
constexpr std::uint64_t kBlockRows = 256;

template <typename V>
void select_rows(const SparseBatch& in, const std::vector<std::uint64_t>& first,
                 const std::vector<std::int32_t>& targets, const std::vector<V>& values_in, SparseBatch& out,
                 std::vector<V>& values_out) {
  const std::uint64_t rows = in.n_rows(), columns = out.n_genes;
  std::vector<std::uint64_t> column_start(columns + 1);
  std::vector<std::uint64_t> row_cursor(kBlockRows);
  std::vector<std::uint16_t> column_rows;  // row within the block of each scattered nonzero
  std::vector<V> column_values;
  out.indptr.assign(rows + 1, 0);
  out.indices.reserve(in.indices.size());
  values_out.reserve(in.indices.size());
  for (std::uint64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    const std::uint64_t r1 = std::min(rows, r0 + kBlockRows);
    const auto begin = static_cast<std::uint64_t>(in.indptr[r0]), end = static_cast<std::uint64_t>(in.indptr[r1]);
    // Count the block's nonzeros per output column and per row.
    std::fill(column_start.begin(), column_start.end(), 0);
    for (std::uint64_t r = r0; r < r1; ++r) {
      std::uint64_t kept = 0;
      for (auto j = static_cast<std::uint64_t>(in.indptr[r]); j < static_cast<std::uint64_t>(in.indptr[r + 1]); ++j) {
        const auto s = static_cast<std::uint64_t>(in.indices[j]);
        for (std::uint64_t t = first[s]; t < first[s + 1]; ++t)
          ++column_start[static_cast<std::uint64_t>(targets[t]) + 1];
        kept += first[s + 1] - first[s];
      }
      out.indptr[r + 1] = out.indptr[r] + static_cast<std::int64_t>(kept);
    }
    for (std::uint64_t k = 0; k < columns; ++k) column_start[k + 1] += column_start[k];
    // Scatter into columns, rows ascending within each (rows are visited in order).
    const std::uint64_t block_nnz = column_start[columns];
    column_rows.resize(block_nnz);
    column_values.resize(block_nnz);
    for (std::uint64_t j = begin, r = r0; j < end; ++j) {
      while (static_cast<std::uint64_t>(in.indptr[r + 1]) <= j) ++r;
      const auto s = static_cast<std::uint64_t>(in.indices[j]);
      for (std::uint64_t t = first[s]; t < first[s + 1]; ++t) {
        const std::uint64_t at = column_start[static_cast<std::uint64_t>(targets[t])]++;
        column_rows[at] = static_cast<std::uint16_t>(r - r0);
        column_values[at] = values_in[j];
      }
    }
    // column_start[k] is now the end of column k: gather back into rows, columns ascending.
    const auto base = static_cast<std::uint64_t>(out.indptr[r0]);
    out.indices.resize(base + block_nnz);
    values_out.resize(base + block_nnz);
    for (std::uint64_t r = r0; r < r1; ++r) row_cursor[r - r0] = static_cast<std::uint64_t>(out.indptr[r]);
    for (std::uint64_t k = 0, at = 0; k < columns; ++k)
      for (; at < column_start[k]; ++at) {
        const std::uint64_t to = row_cursor[column_rows[at]]++;
        out.indices[to] = static_cast<std::int32_t>(k);
        values_out[to] = column_values[at];
      }
  }
}

}  // namespace

SparseBatch select_columns(const SparseBatch& batch, std::span<const std::int64_t> positions) {
  if (positions.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw LimitError("select_columns: more than 2^31 - 1 columns");
  // Output columns of each stored column, as a CSR over the stored columns (ascending within each).
  std::vector<std::uint64_t> first(batch.n_genes + 1, 0);
  for (const std::int64_t p : positions) {
    if (p < 0 || static_cast<std::uint64_t>(p) >= batch.n_genes)
      throw UsageError("gene column " + std::to_string(p) + " outside [0, " + std::to_string(batch.n_genes) + ")");
    ++first[static_cast<std::uint64_t>(p) + 1];
  }
  for (std::uint64_t s = 0; s < batch.n_genes; ++s) first[s + 1] += first[s];
  std::vector<std::int32_t> targets(positions.size());
  std::vector<std::uint64_t> fill(first.begin(), first.end() - 1);
  for (std::size_t k = 0; k < positions.size(); ++k)
    targets[fill[static_cast<std::uint64_t>(positions[k])]++] = static_cast<std::int32_t>(k);

  SparseBatch out;
  out.values = batch.values;
  out.n_genes = positions.size();
  switch (batch.values) {
    case Values::Int32: select_rows(batch, first, targets, batch.values_int32, out, out.values_int32); return out;
    case Values::Float32: select_rows(batch, first, targets, batch.values_float32, out, out.values_float32); return out;
  }
  throw UsageError("select_columns: unknown value type");
}

}  // namespace tessera::cells
