// The inner loops of tile decoding (tile_decode.cpp): un-planing a chunk's byte planes into
// gene indices and counts, as int32 (Tile::decode) or uint16 (Tile::decode_narrow). Each loop has
// a portable SSE2 form and, on x86-64 CPUs that have them, AVX2 and (for the narrow form) AVX-512
// forms chosen at run time; all give identical output and verdicts.
//
// The big loops write with non-temporal stores: a decoded tile (4 or 8 bytes per nonzero) is far
// larger than the caches, so reading its lines in before overwriting them would only add memory
// traffic. They are the loops that set the decoder's speed against bare zstd (docs/performance.md).
// They are bound by instruction throughput, so every carry costs one add per step, off the chain
// of shuffles that forms the in-register prefix sums.
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

// Chunks of at least this many nonzeros write their output with non-temporal stores: the output
// lines are not read in before they are overwritten, which saves a third of the memory traffic
// of un-planing. Small chunks, whose output stays in cache, use ordinary stores.
inline constexpr std::uint64_t kStreamNnz = std::uint64_t{1} << 16;

// The scalar walk every gene loop shares for its prologue (up to an aligned output) and its tail:
// the running gene index, the exact 64-bit total of the gaps, and whether a gap after the first
// was 0. Indices are written as I (int32, or uint16 in the narrow form, where they wrap mod 2^16
// and only `total` is exact).
template <typename I>
struct GeneWalk {
  const std::uint8_t* lo;
  const std::uint8_t* hi;
  I* idx;
  std::uint64_t j;
  std::uint32_t gene;
  std::uint64_t total;
  std::uint32_t zero = 0;

  GeneWalk(const std::uint8_t* lo_, const std::uint8_t* hi_, std::uint64_t s, I* idx_) noexcept
      : lo(lo_), hi(hi_), idx(idx_), j(s + 1), gene(lo_[s] | (std::uint32_t{hi_[s]} << 8)), total(gene) {
    idx[s] = static_cast<I>(gene);
  }
  void step() noexcept {
    const std::uint32_t gap = lo[j] | (std::uint32_t{hi[j]} << 8);
    zero |= static_cast<std::uint32_t>(gap == 0);
    gene += gap;
    total += gap;
    idx[j++] = static_cast<I>(gene);
  }
  void align(std::uint64_t end, std::uintptr_t bytes) noexcept {
    while (j < end && reinterpret_cast<std::uintptr_t>(idx + j) % bytes != 0) step();
  }
  // Finishes the cell: true when every gap after the first is nonzero and the last index is
  // below n_genes (so no running sum wrapped, as indices only grow).
  bool finish(std::uint64_t end, std::uint64_t n_genes) noexcept {
    while (j < end) step();
    return zero == 0 && total < n_genes;
  }
};

// The scalar walk of the count loops (prologue and tail): counts written as V, and whether one
// was 0.
template <typename V>
struct CountWalk {
  const std::uint8_t* vlo;
  const std::uint8_t* vhi;
  V* val;
  std::uint64_t j = 0;
  std::uint32_t zero = 0;

  void step() noexcept {
    const std::uint32_t v = vlo[j] | (std::uint32_t{vhi[j]} << 8);
    zero |= static_cast<std::uint32_t>(v == 0);
    val[j++] = static_cast<V>(v);
  }
  void align(std::uint64_t n, std::uintptr_t bytes) noexcept {
    while (j < n && reinterpret_cast<std::uintptr_t>(val + j) % bytes != 0) step();
  }
  // Finishes the chunk: true when a count was 0 (T21).
  bool finish(std::uint64_t n) noexcept {
    while (j < n) step();
    return zero != 0;
  }
};

#if defined(__SSE2__)
template <bool Stream>
inline void store128(void* p, __m128i v) noexcept {
  if constexpr (Stream) _mm_stream_si128(static_cast<__m128i*>(p), v);
  else _mm_storeu_si128(static_cast<__m128i*>(p), v);
}

// Four counts in 32-bit lanes, stored as V (int32 or float).
template <bool Stream, typename V>
inline void store_counts(V* p, __m128i v) noexcept {
  if constexpr (std::is_same_v<V, float>) {
    if constexpr (Stream) _mm_stream_ps(p, _mm_cvtepi32_ps(v));
    else _mm_storeu_ps(p, _mm_cvtepi32_ps(v));
  } else {
    store128<Stream>(p, v);
  }
}
#endif

