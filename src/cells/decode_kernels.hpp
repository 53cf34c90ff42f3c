// The inner loops of tile decoding (tile_decode.cpp): un-planing a chunk's byte planes into
// gene indices and counts. Each loop has a portable SSE2 form and, on x86-64 CPUs that have it,
// an AVX2 form chosen at run time; both give identical output and verdicts.
//
// The big loops write with non-temporal stores: a decoded tile (8 bytes per nonzero) is far
// larger than the caches, so reading its lines in before overwriting them would only add memory
// traffic. They are the loops that set the decoder's speed against bare zstd (docs/performance.md).
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TESSERA_CELLS_AVX2 1
#endif

namespace tessera::cells::detail {

// Chunks of at least this many nonzeros write their output (8 bytes per nonzero, far more than
// the caches for a real tile) with non-temporal stores: the output lines are not read in before
// they are overwritten, which saves a third of the memory traffic of un-planing. Small chunks,
// whose output stays in cache, use ordinary stores.
inline constexpr std::uint64_t kStreamNnz = std::uint64_t{1} << 16;


// The gene indices of one cell without gap exceptions, positions [s, end) of the planes: the
// running sum of the stored gaps, un-planed and summed in the same pass. The scalar sum is a
// chain of dependent 64-bit adds, about as slow as zstd itself per byte; with SSE2 eight gaps at
// a time are summed in 32-bit lanes (two in-register prefix sums and a carried total). Lanes
// could wrap past 2^32, so the exact 64-bit total of the gaps is summed beside them (psadbw):
// true means every gap after the first is nonzero and the last index is below n_genes (hence
// no lane wrapped, as indices only grow); false leaves idx unspecified for the exact walk.
// With `Stream` the eight indices are written with aligned non-temporal stores (see kStreamNnz).
template <bool Stream>
inline bool cell_genes_sse(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end,
                     std::int32_t* idx, std::uint64_t n_genes) noexcept {
  std::uint32_t gene = lo[s] | (std::uint32_t{hi[s]} << 8);
  std::uint64_t total = gene;
  idx[s] = static_cast<std::int32_t>(gene);
  std::uint64_t j = s + 1;
  std::uint32_t zero = 0;
  const auto step = [&] {
    const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
    zero |= static_cast<std::uint32_t>(gap == 0);
    gene += gap;
    total += gap;
    idx[j++] = static_cast<std::int32_t>(gene);
  };
#if defined(__SSE2__)
  if constexpr (Stream)
    while (j < end && reinterpret_cast<std::uintptr_t>(idx + j) % 16 != 0) step();
  const __m128i z = _mm_setzero_si128();
  __m128i carry = _mm_set1_epi32(static_cast<int>(gene));
  __m128i zeros = z, sums = z;  // sums: 64-bit lanes, the low bytes' and the high bytes' totals
  for (; j + 8 <= end; j += 8) {
    const __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi + j));
    sums = _mm_add_epi64(sums, _mm_sad_epu8(_mm_unpacklo_epi64(l, h), z));
    const __m128i g = _mm_unpacklo_epi8(l, h);  // eight u16 gaps
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi16(g, z));
    __m128i a = _mm_unpacklo_epi16(g, z), b = _mm_unpackhi_epi16(g, z);
    a = _mm_add_epi32(a, _mm_slli_si128(a, 4));
    b = _mm_add_epi32(b, _mm_slli_si128(b, 4));
    a = _mm_add_epi32(a, _mm_slli_si128(a, 8));
    b = _mm_add_epi32(b, _mm_slli_si128(b, 8));
    // The block totals are broadcast from the local sums, off the carry's chain, which then
    // costs one add per step (a chain through the shuffles made the loop latency-bound).
    const __m128i ta = _mm_shuffle_epi32(a, 0xFF);
    b = _mm_add_epi32(b, ta);
    const __m128i tb = _mm_shuffle_epi32(b, 0xFF);
    a = _mm_add_epi32(a, carry);
    b = _mm_add_epi32(b, carry);
    carry = _mm_add_epi32(carry, tb);
    if constexpr (Stream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(idx + j), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(idx + j + 4), b);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + j), a);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + j + 4), b);
    }
  }
  gene = static_cast<std::uint32_t>(_mm_cvtsi128_si32(carry));
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
  alignas(16) std::uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), sums);
  total += lanes[0] + (lanes[1] << 8);
