#include "gene_index.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TESSERA_GENE_INDEX_X86 1
#endif

namespace tessera::cells::detail {

namespace {

constexpr std::uint64_t kWordBits = 64;
// A gene in at least one row in this many gets a bitmap (8 bytes per 64 rows), else a list of
// 4-byte rows: the list is then at most as large as the bitmap.
constexpr std::uint64_t kBitmapDensity = 32;

std::uint64_t words_for(std::uint64_t rows) { return (rows + kWordBits - 1) / kWordBits; }

// Bit k set when words k of `column` and `want` (k < n <= 64) have a row in common.
struct ScalarMask {
  [[gnu::always_inline]] static std::uint64_t matching(const std::uint64_t* column, const std::uint64_t* want,
                                                       std::uint64_t n) {
    std::uint64_t bits = 0;
    for (std::uint64_t w = 0; w < n; ++w) bits |= std::uint64_t{(column[w] & want[w]) != 0} << w;
    return bits;
  }
};

#if defined(TESSERA_GENE_INDEX_X86)
// The same, four words per step.
struct Avx2Mask {
  __attribute__((target("avx2"))) static std::uint64_t matching(const std::uint64_t* column, const std::uint64_t* want,
                                                                std::uint64_t n) {
    std::uint64_t bits = 0, w = 0;
    for (; w + 4 <= n; w += 4) {
      const __m256i both = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(column + w)),
                                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(want + w)));
      const int empty = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(both, _mm256_setzero_si256())));
      bits |= static_cast<std::uint64_t>(~empty & 0xF) << w;
    }
    return bits | (ScalarMask::matching(column + w, want + w, n - w) << w);
  }
};
#endif

// The matches of one bitmap column against `want`, written from `out` on; returns the end. A
// row's count is at the gene's first count plus the gene's rows before it: those in earlier
// words and those below it in its word, counted from the words the scan has loaded anyway (a
// table of them would be more memory to fetch). Few words match (about one in seven for a batch
// of one cell in twenty), so the words are first ANDed, 64 at a time, into a mask of the
// matching ones, without a branch, and only those are visited. Inlined into every gather form
// below, so that the ones compiled for CPUs with POPCNT use the instruction.
template <typename Mask, typename CountAt>
[[gnu::always_inline]] inline GeneMatch* scan_bitmap(const std::uint64_t* column, const std::uint64_t* want,
                                                     std::uint64_t n_words, std::uint32_t first,
                                                     std::uint32_t out_column, CountAt count_at, GeneMatch* out) {
  std::uint32_t rank = first;  // the count of the first row at or after word w0
  std::uint32_t before[kWordBits];
  for (std::uint64_t w0 = 0; w0 < n_words; w0 += kWordBits) {
    const std::uint64_t w1 = std::min(n_words, w0 + kWordBits);
    std::uint64_t matching = Mask::matching(column + w0, want + w0, w1 - w0);
    for (std::uint64_t w = w0; w < w1; ++w) {
      before[w - w0] = rank;
      rank += static_cast<std::uint32_t>(__builtin_popcountll(column[w]));
    }
    for (; matching != 0; matching &= matching - 1) {
      const std::uint64_t w = w0 + static_cast<std::uint64_t>(__builtin_ctzll(matching));
      const std::uint64_t c = column[w];
      for (std::uint64_t m = c & want[w]; m != 0; m &= m - 1) {
        const int bit = __builtin_ctzll(m);
        const auto below = static_cast<std::uint32_t>(__builtin_popcountll(c & ((std::uint64_t{1} << bit) - 1)));
        *out++ = {static_cast<std::uint32_t>(w * kWordBits + static_cast<std::uint64_t>(bit)), out_column,
                  count_at(before[w - w0] + below)};
      }
    }
  }
  return out;
}

}  // namespace

std::uint64_t GeneIndex::bytes() const noexcept {
  return columns_.capacity() * sizeof(Column) + block_.capacity() + large_counts_.capacity() * sizeof(LargeCount);
}

void GeneIndex::clear() noexcept {
  // Assigning an empty vector releases the memory; `v = {}` would keep the capacity.
  const auto release = [](auto& v) { v = std::remove_reference_t<decltype(v)>(); };
  built_ = false;
  rows_ = 0;
  release(columns_);
  block_.reset();
  bitmaps_ = nullptr;
  lists_ = nullptr;
  counts_ = nullptr;
  release(large_counts_);
}