// The gene indices of one cell without gap exceptions, positions [s, end) of the planes: the
// running sum of the stored gaps, un-planed and summed in the same pass; true when valid (see
// GeneWalk::finish). The scalar sum is a chain of dependent adds, about as slow as zstd itself
// per byte; with SSE2 eight gaps at a time are summed in registers (32-bit lanes for int32
// indices, 16-bit lanes for uint16) with a carried total. Lanes may wrap (past 2^32, or 2^16 in
// the narrow form, which needs n_genes <= 65536), so the exact total of the gaps is summed
// beside them with psadbw and checked against n_genes: an index that is accepted is exact. With
// `Stream` the output is written with aligned non-temporal stores.
template <bool Stream, typename I>
inline bool cell_genes_sse(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end, I* idx,
                           std::uint64_t n_genes) noexcept {
  GeneWalk<I> w(lo, hi, s, idx);
#if defined(__SSE2__)
  if constexpr (Stream) w.align(end, 16);
  std::uint64_t j = w.j;
  const __m128i z = _mm_setzero_si128();
  __m128i carry =
      sizeof(I) == 4 ? _mm_set1_epi32(static_cast<int>(w.gene)) : _mm_set1_epi16(static_cast<short>(w.gene));
  __m128i zeros = z, sums = z;  // sums: 64-bit lanes, the low bytes' and the high bytes' totals
  for (; j + 8 <= end; j += 8) {
    const __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi + j));
    sums = _mm_add_epi64(sums, _mm_sad_epu8(_mm_unpacklo_epi64(l, h), z));
    __m128i g = _mm_unpacklo_epi8(l, h);  // eight u16 gaps
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi16(g, z));
    if constexpr (sizeof(I) == 4) {
      __m128i a = _mm_unpacklo_epi16(g, z), b = _mm_unpackhi_epi16(g, z);
      a = _mm_add_epi32(a, _mm_slli_si128(a, 4));
      b = _mm_add_epi32(b, _mm_slli_si128(b, 4));
      a = _mm_add_epi32(a, _mm_slli_si128(a, 8));
      b = _mm_add_epi32(b, _mm_slli_si128(b, 8));
      b = _mm_add_epi32(b, _mm_shuffle_epi32(a, 0xFF));  // b continues a
      const __m128i total = _mm_shuffle_epi32(b, 0xFF);
      store128<Stream>(idx + j, _mm_add_epi32(a, carry));
      store128<Stream>(idx + j + 4, _mm_add_epi32(b, carry));
      carry = _mm_add_epi32(carry, total);
    } else {
      g = _mm_add_epi16(g, _mm_slli_si128(g, 2));
      g = _mm_add_epi16(g, _mm_slli_si128(g, 4));
      g = _mm_add_epi16(g, _mm_slli_si128(g, 8));
      const __m128i total = _mm_shuffle_epi32(_mm_shufflehi_epi16(g, 0xFF), 0xFF);  // word 7 everywhere
      store128<Stream>(idx + j, _mm_add_epi16(g, carry));
      carry = _mm_add_epi16(carry, total);
    }
  }
  w.j = j;
  w.gene = sizeof(I) == 4 ? static_cast<std::uint32_t>(_mm_cvtsi128_si32(carry))
                          : static_cast<std::uint32_t>(_mm_extract_epi16(carry, 0));
  w.zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
  alignas(16) std::uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), sums);
  w.total += lanes[0] + (lanes[1] << 8);
#endif
  return w.finish(end, n_genes);
}

// The n counts of a chunk as V (int32, float, or uint16 in the narrow form); true when one is 0
// (T21).
template <bool Stream, typename V>
inline bool chunk_values_sse(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n, V* val) noexcept {
  CountWalk<V> w{vlo, vhi, val};
#if defined(__SSE2__)
  if constexpr (Stream) w.align(n, 16);
  std::uint64_t j = w.j;
  const __m128i z = _mm_setzero_si128();
  __m128i zeros = z;
  for (; j + 8 <= n; j += 8) {
    const __m128i g = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(vlo + j)),
                                        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(vhi + j)));
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi16(g, z));
    if constexpr (sizeof(V) == 2) {
      store128<Stream>(val + j, g);
    } else {
      store_counts<Stream>(val + j, _mm_unpacklo_epi16(g, z));
      store_counts<Stream>(val + j + 4, _mm_unpackhi_epi16(g, z));
    }
  }
  w.j = j;
  w.zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(zeros));
#endif
  return w.finish(n);
}

#if defined(TESSERA_CELLS_AVX2)
// The AVX2 forms stream 32-byte stores and work on 16 nonzeros per step.