#endif
  while (j < end) step();
  return zero == 0 && total < n_genes;
}

// The counts of a chunk: val[j] = vlo[j] | vhi[j] << 8 for j < n; true when one is 0 (T21).
template <bool Stream, typename V>
inline bool chunk_values_sse(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n, V* val) noexcept {
  std::uint32_t zero = 0;
  std::uint64_t j = 0;
  const auto step = [&] {
    const std::uint32_t v = vlo[j] | (std::uint32_t{vhi[j]} << 8);
    zero |= static_cast<std::uint32_t>(v == 0);
    val[j++] = static_cast<V>(v);
  };
#if defined(__SSE2__)
  if constexpr (Stream) {
    while (j < n && reinterpret_cast<std::uintptr_t>(val + j) % 16 != 0) step();
    const __m128i z = _mm_setzero_si128();
    __m128i zeros = z;
    for (; j + 8 <= n; j += 8) {
      const __m128i g = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(vlo + j)),
                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(vhi + j)));
      zeros = _mm_or_si128(zeros, _mm_cmpeq_epi16(g, z));
      const __m128i a = _mm_unpacklo_epi16(g, z), b = _mm_unpackhi_epi16(g, z);
      if constexpr (std::is_same_v<V, float>) {
        _mm_stream_ps(val + j, _mm_cvtepi32_ps(a));
        _mm_stream_ps(val + j + 4, _mm_cvtepi32_ps(b));
      } else {
        _mm_stream_si128(reinterpret_cast<__m128i*>(val + j), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(val + j + 4), b);
      }
    }
    zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
  }
#endif
  while (j < n) step();  // the compiler vectorizes this loop itself
  return zero != 0;
}


// The narrow forms (Tile::decode_narrow) write uint16 gene indices and counts. They need
// n_genes <= 65536: the 16-bit running sum may wrap, but only past 65535, and the exact total
// (summed beside it with psadbw) is checked against n_genes, so an index that is accepted is
// exact. Eight nonzeros per step with SSE2.
template <bool Stream>
inline bool cell_genes16_sse(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end,
                             std::uint16_t* idx, std::uint64_t n_genes) noexcept {
  std::uint32_t gene = lo[s] | (std::uint32_t{hi[s]} << 8);
  std::uint64_t total = gene;
  idx[s] = static_cast<std::uint16_t>(gene);
  std::uint64_t j = s + 1;
  std::uint32_t zero = 0;
  const auto step = [&] {
    const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
    zero |= static_cast<std::uint32_t>(gap == 0);
    gene += gap;
    total += gap;
    idx[j++] = static_cast<std::uint16_t>(gene);
  };
#if defined(__SSE2__)
  if constexpr (Stream)
    while (j < end && reinterpret_cast<std::uintptr_t>(idx + j) % 16 != 0) step();
  const __m128i z = _mm_setzero_si128();
  __m128i carry = _mm_set1_epi16(static_cast<short>(gene));
  __m128i zeros = z, sums = z;
  for (; j + 8 <= end; j += 8) {
    const __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi + j));
    sums = _mm_add_epi64(sums, _mm_sad_epu8(_mm_unpacklo_epi64(l, h), z));
    __m128i g = _mm_unpacklo_epi8(l, h);
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi16(g, z));
    g = _mm_add_epi16(g, _mm_slli_si128(g, 2));
    g = _mm_add_epi16(g, _mm_slli_si128(g, 4));
    g = _mm_add_epi16(g, _mm_slli_si128(g, 8));
    const __m128i t = _mm_shuffle_epi32(_mm_shufflehi_epi16(g, 0xFF), 0xFF);  // word 7 everywhere
    g = _mm_add_epi16(g, carry);
    carry = _mm_add_epi16(carry, t);  // one add on the chain (see cell_genes_sse)
    if constexpr (Stream)
      _mm_stream_si128(reinterpret_cast<__m128i*>(idx + j), g);
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(idx + j), g);
  }
  gene = static_cast<std::uint16_t>(_mm_extract_epi16(carry, 0));
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
  alignas(16) std::uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), sums);
  total += lanes[0] + (lanes[1] << 8);
