// The accumulators of the streaming folds (query_fold_kernels.hpp): one per family of ops, each
// with a Cell (identity by default construction), add(cell, x, fiber_index), run forms for runs
// that stay in one cell or step through cells, and merge(a, b) for b folded after a. Every form
// of an accumulator performs the same IEEE operations in the same order per cell, so which form
// the scheduler picks never changes a result bit.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "query_internal.hpp"

namespace tessera::tet::qe::fold {

template <typename T>
inline double at(const std::byte* p, std::uint64_t j, std::uint64_t stride) {
  constexpr std::size_t es = std::is_same_v<T, F16> ? 2 : sizeof(T);
  return load_f64<T>(p + j * stride * es);
}

enum class SumKind { Plain, Abs, Square };

#if defined(__SSE2__)
// Two f64 lanes of f32 or f64 elements p[0..2) and p[2..4) (unaligned loads).
template <typename T>
inline void load4_f64(const std::byte* p, __m128d& x01, __m128d& x23) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    const __m128 x = _mm_loadu_ps(reinterpret_cast<const float*>(p));
    x01 = _mm_cvtps_pd(x);
    x23 = _mm_cvtps_pd(_mm_movehl_ps(x, x));
  } else {
    x01 = _mm_loadu_pd(reinterpret_cast<const double*>(p));
    x23 = _mm_loadu_pd(reinterpret_cast<const double*>(p) + 2);
  }
}
template <typename T>
inline constexpr bool kSimdSum = std::is_same_v<T, float> || std::is_same_v<T, double>;
#endif

