#include "kept_genes.hpp"

#include <algorithm>

namespace tessera::cells::detail {

namespace {

// Rows of at most this many kept nonzeros are sorted in place by insertion (the usual case:
// a few genes of each row); longer ones through pairs.
constexpr std::size_t kInsertionSortMax = 16;

// Sorts one staged row by output column (the counts move with their columns).
void sort_row(std::int32_t* columns, std::int32_t* counts, std::size_t n,
              std::vector<std::pair<std::int32_t, std::int32_t>>& scratch) {
  if (n <= kInsertionSortMax) {
    for (std::size_t a = 1; a < n; ++a)
      for (std::size_t b = a; b > 0 && columns[b - 1] > columns[b]; --b) {
        std::swap(columns[b - 1], columns[b]);
        std::swap(counts[b - 1], counts[b]);
      }
    return;
  }
  scratch.resize(n);
  for (std::size_t e = 0; e < n; ++e) scratch[e] = {columns[e], counts[e]};
  std::sort(scratch.begin(), scratch.end());
  for (std::size_t e = 0; e < n; ++e) std::tie(columns[e], counts[e]) = scratch[e];
}

// Rows are scattered over the decoded tile, so their bytes miss the caches. The rows are
// scanned first, collecting the positions of kept nonzeros (the genes of the rows a few ahead
// are prefetched); then the kept genes and counts are loaded, independent loads that overlap.
// (Loading each count right after its row's scan exposed a memory latency per row.)
template <typename G, typename CountAt>
void scan_rows(const std::vector<std::int64_t>& ip, const G* genes, CountAt count_at, std::span<const TileRow> rows,
               const KeptGenes& kept, KeptStage& stage, std::span<std::int64_t> lengths) {
  constexpr std::size_t kAheadRows = 2;
  auto& positions = stage.kept_positions;
  positions.clear();
  stage.kept_end.resize(rows.size());
  for (std::size_t q = 0; q < rows.size(); ++q) {
    if (q + kAheadRows < rows.size()) {
      const std::uint64_t ahead = rows[q + kAheadRows].row;
      for (auto j = static_cast<std::uint64_t>(ip[ahead]); j < static_cast<std::uint64_t>(ip[ahead + 1]);
           j += 64 / sizeof(G))
        __builtin_prefetch(genes + j);
    }
    const std::uint64_t r = rows[q].row;
    for (auto j = static_cast<std::uint64_t>(ip[r]); j < static_cast<std::uint64_t>(ip[r + 1]); ++j)
      if (kept.keep[static_cast<std::uint64_t>(genes[j])]) positions.push_back(j);
    stage.kept_end[q] = positions.size();
  }
  std::size_t e = 0;
  for (std::size_t q = 0; q < rows.size(); ++q) {
    const std::size_t first = stage.columns.size();
    for (; e < stage.kept_end[q]; ++e) {
      const std::uint64_t j = positions[e];
      const auto g = static_cast<std::uint64_t>(genes[j]);
      const std::int32_t count = count_at(j);
      for (std::uint32_t t = kept.target_first[g]; t < kept.target_first[g + 1]; ++t) {
        stage.columns.push_back(static_cast<std::int32_t>(kept.targets[t]));
        stage.counts.push_back(count);
      }
    }
    const std::size_t n = stage.columns.size() - first;
    if (!kept.ascending && n > 1)
      sort_row(stage.columns.data() + first, stage.counts.data() + first, n, stage.sort_scratch);
    stage.first[rows[q].request] = first;
    lengths[rows[q].request + 1] = static_cast<std::int64_t>(n);
  }
}

}  // namespace

void KeptGenes::assign(std::span<const std::int64_t> genes, std::uint64_t n_genes) {
  columns.assign(genes.begin(), genes.end());
  keep.assign(n_genes, 0);
  target_first.assign(n_genes + 1, 0);
  ascending = true;
  for (std::size_t k = 0; k < genes.size(); ++k) {
    const auto g = static_cast<std::uint64_t>(genes[k]);
    keep[g] = 1;
    ++target_first[g + 1];
    if (k > 0 && genes[k] <= genes[k - 1]) ascending = false;
  }
  for (std::uint64_t g = 0; g < n_genes; ++g) target_first[g + 1] += target_first[g];
  targets.resize(genes.size());
  // Each output column, in increasing order, at its gene's next target (target_first[g] moves
  // to the end of g's targets, which is where g + 1's begin: shifted back afterwards).
  for (std::size_t k = 0; k < genes.size(); ++k)
    targets[target_first[static_cast<std::uint64_t>(genes[k])]++] = static_cast<std::uint32_t>(k);
  for (std::uint64_t g = n_genes; g > 0; --g) target_first[g] = target_first[g - 1];
  target_first[0] = 0;
}

void stage_scanned(const DecodedTile& d, std::span<const TileRow> rows, const KeptGenes& kept, KeptStage& stage,
                   std::span<std::int64_t> lengths) {
  if (d.narrow)
    scan_rows(
        d.indptr, d.genes.data(), [&](std::uint64_t j) { return d.count_at(j); }, rows, kept, stage, lengths);
  else
    scan_rows(
        d.indptr, d.indices.data(), [&](std::uint64_t j) { return d.values[j]; }, rows, kept, stage, lengths);
}

void stage_indexed(const GeneIndex& index, std::span<const TileRow> rows, const KeptGenes& kept, KeptStage& stage,
                   std::span<std::int64_t> lengths) {
  auto& want = stage.want;
  want.assign((index.rows() + 63) / 64, 0);
  if (stage.row_kept.size() < index.rows()) {  // zero between uses: only requested rows are touched
    stage.row_kept.resize(index.rows(), 0);
    stage.row_next.resize(index.rows());
  }
  std::uint64_t wanted = 0;
  for (const auto& tr : rows) {
    std::uint64_t& word = want[tr.row / 64];
    const std::uint64_t bit = std::uint64_t{1} << (tr.row % 64);
    wanted += (word & bit) == 0;
    word |= bit;
  }
  const std::size_t n_matches = index.gather(want.data(), wanted, kept.columns, stage.matches);
  const std::span<const GeneMatch> matches(stage.matches.data(), n_matches);
  // The matches come column by column: count them per row, give each distinct row its slots in
  // request order, and place them there, so each row's columns come out ascending.
  for (const auto& m : matches) ++stage.row_kept[m.row];
  std::uint64_t next = stage.columns.size();
  for (const auto& tr : rows) {
    const std::uint64_t bit = std::uint64_t{1} << (tr.row % 64);
    if (!(want[tr.row / 64] & bit)) continue;  // a repeated row: it has its slots
    want[tr.row / 64] &= ~bit;
    stage.row_next[tr.row] = next;
    next += stage.row_kept[tr.row];
  }
  stage.columns.resize(next);
  stage.counts.resize(next);
  for (const auto& m : matches) {
    const std::uint64_t slot = stage.row_next[m.row]++;
    stage.columns[slot] = static_cast<std::int32_t>(m.column);
    stage.counts[slot] = m.count;
  }
  for (const auto& tr : rows) {
    stage.first[tr.request] = stage.row_next[tr.row] - stage.row_kept[tr.row];
    lengths[tr.request + 1] = static_cast<std::int64_t>(stage.row_kept[tr.row]);
  }
  for (const auto& tr : rows) stage.row_kept[tr.row] = 0;
}

bool project(const GeneIndex& index, const KeptGenes& kept, KeptStage& stage, std::uint64_t max_bytes,
             GeneProjection& out) {
  out.clear();
  const std::uint32_t rows = index.rows();
  auto& all = stage.want;
  all.assign((rows + 63) / 64, ~std::uint64_t{0});
  if (rows % 64 != 0) all.back() = (std::uint64_t{1} << (rows % 64)) - 1;
  const std::size_t n = index.gather(all.data(), rows, kept.columns, stage.matches);
  if ((std::uint64_t{rows} + 1 + kept.columns.size() + 2 * std::uint64_t{n}) * 4 > max_bytes) return false;
  // The matches come gene by gene, each gene's rows ascending: counted per row, then placed in
  // that order, so each row's columns come out ascending (as stage_indexed places them).
  const std::span<const GeneMatch> matches(stage.matches.data(), n);
  out.indptr.assign(std::size_t{rows} + 1, 0);
  for (const auto& m : matches) ++out.indptr[m.row + 1];
  for (std::uint32_t r = 0; r < rows; ++r) out.indptr[r + 1] += out.indptr[r];
  out.entries.resize(n);
  auto& next = stage.projection_next;
  next.assign(out.indptr.begin(), out.indptr.end() - 1);
  for (const auto& m : matches) out.entries[next[m.row]++] = {static_cast<std::int32_t>(m.column), m.count};
  out.genes = kept.columns;
  return true;
}

void stage_projected(const GeneProjection& projection, std::span<const TileRow> rows, KeptStage& stage,
                     std::span<std::int64_t> lengths) {
  // The rows are scattered over the projection, so each is a cache miss once the caches have
  // turned over (a full-row batch in between): their bounds are loaded first, independent loads
  // that overlap, with each row's entries requested then; the copy comes after.
  std::size_t staged = stage.columns.size(), total = staged;
  for (const auto& tr : rows) {
    const std::uint32_t lo = projection.indptr[tr.row];
    __builtin_prefetch(projection.entries.data() + lo);
    total += projection.indptr[tr.row + 1] - lo;
  }
  stage.columns.resize(total);
  stage.counts.resize(total);
  for (const auto& tr : rows) {
    const std::uint32_t lo = projection.indptr[tr.row], len = projection.indptr[tr.row + 1] - lo;
    stage.first[tr.request] = staged;
    lengths[tr.request + 1] = len;
    for (std::uint32_t e = 0; e < len; ++e) {  // a few per row: a loop, not a call to memmove
      stage.columns[staged + e] = projection.entries[lo + e].column;
      stage.counts[staged + e] = projection.entries[lo + e].count;
    }
    staged += len;
  }
}

}  // namespace tessera::cells::detail
