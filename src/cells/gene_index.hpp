// A decoded tile's nonzeros by gene: a second, column-wise form of a tile kept decoded, for
// batches of a few genes over many cells (get_batch with genes). Without it such a batch must
// reach every requested row and scan all its genes to find the few kept, which costs as much as
// copying whole rows. With it, the batch visits only the requested genes' columns.
//
// For each stored gene, the tile rows holding it are either a bitmap of ceil(rows / 64) words (a
// gene in at least 1 row in 32) or an ascending list of 4-byte rows (a rarer gene, for which
// the list is the smaller). The counts are stored in gene order (CSC), one byte each (255 and
// above in a side table), so a row's rank among its gene's rows locates its count. What a batch
// reads of a gene is then about the bitmap and the few count lines its matches fall in.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "huge_buffer.hpp"
#include "tessera/cells/tile.hpp"

namespace tessera::cells::detail {

// A nonzero found by GeneIndex::gather.
struct GeneMatch {
  std::uint32_t row;     // tile row
  std::uint32_t column;  // position of its gene in the genes gathered
  std::int32_t count;
};

// Room for matches, grown as needed and never cleared (a vector would zero what gather
// overwrites anyway).
class MatchBuffer {
 public:
  GeneMatch* reserve(std::size_t n) {
    if (n > capacity_) {
      data_ = std::make_unique_for_overwrite<GeneMatch[]>(n);
      capacity_ = n;
    }
    return data_.get();
  }
  const GeneMatch* data() const noexcept { return data_.get(); }

 private:
  std::unique_ptr<GeneMatch[]> data_;
  std::size_t capacity_ = 0;
};

class GeneIndex {
 public:
  // Per gene, in one place so that reaching a gene costs one cache line: its counts are
  // [first, first + count), its rows start at `where` in the bitmaps or in the lists.
  struct Column {
    std::uint64_t where = 0;
    std::uint32_t first = 0, count = 0;
  };

  bool built() const noexcept { return built_; }
  // Whether gene `c`'s rows are a bitmap (else a list).
  bool has_bitmap(const Column& c) const noexcept { return c.count > 0 && c.count >= bitmap_min_; }
  std::uint32_t rows() const noexcept { return rows_; }
  // Memory held, for the decoded cache's budget.
  std::uint64_t bytes() const noexcept;
  // Releases the memory (a recycled buffer must not keep an index nobody accounts for).
  void clear() noexcept;

  // Builds the index of a tile from its CSR (row starts `indptr`, `genes` and `counts` at each
  // nonzero, and the narrow form's counts above 65535 in `wide`), unless it would take more
  // than `max_bytes` or the tile has 2^32 nonzeros or rows: then nothing is kept and false is
  // returned. `genes` are the tile's stored columns, each below `n_genes`.
  template <typename G, typename C>
  bool build(std::span<const std::int64_t> indptr, std::span<const G> genes, std::span<const C> counts,
             std::span<const WideCount> wide, std::uint64_t n_genes, std::uint64_t max_bytes);

  // The nonzeros of the stored genes `genes` (each below n_genes, repeats allowed) in the rows
  // whose bit is set in `want` (rows() bits, as ceil(rows() / 64) words; `wanted_rows` of them
  // set): written to the start of `out`, genes in the order given, each gene's rows ascending,
  // the gene's position in `genes` as the match's column. Returns how many.
  std::size_t gather(const std::uint64_t* want, std::uint64_t wanted_rows, std::span<const std::uint32_t> genes,
                     MatchBuffer& out) const;

  // Tests: run gather's portable form (no POPCNT, no AVX2) on any CPU, so every form is checked.
  static void use_portable_kernel_for_testing(bool portable) noexcept;

 private:
  bool built_ = false;
  std::uint32_t rows_ = 0;
  std::vector<Column> columns_;
  std::uint64_t bitmap_min_ = 0;  // a gene with at least this many rows has a bitmap
  // The rows and counts, in one block (see huge_buffer.hpp): the bitmaps, the lists, and the
  // counts in gene order, one byte each; a count of 255 or more is 255 there and is found in
  // `large_counts` (sorted by position).
  HugeBuffer block_;
  std::uint64_t* bitmaps_ = nullptr;
  std::uint32_t* lists_ = nullptr;
  std::uint8_t* counts_ = nullptr;
  struct LargeCount {
    std::uint32_t position;
    std::int32_t count;
  };
  std::vector<LargeCount> large_counts_;

 public:
  // The count at position k of the gene-ordered counts (for gather's kernels).
  std::int32_t count_at(std::uint32_t k) const noexcept {
    const std::uint8_t c = counts_[k];
    return c != kLargeCount ? c : large_count(k);
  }
  static constexpr std::uint8_t kLargeCount = 255;

 private:
  std::int32_t large_count(std::uint32_t k) const noexcept;
};

}  // namespace tessera::cells::detail