inline bool cpu_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Eight 32-bit lanes (indices or counts), streamed as V (int32 or float) to a 32-byte aligned
// address.
template <typename V>
__attribute__((target("avx2"))) inline void stream_counts256(V* p, __m256i v) noexcept {
  if constexpr (std::is_same_v<V, float>) _mm256_stream_ps(p, _mm256_cvtepi32_ps(v));
  else _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
}

// The int32 form handles cells of at most kAvx2CellMax nonzeros only: then the 32-bit running sum
// cannot wrap (65,536 gaps of at most 65,535 sum below 2^32), so the last index is the exact
// total and no psadbw sum is needed. The narrow form sums the exact total as the SSE2 one does.
inline constexpr std::uint64_t kAvx2CellMax = std::uint64_t{1} << 16;

// cell_genes_sse<true, I>, sixteen nonzeros per step. Zero gaps are found with a running minimum.
template <typename I>
__attribute__((target("avx2"))) inline bool cell_genes_avx2(const std::uint8_t* lo, const std::uint8_t* hi,
                                                            std::uint64_t s, std::uint64_t end, I* idx,
                                                            std::uint64_t n_genes) noexcept {
  GeneWalk<I> w(lo, hi, s, idx);
  w.align(end, 32);
  std::uint64_t j = w.j;
  const std::uint32_t gene_before = w.gene;
  const __m128i z = _mm_setzero_si128();
  __m256i carry =
      sizeof(I) == 4 ? _mm256_set1_epi32(static_cast<int>(w.gene)) : _mm256_set1_epi16(static_cast<short>(w.gene));
  __m128i mins = _mm_set1_epi16(-1), sum_lo = z, sum_hi = z;
  const __m256i last = _mm256_set1_epi32(7);
  for (; j + 16 <= end; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi + j));
    const __m128i g0 = _mm_unpacklo_epi8(l, h), g1 = _mm_unpackhi_epi8(l, h);  // sixteen u16 gaps
    mins = _mm_min_epu16(mins, _mm_min_epu16(g0, g1));
    if constexpr (sizeof(I) == 4) {
      __m256i a = _mm256_cvtepu16_epi32(g0), b = _mm256_cvtepu16_epi32(g1);
      // Prefix sums within each 128-bit lane, then the low lane's total carried into the high one.
      a = _mm256_add_epi32(a, _mm256_slli_si256(a, 4));
      b = _mm256_add_epi32(b, _mm256_slli_si256(b, 4));
      a = _mm256_add_epi32(a, _mm256_slli_si256(a, 8));
      b = _mm256_add_epi32(b, _mm256_slli_si256(b, 8));
      const __m256i ta = _mm256_shuffle_epi32(a, 0xFF), tb = _mm256_shuffle_epi32(b, 0xFF);
      a = _mm256_add_epi32(a, _mm256_permute2x128_si256(ta, ta, 0x08));
      b = _mm256_add_epi32(b, _mm256_permute2x128_si256(tb, tb, 0x08));
      b = _mm256_add_epi32(b, _mm256_permutevar8x32_epi32(a, last));  // b continues a
      const __m256i total = _mm256_permutevar8x32_epi32(b, last);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j), _mm256_add_epi32(a, carry));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j + 8), _mm256_add_epi32(b, carry));
      carry = _mm256_add_epi32(carry, total);
    } else {
      sum_lo = _mm_add_epi64(sum_lo, _mm_sad_epu8(l, z));
      sum_hi = _mm_add_epi64(sum_hi, _mm_sad_epu8(h, z));
      __m256i g = _mm256_inserti128_si256(_mm256_castsi128_si256(g0), g1, 1);
      g = _mm256_add_epi16(g, _mm256_slli_si256(g, 2));
      g = _mm256_add_epi16(g, _mm256_slli_si256(g, 4));
      g = _mm256_add_epi16(g, _mm256_slli_si256(g, 8));
      const __m256i t = _mm256_shuffle_epi32(_mm256_shufflehi_epi16(g, 0xFF), 0xFF);  // each lane's last
      g = _mm256_add_epi16(g, _mm256_permute2x128_si256(t, t, 0x08));
      const __m256i u = _mm256_shuffle_epi32(_mm256_shufflehi_epi16(g, 0xFF), 0xFF);
      const __m256i total = _mm256_permute2x128_si256(u, u, 0x11);  // word 15 everywhere
      _mm256_stream_si256(reinterpret_cast<__m256i*>(idx + j), _mm256_add_epi16(g, carry));
      carry = _mm256_add_epi16(carry, total);
    }
  }
  w.j = j;
  w.zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(mins, z)));
  if constexpr (sizeof(I) == 4) {
    w.gene = static_cast<std::uint32_t>(_mm256_cvtsi256_si32(carry));
    w.total += w.gene - gene_before;  // exact: no wrap within kAvx2CellMax nonzeros
  } else {
    w.gene = static_cast<std::uint16_t>(_mm256_extract_epi16(carry, 0));
    alignas(16) std::uint64_t a[2], b[2];
    _mm_store_si128(reinterpret_cast<__m128i*>(a), sum_lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(b), sum_hi);
    w.total += a[0] + a[1] + ((b[0] + b[1]) << 8);
  }
  return w.finish(end, n_genes);
}