#endif
  while (j < end) step();
  return zero == 0 && total < n_genes;
}

// The narrow counts: the two planes interleaved; true when one is 0 (T21).
template <bool Stream>
inline bool chunk_values16_sse(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n,
                               std::uint16_t* val) noexcept {
  std::uint32_t zero = 0;
  std::uint64_t j = 0;
  const auto step = [&] {
    const std::uint32_t v = vlo[j] | (std::uint32_t{vhi[j]} << 8);
    zero |= static_cast<std::uint32_t>(v == 0);
    val[j++] = static_cast<std::uint16_t>(v);
  };
#if defined(__SSE2__)
  if constexpr (Stream)
    while (j < n && reinterpret_cast<std::uintptr_t>(val + j) % 16 != 0) step();
  const __m128i z = _mm_setzero_si128();
  __m128i zeros = z;
  for (; j + 16 <= n; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vlo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vhi + j));
    const __m128i a = _mm_unpacklo_epi8(l, h), b = _mm_unpackhi_epi8(l, h);
    zeros = _mm_or_si128(zeros, _mm_or_si128(_mm_cmpeq_epi16(a, z), _mm_cmpeq_epi16(b, z)));
    if constexpr (Stream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(val + j), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(val + j + 8), b);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(val + j), a);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(val + j + 8), b);
    }
  }
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
#endif
  while (j < n) step();
  return zero != 0;
}

#if defined(TESSERA_CELLS_AVX2)
// The AVX2 forms stream 32-byte stores and work on 16 nonzeros per step.

inline bool cpu_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// cell_genes_sse<true> for a cell of at most kAvx2CellMax nonzeros, so that the 32-bit running
// sum cannot wrap (65,536 gaps of at most 65,535 sum below 2^32) and the exact total needs no
// separate 64-bit sum: the last index is the total. Zero gaps are found with a running minimum.
inline constexpr std::uint64_t kAvx2CellMax = std::uint64_t{1} << 16;

__attribute__((target("avx2"))) inline bool cell_genes_avx2(const std::uint8_t* lo, const std::uint8_t* hi,
                                                            std::uint64_t s, std::uint64_t end, std::int32_t* idx,
                                                            std::uint64_t n_genes) noexcept {
  std::uint32_t gene = lo[s] | (std::uint32_t{hi[s]} << 8);
  idx[s] = static_cast<std::int32_t>(gene);
  std::uint64_t j = s + 1;
  std::uint32_t zero = 0;
  const auto step = [&] {
    const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
    zero |= static_cast<std::uint32_t>(gap == 0);
    gene += gap;
    idx[j++] = static_cast<std::int32_t>(gene);
  };
  while (j < end && reinterpret_cast<std::uintptr_t>(idx + j) % 32 != 0) step();
  __m256i carry = _mm256_set1_epi32(static_cast<int>(gene));
  __m128i mins = _mm_set1_epi16(-1);
  const __m256i last = _mm256_set1_epi32(7);
  for (; j + 16 <= end; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi + j));
    const __m128i g0 = _mm_unpacklo_epi8(l, h), g1 = _mm_unpackhi_epi8(l, h);  // sixteen u16 gaps
    mins = _mm_min_epu16(mins, _mm_min_epu16(g0, g1));
    __m256i a = _mm256_cvtepu16_epi32(g0), b = _mm256_cvtepu16_epi32(g1);
    // Prefix sums within each 128-bit lane, then the low lane's total carried into the high one.
    a = _mm256_add_epi32(a, _mm256_slli_si256(a, 4));
    b = _mm256_add_epi32(b, _mm256_slli_si256(b, 4));
    a = _mm256_add_epi32(a, _mm256_slli_si256(a, 8));
    b = _mm256_add_epi32(b, _mm256_slli_si256(b, 8));
    const __m256i ta = _mm256_shuffle_epi32(a, 0xFF), tb = _mm256_shuffle_epi32(b, 0xFF);
    a = _mm256_add_epi32(a, _mm256_permute2x128_si256(ta, ta, 0x08));
    b = _mm256_add_epi32(b, _mm256_permute2x128_si256(tb, tb, 0x08));
    // b continues a; both continue the previous step, whose carry costs one add per step.
    b = _mm256_add_epi32(b, _mm256_permutevar8x32_epi32(a, last));
    const __m256i total = _mm256_permutevar8x32_epi32(b, last);  // of the sixteen, off the chain
    a = _mm256_add_epi32(a, carry);
    b = _mm256_add_epi32(b, carry);
    carry = _mm256_add_epi32(carry, total);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j + 8), b);
  }
  gene = static_cast<std::uint32_t>(_mm256_cvtsi256_si32(carry));
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(mins, _mm_setzero_si128())));
  while (j < end) step();
  return zero == 0 && gene < n_genes;
}