template <typename G, typename C>
bool GeneIndex::build(std::span<const std::int64_t> indptr, std::span<const G> genes, std::span<const C> counts,
                      std::span<const WideCount> wide, std::uint64_t n_genes, std::uint64_t max_bytes) {
  clear();
  constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
  const std::uint64_t rows = indptr.empty() ? 0 : indptr.size() - 1;
  const std::uint64_t nnz = genes.size();
  if (rows == 0 || rows >= kMax32 || nnz >= kMax32 || n_genes >= kMax32 || counts.size() != nnz) return false;
  // Nonzeros per gene, then the size of each gene's form.
  columns_.assign(n_genes, Column{});
  for (const G g : genes) {
    if (static_cast<std::uint64_t>(g) >= n_genes) {  // the decode checked this; never index out of bounds
      clear();
      return false;
    }
    ++columns_[static_cast<std::uint64_t>(g)].count;
  }
  std::uint64_t large = 0;  // counts of kLargeCount or more: their real values go to large_counts_
  {
    auto w = wide.begin();
    for (std::uint64_t j = 0; j < nnz; ++j) {
      while (w != wide.end() && w->position < j) ++w;
      const std::int64_t count = w != wide.end() && w->position == j ? w->count : counts[j];
      large += count >= kLargeCount;
    }
  }
  const std::uint64_t n_words = words_for(rows);
  bitmap_min_ = (rows + kBitmapDensity - 1) / kBitmapDensity;
  std::uint64_t bitmap_words = 0, list_entries = 0;
  std::uint32_t first = 0;
  for (auto& column : columns_) {
    column.first = first;
    first += column.count;
    std::uint64_t& end = has_bitmap(column) ? bitmap_words : list_entries;
    column.where = end;
    end += has_bitmap(column) ? n_words : column.count;
  }
  std::uint64_t block = bitmap_words * sizeof(std::uint64_t) + list_entries * sizeof(std::uint32_t) + nnz;
  if (block >= HugeBuffer::kHugeFrom)
    block = (block + HugeBuffer::kHugePage - 1) / HugeBuffer::kHugePage * HugeBuffer::kHugePage;
  const std::uint64_t need = n_genes * sizeof(Column) + block + large * sizeof(LargeCount);
  if (need > max_bytes) {
    clear();
    return false;
  }
  // One block, largest alignment first: bitmaps, lists, counts.
  block_.allocate(bitmap_words * sizeof(std::uint64_t) + list_entries * sizeof(std::uint32_t) + nnz);
  std::byte* at = block_.data();
  const auto carve = [&at](auto*& array, std::uint64_t n) {
    array = reinterpret_cast<std::remove_reference_t<decltype(array)>>(at);
    at += n * sizeof(*array);
  };
  carve(bitmaps_, bitmap_words);
  carve(lists_, list_entries);
  carve(counts_, nnz);
  large_counts_.reserve(large);
  std::fill_n(bitmaps_, bitmap_words, std::uint64_t{0});
  // Rows in order, so each gene's rows (and counts) come out ascending.
  std::vector<std::uint32_t> filled(n_genes, 0);
  auto w = wide.begin();
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (auto j = static_cast<std::uint64_t>(indptr[r]); j < static_cast<std::uint64_t>(indptr[r + 1]); ++j) {
      const auto g = static_cast<std::uint64_t>(genes[j]);
      const Column& column = columns_[g];
      const std::uint32_t e = filled[g]++, k = column.first + e;
      std::int64_t count = counts[j];
      while (w != wide.end() && w->position < j) ++w;
      if (w != wide.end() && w->position == j) count = w->count;
      counts_[k] = static_cast<std::uint8_t>(std::min<std::int64_t>(count, kLargeCount));
      if (count >= kLargeCount) large_counts_.push_back({k, static_cast<std::int32_t>(count)});
      if (has_bitmap(column)) bitmaps_[column.where + r / kWordBits] |= std::uint64_t{1} << (r % kWordBits);
      else lists_[column.where + e] = static_cast<std::uint32_t>(r);
    }
  }
  // Filled row by row, so positions came gene by gene interleaved.
  std::sort(large_counts_.begin(), large_counts_.end(),
            [](const LargeCount& a, const LargeCount& b) { return a.position < b.position; });
  rows_ = static_cast<std::uint32_t>(rows);
  built_ = true;
  return true;
}

template bool GeneIndex::build(std::span<const std::int64_t>, std::span<const std::uint16_t>,
                               std::span<const std::uint16_t>, std::span<const WideCount>, std::uint64_t,
                               std::uint64_t);
template bool GeneIndex::build(std::span<const std::int64_t>, std::span<const std::int32_t>,
                               std::span<const std::int32_t>, std::span<const WideCount>, std::uint64_t, std::uint64_t);