template <SumKind K>
struct SumAcc {
  struct Cell {
    double s = 0;
  };
  static double term(double x) {
    if constexpr (K == SumKind::Abs) return std::fabs(x);
    else if constexpr (K == SumKind::Square) return x * x;
    else return x;
  }
#if defined(__SSE2__)
  // term() on both lanes, bit for bit: |x| clears the sign bit, x² is one IEEE product.
  static __m128d term(__m128d x) {
    if constexpr (K == SumKind::Abs) return _mm_andnot_pd(_mm_set1_pd(-0.0), x);
    else if constexpr (K == SumKind::Square) return _mm_mul_pd(x, x);
    else return x;
  }
#endif
  static void add(Cell& c, double x, std::uint64_t) { c.s += term(x); }
  // The sums of R runs of n elements each, computed side by side. A run sums in four lanes
  // (lane i takes its elements j ≡ i mod 4, in order; the tail goes to lane 0) and returns
  // (l0 + l1) + (l2 + l3): faster than one dependency chain, and a fixed order. The SIMD loop
  // keeps lanes 0–1 and 2–3 in two registers and adds exactly what the scalar loop would; R > 1
  // only overlaps independent chains, so every run's sum is the same as on its own.
  //
  // Each run's loads are prefetched kSumPrefetchAhead bytes ahead. A whole-file fold reads runs of
  // a few KiB (a row of a chunk: 4 KiB for 1,024 f32), two at a time, each usually in a page of
  // its own; the hardware prefetchers stop at page boundaries, so every run started with misses.
  // 8 KiB ahead is the next pair of rows at the same offset when rows lie back to back, and
  // further along the same run when runs are long. Over a mapped 2 GiB file this cut the fold's
  // time by a sixth; from pread copies it gains a little. A prefetch never faults, and the sums
  // are unchanged.
  static constexpr std::size_t kSumPrefetchAhead = 8192;
  template <typename T, std::size_t R>
  static void run_sums(const std::byte* const* p, std::uint64_t n, std::uint64_t stride, double* out) {
    double l[R][4] = {};
    std::uint64_t j = 0;
#if defined(__SSE2__)
    if constexpr (kSimdSum<T>) {
      if (stride == 1 && n >= 4) {
        __m128d a[R][2], x01, x23;
        for (std::size_t r = 0; r < R; ++r) a[r][0] = a[r][1] = _mm_setzero_pd();
        for (; j + 4 <= n; j += 4)
          for (std::size_t r = 0; r < R; ++r) {
            if ((j * sizeof(T)) % 64 == 0)  // once per cache line (see kSumPrefetchAhead)
              _mm_prefetch(reinterpret_cast<const char*>(p[r] + j * sizeof(T)) + kSumPrefetchAhead, _MM_HINT_T0);
            load4_f64<T>(p[r] + j * sizeof(T), x01, x23);
            a[r][0] = _mm_add_pd(a[r][0], term(x01));
            a[r][1] = _mm_add_pd(a[r][1], term(x23));
          }
        for (std::size_t r = 0; r < R; ++r) {
          _mm_storeu_pd(l[r], a[r][0]);
          _mm_storeu_pd(l[r] + 2, a[r][1]);
        }
      }
    }
#endif
    for (; j + 4 <= n; j += 4)
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t i = 0; i < 4; ++i) l[r][i] += term(at<T>(p[r], j + i, stride));
    for (; j < n; ++j)
      for (std::size_t r = 0; r < R; ++r) l[r][0] += term(at<T>(p[r], j, stride));
    for (std::size_t r = 0; r < R; ++r) out[r] = (l[r][0] + l[r][1]) + (l[r][2] + l[r][3]);
  }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t,
                      std::uint64_t) {
    double s;
    run_sums<T, 1>(&p, n, stride, &s);
    c.s += s;
  }
  // Two runs of equal length, each into its own cell (possibly the same one): a's sum is added
  // before b's, as two add_run calls would.
  template <typename T>
  static void add_run_pair(Cell& ca, const std::byte* a, Cell& cb, const std::byte* b, std::uint64_t n,
                           std::uint64_t stride) {
    const std::byte* p[2] = {a, b};
    double s[2];
    run_sums<T, 2>(p, n, stride, s);
    ca.s += s[0];
    cb.s += s[1];
  }
  // A run whose consecutive elements go to cells c[0], c[cell_step], …: each cell gets exactly
  // add()'s one addition, whichever loop does it.
  template <typename T>
  static void add_cells(Cell* c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t cell_step) {
    std::uint64_t j = 0;
#if defined(__SSE2__)
    static_assert(sizeof(Cell) == sizeof(double));
    if constexpr (kSimdSum<T>) {
      if (stride == 1 && cell_step == 1) {
        double* s = &c[0].s;
        __m128d x01, x23;
        for (; j + 4 <= n; j += 4) {
          load4_f64<T>(p + j * sizeof(T), x01, x23);
          _mm_storeu_pd(s + j, _mm_add_pd(_mm_loadu_pd(s + j), term(x01)));
          _mm_storeu_pd(s + j + 2, _mm_add_pd(_mm_loadu_pd(s + j + 2), term(x23)));
        }
      }
    }
#endif
    for (; j < n; ++j) c[j * cell_step].s += term(at<T>(p, j, stride));
  }
  static void merge(Cell& a, const Cell& b) { a.s += b.s; }
};

struct ProdAcc {
  struct Cell {
    double p = 1;
  };
  static void add(Cell& c, double x, std::uint64_t) { c.p *= x; }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t,
                      std::uint64_t) {
    for (std::uint64_t j = 0; j < n; ++j) c.p *= at<T>(p, j, stride);
  }
  static void merge(Cell& a, const Cell& b) { a.p *= b.p; }
};