// chunk_values_sse<true>, sixteen counts per step.
template <typename V>
__attribute__((target("avx2"))) inline bool chunk_values_avx2(const std::uint8_t* vlo, const std::uint8_t* vhi,
                                                              std::uint64_t n, V* val) noexcept {
  std::uint32_t zero = 0;
  std::uint64_t j = 0;
  const auto step = [&] {
    const std::uint32_t v = vlo[j] | (std::uint32_t{vhi[j]} << 8);
    zero |= static_cast<std::uint32_t>(v == 0);
    val[j++] = static_cast<V>(v);
  };
  while (j < n && reinterpret_cast<std::uintptr_t>(val + j) % 32 != 0) step();
  __m128i mins = _mm_set1_epi16(-1);
  for (; j + 16 <= n; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vlo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vhi + j));
    const __m128i g0 = _mm_unpacklo_epi8(l, h), g1 = _mm_unpackhi_epi8(l, h);
    mins = _mm_min_epu16(mins, _mm_min_epu16(g0, g1));
    const __m256i a = _mm256_cvtepu16_epi32(g0), b = _mm256_cvtepu16_epi32(g1);
    if constexpr (std::is_same_v<V, float>) {
      _mm256_stream_ps(val + j, _mm256_cvtepi32_ps(a));
      _mm256_stream_ps(val + j + 8, _mm256_cvtepi32_ps(b));
    } else {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(val + j), a);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(val + j + 8), b);
    }
  }
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(mins, _mm_setzero_si128())));
  while (j < n) step();
  return zero != 0;
}
// cell_genes16_sse<true>, sixteen nonzeros per step.
__attribute__((target("avx2"))) inline bool cell_genes16_avx2(const std::uint8_t* lo, const std::uint8_t* hi,
                                                              std::uint64_t s, std::uint64_t end, std::uint16_t* idx,
                                                              std::uint64_t n_genes) noexcept {
  std::uint32_t gene = lo[s] | (std::uint32_t{hi[s]} << 8);
  std::uint64_t total = gene;
  idx[s] = static_cast<std::uint16_t>(gene);
  std::uint64_t j = s + 1;
  std::uint32_t zero = 0;
  const auto step = [&] {
    const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
    zero |= static_cast<std::uint32_t>(gap == 0);
    gene += gap;
    total += gap;
    idx[j++] = static_cast<std::uint16_t>(gene);
  };
  while (j < end && reinterpret_cast<std::uintptr_t>(idx + j) % 32 != 0) step();
  const __m128i z = _mm_setzero_si128();
  __m256i carry = _mm256_set1_epi16(static_cast<short>(gene));
  __m128i mins = _mm_set1_epi16(-1), sum_lo = z, sum_hi = z;
  for (; j + 16 <= end; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi + j));
    sum_lo = _mm_add_epi64(sum_lo, _mm_sad_epu8(l, z));
    sum_hi = _mm_add_epi64(sum_hi, _mm_sad_epu8(h, z));
    const __m128i g0 = _mm_unpacklo_epi8(l, h), g1 = _mm_unpackhi_epi8(l, h);
    mins = _mm_min_epu16(mins, _mm_min_epu16(g0, g1));
    __m256i g = _mm256_inserti128_si256(_mm256_castsi128_si256(g0), g1, 1);
    g = _mm256_add_epi16(g, _mm256_slli_si256(g, 2));
    g = _mm256_add_epi16(g, _mm256_slli_si256(g, 4));
    g = _mm256_add_epi16(g, _mm256_slli_si256(g, 8));
    const __m256i t = _mm256_shuffle_epi32(_mm256_shufflehi_epi16(g, 0xFF), 0xFF);  // each lane's last
    g = _mm256_add_epi16(g, _mm256_permute2x128_si256(t, t, 0x08));
    const __m256i u = _mm256_shuffle_epi32(_mm256_shufflehi_epi16(g, 0xFF), 0xFF);
    const __m256i total = _mm256_permute2x128_si256(u, u, 0x11);  // word 15 everywhere
    g = _mm256_add_epi16(g, carry);
    carry = _mm256_add_epi16(carry, total);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j), g);
  }
  gene = static_cast<std::uint16_t>(_mm256_extract_epi16(carry, 0));
  zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(mins, z)));
  alignas(16) std::uint64_t a[2], b[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(a), sum_lo);
  _mm_store_si128(reinterpret_cast<__m128i*>(b), sum_hi);
  total += a[0] + a[1] + ((b[0] + b[1]) << 8);
  while (j < end) step();
  return zero == 0 && total < n_genes;
}
#endif

