// Input of the dataset writer (spec deltacells.md §4.1, §4.8): blocks of consecutive rows
// (cells) in CSR form, from any reader that implements `CsrBlockSource` (in-memory matrices
// here; h5ad and 10x readers in interop). `canonicalize` turns one block into the canonical
// CSR a tile stores: columns renumbered by the gene order, duplicates summed, genes sorted,
// values checked (never clipped or rounded), explicit zeros dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace tessera::cells {

// A block of rows in CSR form with source column numbers. Values are integers (any integer or
// boolean input) or floating point (which must hold integers).
struct CsrBlock {
  std::vector<std::int64_t> indptr{0};  // n_rows + 1 entries, starting at 0
  std::vector<std::int64_t> indices;    // source column of each entry
  std::variant<std::vector<std::int64_t>, std::vector<double>> values;
  std::uint64_t n_rows() const noexcept { return indptr.empty() ? 0 : indptr.size() - 1; }
};

// A source of rows. The dataset writer calls `read_rows` from one thread at a time, with
// increasing, contiguous row ranges; implementations need not be thread-safe.
class CsrBlockSource {
 public:
  virtual ~CsrBlockSource() = default;
  virtual std::uint64_t n_cells() const = 0;
  virtual std::uint64_t n_genes() const = 0;
  // Replaces `out` with rows [first, first + count). Throws FormatError for malformed input
  // (naming the file) and IoError for read failures.
  virtual void read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) = 0;
  // Drops buffers and open files the source can rebuild; a later read_rows reopens what it needs.
  // Called when a reader moves on to the next input (ConcatCsrSource).
  virtual void release() {}
  // Where row `row` comes from, for error messages ("a.h5ad: X row 17"); empty when the source
  // has nothing to add. Must be safe to call from any thread while read_rows runs.
  virtual std::string locate(std::uint64_t /*row*/) const { return {}; }
};

// A whole matrix held in memory (tests, small inputs, bindings).
class MemoryCsrSource final : public CsrBlockSource {
 public:
  MemoryCsrSource(std::uint64_t n_genes, CsrBlock matrix);
  std::uint64_t n_cells() const override { return matrix_.n_rows(); }
  std::uint64_t n_genes() const override { return n_genes_; }
  void read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) override;

 private:
  std::uint64_t n_genes_;
  CsrBlock matrix_;
};

// A tile's canonical CSR (owns what a TileCsr views).
struct CanonicalTile {
  std::vector<std::int64_t> indptr;
  std::vector<std::uint32_t> indices;
  std::vector<std::uint32_t> values;
};

struct CanonicalizeOptions {
  std::uint64_t n_genes = 0;
  std::uint32_t max_value = 0;  // the version's maximum count
  // stored_of_source[s] = stored column of source column s (the inverse of the gene order);
  // empty = identity.
  std::span<const std::uint32_t> stored_of_source;
  std::string tile_name = "tile";  // named in errors
  std::uint64_t first_cell = 0;    // global index of the block's first row (for messages)
  std::uint32_t version = 2;       // for the "write version 2" hint
  // Names the input a cell comes from in messages (given the global cell index); may be empty.
  std::function<std::string(std::uint64_t)> locate{};
};

// §4.1. Throws FormatError for malformed CSR (indptr not starting at 0, decreasing or not
// matching the entries; a column outside 0..n_genes-1) and for negative, non-integral or
// non-finite values; LimitError for a (summed) count above max_value.
CanonicalTile canonicalize(const CsrBlock& block, const CanonicalizeOptions& options);

}  // namespace tessera::cells