// Mean and M2 (Chan et al.): two passes inside a run, pairwise merges between runs and units.
template <bool SkipNan>
struct VarAcc {
  struct Cell {
    double n = 0, mean = 0, m2 = 0;
  };
  static void add(Cell& c, double x, std::uint64_t) {
    if (SkipNan && std::isnan(x)) return;
    c.n += 1;
    const double d = x - c.mean;
    c.mean += d / c.n;
    c.m2 += d * (x - c.mean);
  }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t,
                      std::uint64_t) {
    Cell r;
    double s = 0;
    for (std::uint64_t j = 0; j < n; ++j) {
      const double x = at<T>(p, j, stride);
      if (SkipNan && std::isnan(x)) continue;
      s += x;
      r.n += 1;
    }
    if (r.n == 0) return;
    r.mean = s / r.n;
    for (std::uint64_t j = 0; j < n; ++j) {
      const double x = at<T>(p, j, stride);
      if (SkipNan && std::isnan(x)) continue;
      r.m2 += (x - r.mean) * (x - r.mean);
    }
    merge(c, r);
  }
  static void merge(Cell& a, const Cell& b) {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const double n = a.n + b.n;
    const double d = b.mean - a.mean;
    a.mean += d * (b.n / n);
    a.m2 += b.m2 + d * d * (a.n * b.n / n);
    a.n = n;
  }
};

// Extreme value with the first index; NaN wins (numpy semantics, first NaN's index).
template <bool IsMax>
struct ExtremeAcc {
  struct Cell {
    double v = 0;
    std::uint64_t idx = 0;
    bool seen = false;
    bool nan = false;
    std::uint64_t nan_idx = 0;
  };
  static void add(Cell& c, double x, std::uint64_t i) {
    if (std::isnan(x)) {
      if (!c.nan || i < c.nan_idx) c.nan_idx = i;
      c.nan = true;
      return;
    }
    const bool better = !c.seen || (IsMax ? x > c.v : x < c.v) || (x == c.v && i < c.idx);
    if (better) {
      c.v = x;
      c.idx = i;
      c.seen = true;
    }
  }
  template <typename T>
  static void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t fiber,
                      std::uint64_t fiber_step) {
    for (std::uint64_t j = 0; j < n; ++j) add(c, at<T>(p, j, stride), fiber + j * fiber_step);
  }
  static void merge(Cell& a, const Cell& b) {
    if (b.nan && (!a.nan || b.nan_idx < a.nan_idx)) {
      a.nan = true;
      a.nan_idx = b.nan_idx;
    }
    if (b.seen) add_value(a, b.v, b.idx);
  }
  static void add_value(Cell& c, double x, std::uint64_t i) {
    const bool better = !c.seen || (IsMax ? x > c.v : x < c.v) || (x == c.v && i < c.idx);
    if (better) {
      c.v = x;
      c.idx = i;
      c.seen = true;
    }
  }
};

enum class CountKind { Nan, Inf, NonFinite, Fill, None };

template <CountKind K>
struct CountAcc {
  struct Cell {
    std::uint64_t c = 0;
  };
  double fill = 0;  // NullCount: the resolved fill value
  bool hit(double x) const {
    if constexpr (K == CountKind::Nan) return std::isnan(x);
    else if constexpr (K == CountKind::Inf) return std::isinf(x);
    else if constexpr (K == CountKind::NonFinite) return !std::isfinite(x);
    else if constexpr (K == CountKind::Fill)
      return std::isnan(fill) ? std::isnan(x) : std::memcmp(&x, &fill, sizeof x) == 0;
    else return false;
  }
  void add(Cell& c, double x, std::uint64_t) const { c.c += hit(x) ? 1 : 0; }
  template <typename T>
  void add_run(Cell& c, const std::byte* p, std::uint64_t n, std::uint64_t stride, std::uint64_t, std::uint64_t) const {
    if constexpr (K == CountKind::None) return;
    if constexpr (!std::is_floating_point_v<T> && !std::is_same_v<T, F16> && K != CountKind::Fill)
      return;  // integers are finite
    for (std::uint64_t j = 0; j < n; ++j) c.c += hit(at<T>(p, j, stride)) ? 1 : 0;
  }
  static void merge(Cell& a, const Cell& b) { a.c += b.c; }
};

}  // namespace tessera::tet::qe::fold
