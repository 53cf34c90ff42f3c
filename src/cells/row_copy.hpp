// Copying rows of a decoded tile into a batch (Dataset::get_batch): int32 rows, and narrow
// (uint16) rows widened on the way, with streaming stores for batches far larger than the caches.
// Internal to the cells module.
#pragma once

#include <cstddef>
#include <cstdint>

#include "decode_kernels.hpp"

namespace tessera::cells::detail {

// Batches above this size (indices and values) are written with streaming stores.
constexpr std::uint64_t kStreamBatchBytes = std::uint64_t{16} << 20;

// Copies one row of a decoded tile into a batch, converting the values to V. A batch of an
// epoch (~200 MB) is far larger than the caches, so with `stream` the row is written with
// non-temporal stores: the destination lines are not read in first (a third of the copy's
// memory traffic) and do not evict the decoded tile the next rows come from. The caller fences.
template <typename V>
inline void copy_row(const std::int32_t* idx, const std::int32_t* val, std::size_t len, std::int32_t* out_idx,
                     V* out_val, bool stream) {
#if defined(__SSE2__)
  if (stream) {
    std::size_t j = 0;
    // Scalar until the destinations are 16-byte aligned (both are when their offsets agree).
    const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; };
    for (; j < len && (misaligned(out_idx + j) || misaligned(out_val + j)); ++j) {
      out_idx[j] = idx[j];
      out_val[j] = static_cast<V>(val[j]);
    }
    if ((reinterpret_cast<std::uintptr_t>(out_idx + j) - reinterpret_cast<std::uintptr_t>(out_val + j)) % 16 == 0) {
      // Every load of a step comes before its stores. The four arrays are large allocations at
      // the same offset within a page, so a row copied to its own position (a tile read in
      // order) puts val[j] at the same address bits 0-11 as out_idx[j]: a load issued after
      // that store waits for it (4K aliasing), which made in-order gathers twice as slow.
      for (; j + 8 <= len; j += 8) {
        const __m128i i0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + j));
        const __m128i i1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(idx + j + 4));
        const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(val + j));
        const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(val + j + 4));
        detail::store128<true>(out_idx + j, i0);
        detail::store128<true>(out_idx + j + 4, i1);
        detail::store_counts<true>(out_val + j, v0);
        detail::store_counts<true>(out_val + j + 4, v1);
      }
    }
    idx += j, val += j, out_idx += j, out_val += j, len -= j;
  }
#else
  (void)stream;
#endif
  if (len == 0) return;  // an empty row may come with null pointers, which memcpy must not get
  std::memcpy(out_idx, idx, len * sizeof(std::int32_t));
  if constexpr (std::is_same_v<V, std::int32_t>) std::memcpy(out_val, val, len * sizeof(std::int32_t));
  else std::transform(val, val + len, out_val, [](std::int32_t v) { return static_cast<V>(v); });
}

#if defined(TESSERA_CELLS_AVX2)
// widen_row's streamed loop with AVX2: sixteen nonzeros, four 32-byte stores per step. Both
// destinations must be 32-byte aligned.
template <typename V>
__attribute__((target("avx2"))) std::size_t widen_avx2(const std::uint16_t* genes, const std::uint16_t* counts,
                                                       std::size_t j, std::size_t len, std::int32_t* out_idx,
                                                       V* out_val) {
  for (; j + 16 <= len; j += 16) {
    const __m128i g0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j));
    const __m128i g1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j + 8));
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j));
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j + 8));
    detail::stream_counts256(out_idx + j, _mm256_cvtepu16_epi32(g0));
    detail::stream_counts256(out_idx + j + 8, _mm256_cvtepu16_epi32(g1));
    detail::stream_counts256(out_val + j, _mm256_cvtepu16_epi32(c0));
    detail::stream_counts256(out_val + j + 8, _mm256_cvtepu16_epi32(c1));
  }
  return j;
}
#endif

// copy_row for a narrow decoded tile: widens the uint16 genes and counts to int32 and V.
template <typename V>
inline void widen_row(const std::uint16_t* genes, const std::uint16_t* counts, std::size_t len, std::int32_t* out_idx,
                      V* out_val, bool stream) {
  std::size_t j = 0;
#if defined(__SSE2__)
  if (stream) {
#if defined(TESSERA_CELLS_AVX2)
    const bool avx2 = detail::cpu_has_avx2();
    const std::size_t align = avx2 ? 32 : 16;
#else
    const std::size_t align = 16;
#endif
    const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % align != 0; };
    for (std::size_t k = 0; k < align / 4 && j < len && (misaligned(out_idx + j) || misaligned(out_val + j));
         ++k, ++j) {
      out_idx[j] = genes[j];
      out_val[j] = static_cast<V>(counts[j]);
    }
#if defined(TESSERA_CELLS_AVX2)
    if (avx2 && !misaligned(out_idx + j) && !misaligned(out_val + j))
      j = widen_avx2<V>(genes, counts, j, len, out_idx, out_val);
#endif
    if ((reinterpret_cast<std::uintptr_t>(out_idx + j) - reinterpret_cast<std::uintptr_t>(out_val + j)) % 16 == 0 &&
        reinterpret_cast<std::uintptr_t>(out_idx + j) % 16 == 0) {
      const __m128i z = _mm_setzero_si128();
      for (; j + 8 <= len; j += 8) {
        const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(genes + j));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j));
        detail::store128<true>(out_idx + j, _mm_unpacklo_epi16(g, z));
        detail::store128<true>(out_idx + j + 4, _mm_unpackhi_epi16(g, z));
        detail::store_counts<true>(out_val + j, _mm_unpacklo_epi16(c, z));
        detail::store_counts<true>(out_val + j + 4, _mm_unpackhi_epi16(c, z));
      }
    }
  }
#else
  (void)stream;
#endif
  for (; j < len; ++j) {  // the compiler vectorizes this loop itself
    out_idx[j] = genes[j];
    out_val[j] = static_cast<V>(counts[j]);
  }
}

}  // namespace tessera::cells::detail