// The gene indices of cell positions [s, end) without gap exceptions; true when valid (see
// cell_genes_sse). `stream` (a chunk of at least kStreamNnz) selects non-temporal stores.
inline bool cell_genes(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end,
                       std::int32_t* idx, std::uint64_t n_genes, bool stream) noexcept {
  if (!stream) return cell_genes_sse<false>(lo, hi, s, end, idx, n_genes);
#if defined(TESSERA_CELLS_AVX2)
  if (end - s <= kAvx2CellMax && cpu_has_avx2()) return cell_genes_avx2(lo, hi, s, end, idx, n_genes);
#endif
  return cell_genes_sse<true>(lo, hi, s, end, idx, n_genes);
}

inline bool cell_genes(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end,
                       std::uint16_t* idx, std::uint64_t n_genes, bool stream) noexcept {
  if (!stream) return cell_genes16_sse<false>(lo, hi, s, end, idx, n_genes);
#if defined(TESSERA_CELLS_AVX2)
  if (cpu_has_avx2()) return cell_genes16_avx2(lo, hi, s, end, idx, n_genes);
#endif
  return cell_genes16_sse<true>(lo, hi, s, end, idx, n_genes);
}

// The n counts of a chunk; true when one is 0 (T21).
template <typename V>
bool chunk_values(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n, V* val, bool stream) noexcept {
  if (!stream) return chunk_values_sse<false>(vlo, vhi, n, val);
#if defined(TESSERA_CELLS_AVX2)
  if (cpu_has_avx2()) return chunk_values_avx2(vlo, vhi, n, val);
#endif
  return chunk_values_sse<true>(vlo, vhi, n, val);
}
inline bool chunk_values(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n, std::uint16_t* val,
                         bool stream) noexcept {
  return stream ? chunk_values16_sse<true>(vlo, vhi, n, val) : chunk_values16_sse<false>(vlo, vhi, n, val);
}

}  // namespace tessera::cells::detail