// chunk_values_sse<true, V> for int32 or float, sixteen counts per step.
template <typename V>
__attribute__((target("avx2"))) inline bool chunk_values_avx2(const std::uint8_t* vlo, const std::uint8_t* vhi,
                                                              std::uint64_t n, V* val) noexcept {
  CountWalk<V> w{vlo, vhi, val};
  w.align(n, 32);
  std::uint64_t j = w.j;
  __m128i mins = _mm_set1_epi16(-1);
  for (; j + 16 <= n; j += 16) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vlo + j));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vhi + j));
    const __m128i g0 = _mm_unpacklo_epi8(l, h), g1 = _mm_unpackhi_epi8(l, h);
    mins = _mm_min_epu16(mins, _mm_min_epu16(g0, g1));
    stream_counts256(val + j, _mm256_cvtepu16_epi32(g0));
    stream_counts256(val + j + 8, _mm256_cvtepu16_epi32(g1));
  }
  w.j = j;
  w.zero |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(mins, _mm_setzero_si128())));
  return w.finish(n);
}

// The AVX-512 forms of the narrow (uint16) loops: 32 nonzeros per step, the two planes
// interleaved by one byte permute (AVX512-VBMI).
#define TESSERA_CELLS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))

inline bool cpu_has_avx512() noexcept {
  static const bool has = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
  return has;
}

// GCC 12's plain forms of these intrinsics (insert, permute) start from an "undefined" register and
// warn that it is uninitialized; the zero-masked forms used here compute the same.

// 32 low bytes, then 32 high bytes.
TESSERA_CELLS_AVX512 inline __m512i planes512(__m256i l, __m256i h) noexcept {
  return _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(l), h, 1);
}

// 32 u16 words from planes512's bytes: word i = l[i] | h[i] << 8.
TESSERA_CELLS_AVX512 inline __m512i interleave_planes512(__m512i planes) noexcept {
  alignas(64) static constexpr std::uint8_t kOrder[64] = {
      0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
      11, 43, 12, 44, 13, 45, 14, 46, 15, 47, 16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53,
      22, 54, 23, 55, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  return _mm512_maskz_permutexvar_epi8(~__mmask64{0}, _mm512_load_si512(kOrder), planes);
}

template <bool Stream>
TESSERA_CELLS_AVX512 inline void store512(void* p, __m512i v) noexcept {
  if constexpr (Stream) _mm512_stream_si512(static_cast<__m512i*>(p), v);
  else _mm512_store_si512(p, v);
}

// cell_genes_sse for uint16 indices, 32 nonzeros per step (64-byte aligned stores). The prefix sum
// runs within each 128-bit lane, then carries lane totals across the four lanes in two steps (a
// lane takes the last word of the lane before it, then of the lane two before). The exact total
// is summed beside it with psadbw, as in the other narrow forms.
template <bool Stream>
TESSERA_CELLS_AVX512 inline bool cell_genes_avx512(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s,
                                                   std::uint64_t end, std::uint16_t* idx,
                                                   std::uint64_t n_genes) noexcept {
  GeneWalk<std::uint16_t> w(lo, hi, s, idx);
  w.align(end, 64);
  std::uint64_t j = w.j;
  const __m512i z = _mm512_setzero_si512();
  const __m512i lane_before = _mm512_set_epi16(23, 23, 23, 23, 23, 23, 23, 23, 15, 15, 15, 15, 15, 15, 15, 15, 7, 7, 7,
                                               7, 7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i lanes_two_before = _mm512_set_epi16(15, 15, 15, 15, 15, 15, 15, 15, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0,
                                                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i last = _mm512_set1_epi16(31);
  __m512i carry = _mm512_set1_epi16(static_cast<short>(w.gene)), sums = z;
  __mmask32 zeros = 0;
  for (; j + 32 <= end; j += 32) {
    const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo + j));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi + j));
    const __m512i lh = planes512(l, h);
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(lh, z));
    __m512i g = interleave_planes512(lh);
    zeros |= _mm512_testn_epi16_mask(g, g);
    g = _mm512_add_epi16(g, _mm512_bslli_epi128(g, 2));
    g = _mm512_add_epi16(g, _mm512_bslli_epi128(g, 4));
    g = _mm512_add_epi16(g, _mm512_bslli_epi128(g, 8));
    g = _mm512_add_epi16(g, _mm512_maskz_permutexvar_epi16(0xFFFFFF00u, lane_before, g));
    g = _mm512_add_epi16(g, _mm512_maskz_permutexvar_epi16(0xFFFF0000u, lanes_two_before, g));
    store512<Stream>(idx + j, _mm512_add_epi16(g, carry));
    carry = _mm512_add_epi16(carry, _mm512_maskz_permutexvar_epi16(~__mmask32{0}, last, g));
  }
  w.j = j;
  w.gene = static_cast<std::uint16_t>(_mm512_cvtsi512_si32(carry));
  w.zero |= static_cast<std::uint32_t>(zeros != 0);
  alignas(64) std::uint64_t lanes[8];  // four sums of low bytes, then four of high bytes
  _mm512_store_si512(lanes, sums);
  w.total += lanes[0] + lanes[1] + lanes[2] + lanes[3] + ((lanes[4] + lanes[5] + lanes[6] + lanes[7]) << 8);
  return w.finish(end, n_genes);
}