namespace {

// What a gather reads of a GeneIndex.
struct IndexView {
  const GeneIndex* index;  // for its counts
  const GeneIndex::Column* columns;
  const std::uint64_t* bitmaps;
  const std::uint32_t* lists;
  const std::uint8_t* counts;
  std::uint64_t n_words;
};

template <typename Mask>
[[gnu::always_inline]] inline std::size_t gather_columns(const IndexView& x, const std::uint64_t* want,
                                                         std::span<const std::uint32_t> genes, GeneMatch* out) {
  GeneMatch* const begin = out;
  const auto count_at = [&](std::uint32_t k) { return x.index->count_at(k); };
  const auto has_bitmap = [&](const GeneIndex::Column& c) { return x.index->has_bitmap(c); };
  // The genes' entries are independent loads, issued together first; then, while a gene is
  // scanned, the rows and counts of the one a few ahead are requested (each a short run of cache
  // lines in a different place, too short for the hardware prefetcher to follow).
  for (const std::uint32_t g : genes) __builtin_prefetch(x.columns + g);
  const auto prefetch_gene = [&](std::uint32_t g) {
    const auto& c = x.columns[g];
    const bool bitmap = has_bitmap(c);
    const auto* rows =
        bitmap ? reinterpret_cast<const char*>(x.bitmaps + c.where) : reinterpret_cast<const char*>(x.lists + c.where);
    const std::uint64_t row_bytes = bitmap ? x.n_words * sizeof(std::uint64_t) : c.count * sizeof(std::uint32_t);
    for (std::uint64_t at = 0; at < row_bytes; at += 64) __builtin_prefetch(rows + at);
    for (std::uint64_t at = 0; at < c.count; at += 64) __builtin_prefetch(x.counts + c.first + at);
  };
  constexpr std::size_t kAheadGenes = 3;
  for (std::size_t column = 0; column < std::min(kAheadGenes, genes.size()); ++column) prefetch_gene(genes[column]);
  for (std::size_t column = 0; column < genes.size(); ++column) {
    if (column + kAheadGenes < genes.size()) prefetch_gene(genes[column + kAheadGenes]);
    const auto& c = x.columns[genes[column]];
    const auto out_column = static_cast<std::uint32_t>(column);
    if (c.count == 0) continue;
    if (has_bitmap(c)) {
      out = scan_bitmap<Mask>(x.bitmaps + c.where, want, x.n_words, c.first, out_column, count_at, out);
      continue;
    }
    const std::uint32_t* rows = x.lists + c.where;
    for (std::uint32_t e = 0; e < c.count; ++e) {  // a branch-free write: the end moves on a match only
      *out = {rows[e], out_column, count_at(c.first + e)};
      out += (want[rows[e] / kWordBits] >> (rows[e] % kWordBits)) & 1;
    }
  }
  return static_cast<std::size_t>(out - begin);
}

// The same loop three times: x86-64's baseline has no POPCNT instruction (the matches count the
// bits below them), and AVX2 finds the matching words four at a time.
#if defined(TESSERA_GENE_INDEX_X86)
__attribute__((target("popcnt"))) std::size_t gather_columns_popcnt(const IndexView& x, const std::uint64_t* want,
                                                                    std::span<const std::uint32_t> genes,
                                                                    GeneMatch* out) {
  return gather_columns<ScalarMask>(x, want, genes, out);
}
__attribute__((target("avx2,popcnt"))) std::size_t gather_columns_avx2(const IndexView& x, const std::uint64_t* want,
                                                                       std::span<const std::uint32_t> genes,
                                                                       GeneMatch* out) {
  return gather_columns<Avx2Mask>(x, want, genes, out);
}
std::atomic<bool> portable_only{false};

bool cpu_has_popcnt() noexcept {
  static const bool has = __builtin_cpu_supports("popcnt");
  return has;
}
bool cpu_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

}  // namespace

std::size_t GeneIndex::gather(const std::uint64_t* want, std::uint64_t wanted_rows,
                              std::span<const std::uint32_t> genes, MatchBuffer& out) const {
  if (!built_) return 0;
  // At most min(its rows, the wanted rows) matches per gene, and the one slot the list scan's
  // writes may use past the last.
  std::uint64_t bound = 1;
  for (const std::uint32_t g : genes) bound += std::min<std::uint64_t>(columns_[g].count, wanted_rows);
  GeneMatch* const dst = out.reserve(bound);
  const IndexView columns{this, columns_.data(), bitmaps_, lists_, counts_, words_for(rows_)};
#if defined(TESSERA_GENE_INDEX_X86)
  if (portable_only.load(std::memory_order_relaxed)) return gather_columns<ScalarMask>(columns, want, genes, dst);
  if (cpu_has_avx2() && cpu_has_popcnt()) return gather_columns_avx2(columns, want, genes, dst);
  if (cpu_has_popcnt()) return gather_columns_popcnt(columns, want, genes, dst);
#endif
  return gather_columns<ScalarMask>(columns, want, genes, dst);
}

std::int32_t GeneIndex::large_count(std::uint32_t k) const noexcept {
  const auto it = std::lower_bound(large_counts_.begin(), large_counts_.end(), k,
                                   [](const LargeCount& c, std::uint32_t position) { return c.position < position; });
  return it != large_counts_.end() && it->position == k ? it->count : kLargeCount;
}

void GeneIndex::use_portable_kernel_for_testing(bool portable) noexcept {
#if defined(TESSERA_GENE_INDEX_X86)
  portable_only.store(portable, std::memory_order_relaxed);
#else
  (void)portable;
#endif
}

}  // namespace tessera::cells::detail