// chunk_values_sse for uint16 counts, 32 per step.
template <bool Stream>
TESSERA_CELLS_AVX512 inline bool chunk_values_avx512(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n,
                                                     std::uint16_t* val) noexcept {
  CountWalk<std::uint16_t> w{vlo, vhi, val};
  w.align(n, 64);
  std::uint64_t j = w.j;
  __mmask32 zeros = 0;
  for (; j + 32 <= n; j += 32) {
    const __m512i v = interleave_planes512(planes512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vlo + j)),
                                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vhi + j))));
    zeros |= _mm512_testn_epi16_mask(v, v);
    store512<Stream>(val + j, v);
  }
  w.j = j;
  w.zero |= static_cast<std::uint32_t>(zeros != 0);
  return w.finish(n);
}
#endif

// The gene indices of cell positions [s, end) without gap exceptions; true when valid (see
// cell_genes_sse). `stream` (a chunk of at least kStreamNnz) selects non-temporal stores.
template <typename I>
inline bool cell_genes(const std::uint8_t* lo, const std::uint8_t* hi, std::uint64_t s, std::uint64_t end, I* idx,
                       std::uint64_t n_genes, bool stream) noexcept {
#if defined(TESSERA_CELLS_AVX2)
  if constexpr (sizeof(I) == 2)
    if (cpu_has_avx512())
      return stream ? cell_genes_avx512<true>(lo, hi, s, end, idx, n_genes)
                    : cell_genes_avx512<false>(lo, hi, s, end, idx, n_genes);
#endif
  if (!stream) return cell_genes_sse<false>(lo, hi, s, end, idx, n_genes);
#if defined(TESSERA_CELLS_AVX2)
  if ((sizeof(I) == 2 || end - s <= kAvx2CellMax) && cpu_has_avx2())
    return cell_genes_avx2(lo, hi, s, end, idx, n_genes);
#endif
  return cell_genes_sse<true>(lo, hi, s, end, idx, n_genes);
}

// The n counts of a chunk; true when one is 0 (T21).
template <typename V>
inline bool chunk_values(const std::uint8_t* vlo, const std::uint8_t* vhi, std::uint64_t n, V* val,
                         bool stream) noexcept {
#if defined(TESSERA_CELLS_AVX2)
  if constexpr (sizeof(V) == 2)
    if (cpu_has_avx512())
      return stream ? chunk_values_avx512<true>(vlo, vhi, n, val) : chunk_values_avx512<false>(vlo, vhi, n, val);
#endif
  if (!stream) return chunk_values_sse<false>(vlo, vhi, n, val);
#if defined(TESSERA_CELLS_AVX2)
  if constexpr (sizeof(V) == 4)
    if (cpu_has_avx2()) return chunk_values_avx2(vlo, vhi, n, val);
#endif
  return chunk_values_sse<true>(vlo, vhi, n, val);
}

}  // namespace tessera::cells::detail
