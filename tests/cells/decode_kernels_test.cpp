// The tile decoder's inner loops (src/cells/decode_kernels.hpp) against a scalar reference: every
// form (SSE2 with and without streaming stores, AVX2 and AVX-512 where the CPU has them) gives the
// reference's gene indices and counts, and the same verdict on zero gaps, indices past n_genes
// and zero counts, wherever in a cell the fault sits (prologue, vector body or tail); the same for
// the narrow (uint16) forms, whose 16-bit sums must not hide a total past 65,535. Large encoded
// tiles then round-trip through Tile::decode and Tile::decode_narrow, whose chunks are big enough
// for the streamed forms and span several zstd blocks, so cells are un-planed block by block.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "cells/decode_kernels.hpp"
#include "tessera/cells/tile.hpp"
#include "tessera/cells/tile_encoder.hpp"

namespace tessera::cells {
namespace {

// Streamed stores are weakly ordered: fence them before reading the output back.
void fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

struct Planes {
  std::vector<std::uint8_t> lo, hi;
  void push(std::uint32_t v) {
    lo.push_back(static_cast<std::uint8_t>(v));
    hi.push_back(static_cast<std::uint8_t>(v >> 8));
  }
  std::uint32_t at(std::size_t j) const { return lo[j] | (std::uint32_t{hi[j]} << 8); }
};

// The reference: the exact running sum, valid when no gap after the first is 0 and the last index
// is below n_genes.
bool reference_genes(const Planes& p, std::uint64_t s, std::uint64_t end, std::vector<std::int64_t>& out,
                     std::uint64_t n_genes) {
  std::uint64_t gene = 0;
  bool ok = true;
  for (std::uint64_t j = s; j < end; ++j) {
    const std::uint32_t gap = p.at(j);
    ok &= j == s || gap != 0;
    gene += gap;
    out[j] = static_cast<std::int64_t>(gene);
  }
  return ok && gene < n_genes;
}

using GeneKernel = bool (*)(const std::uint8_t*, const std::uint8_t*, std::uint64_t, std::uint64_t, std::int32_t*,
                            std::uint64_t);

std::vector<std::pair<const char*, GeneKernel>> gene_kernels() {
  std::vector<std::pair<const char*, GeneKernel>> k{{"sse2", &detail::cell_genes_sse<false, std::int32_t>},
                                                    {"sse2 streamed", &detail::cell_genes_sse<true, std::int32_t>}};
#if defined(TESSERA_CELLS_AVX2)
  if (detail::cpu_has_avx2()) k.emplace_back("avx2", &detail::cell_genes_avx2<std::int32_t>);
#endif
  return k;
}

TEST(DecodeKernels, GeneIndicesAndVerdictsMatchTheReference) {
  std::mt19937_64 rng(11);
  // Cell lengths around every boundary of the vector loops, and one long cell.
  const std::vector<std::uint64_t> lengths{1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 5003, 40000};
  for (const auto len : lengths) {
    for (int fault = 0; fault < 4; ++fault) {  // none, a zero gap, a huge gap, past n_genes
      Planes p;
      const std::uint64_t pad = rng() % 13;  // shifts the output alignment
      for (std::uint64_t j = 0; j < pad; ++j) p.push(1);
      for (std::uint64_t j = 0; j < len; ++j) p.push(j == 0 ? rng() % 50 : 1 + rng() % (rng() % 8 == 0 ? 2000 : 20));
      const std::uint64_t s = pad, end = pad + len;
      const std::uint64_t at = s + 1 + (len > 1 ? rng() % (len - 1) : 0);
      if (fault == 1 && len > 1) p.lo[at] = p.hi[at] = 0;
      if (fault == 2 && len > 1) p.lo[at] = p.hi[at] = 0xFF;
      std::vector<std::int64_t> want(end);
      reference_genes(p, s, end, want, std::uint64_t{1} << 40);
      const std::uint64_t n_genes = fault == 3 ? static_cast<std::uint64_t>(want[end - 1]) : std::uint64_t{1} << 31;
      const bool ref_ok = reference_genes(p, s, end, want, n_genes);
      for (const auto& [name, kernel] : gene_kernels()) {
        SCOPED_TRACE(std::string(name) + " length " + std::to_string(len) + " fault " + std::to_string(fault));
        std::vector<std::int32_t> got(end + 8, -1);
        const bool ok = kernel(p.lo.data(), p.hi.data(), s, end, got.data(), n_genes);
        fence();
        EXPECT_EQ(ok, ref_ok);
        if (ref_ok) {
          for (std::uint64_t j = s; j < end; ++j) ASSERT_EQ(got[j], want[j]) << "position " << j;
        }
      }
    }
  }
}

template <typename V>
void check_values() {
  std::mt19937_64 rng(5);
  for (const std::uint64_t n : {1u, 15u, 16u, 17u, 31u, 1000u, 70001u}) {
    for (int zero_at = -1; zero_at < 3; ++zero_at) {
      Planes p;
      for (std::uint64_t j = 0; j < n; ++j) p.push(1 + rng() % (rng() % 10 == 0 ? 65535 : 30));
      std::uint64_t at = 0;
      if (zero_at >= 0) {
        at = zero_at == 0 ? 0 : zero_at == 1 ? n / 2 : n - 1;
        p.lo[at] = p.hi[at] = 0;
      }
      for (const bool stream : {false, true}) {
        for (const bool avx2 : {false, true}) {
#if defined(TESSERA_CELLS_AVX2)
          if (avx2 && !detail::cpu_has_avx2()) continue;
#else
          if (avx2) continue;
#endif
          if (avx2 && !stream) continue;
          SCOPED_TRACE("n " + std::to_string(n) + " zero at " + std::to_string(zero_at) + (stream ? " streamed" : "") +
                       (avx2 ? " avx2" : ""));
          std::vector<V> got(n + 8);
          for (std::size_t offset = 0; offset < 3; ++offset) {  // misaligned starts
            bool zero = false;
#if defined(TESSERA_CELLS_AVX2)
            if (avx2) zero = detail::chunk_values_avx2(p.lo.data(), p.hi.data(), n, got.data() + offset);
            else
#endif
              zero = stream ? detail::chunk_values_sse<true>(p.lo.data(), p.hi.data(), n, got.data() + offset)
                            : detail::chunk_values_sse<false>(p.lo.data(), p.hi.data(), n, got.data() + offset);
            fence();
            EXPECT_EQ(zero, zero_at >= 0);
            for (std::uint64_t j = 0; j < n; ++j) ASSERT_EQ(got[offset + j], static_cast<V>(p.at(j))) << j;
          }
        }
      }
    }
  }
}

using NarrowGeneKernel = bool (*)(const std::uint8_t*, const std::uint8_t*, std::uint64_t, std::uint64_t,
                                  std::uint16_t*, std::uint64_t);

TEST(DecodeKernels, NarrowGeneIndicesAndVerdictsMatchTheReference) {
  std::vector<std::pair<const char*, NarrowGeneKernel>> kernels{
      {"sse2", &detail::cell_genes_sse<false, std::uint16_t>},
      {"sse2 streamed", &detail::cell_genes_sse<true, std::uint16_t>}};
#if defined(TESSERA_CELLS_AVX2)
  if (detail::cpu_has_avx2()) kernels.emplace_back("avx2", &detail::cell_genes_avx2<std::uint16_t>);
  if (detail::cpu_has_avx512()) {
    kernels.emplace_back("avx512", &detail::cell_genes_avx512<false>);
    kernels.emplace_back("avx512 streamed", &detail::cell_genes_avx512<true>);
  }
#endif
  std::mt19937_64 rng(12);
  constexpr std::uint64_t kGenes = std::uint64_t{1} << 16;  // the narrow limit
  for (const std::uint64_t len : {1u, 2u, 8u, 9u, 16u, 17u, 31u, 32u, 33u, 64u, 65u, 100u, 5003u, 20000u}) {
    // none, a zero gap, past n_genes by one, a total that wraps 16 bits but whose low bits look fine
    for (int fault = 0; fault < 4; ++fault) {
      Planes p;
      const std::uint64_t pad = rng() % 13;
      for (std::uint64_t j = 0; j < pad; ++j) p.push(1);
      const std::uint64_t s = pad, end = pad + len;
      for (std::uint64_t j = 0; j < len; ++j) p.push(j == 0 ? rng() % 50 : 1 + rng() % 3);
      const std::uint64_t at = s + 1 + (len > 1 ? rng() % (len - 1) : 0);
      if (fault == 1 && len > 1) p.lo[at] = p.hi[at] = 0;
      std::vector<std::int64_t> want(end);
      reference_genes(p, s, end, want, std::uint64_t{1} << 40);
      std::uint64_t n_genes = kGenes;
      if (fault == 2) n_genes = static_cast<std::uint64_t>(want[end - 1]);
      if (fault == 3 && len > 1) p.lo[at] = p.hi[at] = 0xFF;  // a gap of 65535: the total passes 2^16
      const bool ref_ok = reference_genes(p, s, end, want, n_genes);
      for (const auto& [name, kernel] : kernels) {
        SCOPED_TRACE(std::string(name) + " length " + std::to_string(len) + " fault " + std::to_string(fault));
        std::vector<std::uint16_t> got(end + 16, 0xABCD);
        const bool ok = kernel(p.lo.data(), p.hi.data(), s, end, got.data(), n_genes);
        fence();
        EXPECT_EQ(ok, ref_ok);
        if (ref_ok) {
          for (std::uint64_t j = s; j < end; ++j) ASSERT_EQ(got[j], want[j]) << "position " << j;
        }
      }
    }
  }
}

using NarrowCountKernel = bool (*)(const std::uint8_t*, const std::uint8_t*, std::uint64_t, std::uint16_t*);

TEST(DecodeKernels, NarrowCountsMatchTheReference) {
  std::vector<std::pair<const char*, NarrowCountKernel>> kernels{
      {"sse2", &detail::chunk_values_sse<false, std::uint16_t>},
      {"sse2 streamed", &detail::chunk_values_sse<true, std::uint16_t>}};
#if defined(TESSERA_CELLS_AVX2)
  if (detail::cpu_has_avx512()) {
    kernels.emplace_back("avx512", &detail::chunk_values_avx512<false>);
    kernels.emplace_back("avx512 streamed", &detail::chunk_values_avx512<true>);
  }
#endif
  std::mt19937_64 rng(6);
  for (const std::uint64_t n : {1u, 15u, 16u, 17u, 31u, 32u, 33u, 63u, 64u, 65u, 1000u, 70001u}) {
    for (int zero_at = -1; zero_at < 3; ++zero_at) {
      Planes p;
      for (std::uint64_t j = 0; j < n; ++j) p.push(1 + rng() % (rng() % 10 == 0 ? 65535 : 30));
      if (zero_at >= 0) {
        const std::uint64_t at = zero_at == 0 ? 0 : zero_at == 1 ? n / 2 : n - 1;
        p.lo[at] = p.hi[at] = 0;
      }
      for (const auto& [name, kernel] : kernels) {
        for (std::size_t offset = 0; offset < 3; ++offset) {
          SCOPED_TRACE("n " + std::to_string(n) + " zero at " + std::to_string(zero_at) + " " + name);
          std::vector<std::uint16_t> got(n + 8);
          const bool zero = kernel(p.lo.data(), p.hi.data(), n, got.data() + offset);
          fence();
          EXPECT_EQ(zero, zero_at >= 0);
          for (std::uint64_t j = 0; j < n; ++j) ASSERT_EQ(got[offset + j], p.at(j)) << j;
        }
      }
    }
  }
}

TEST(DecodeKernels, CountsMatchTheReferenceInt32) { check_values<std::int32_t>(); }
TEST(DecodeKernels, CountsMatchTheReferenceFloat) { check_values<float>(); }

// A tile whose chunks exceed the streaming threshold, with cells long enough for the vector
// bodies, one cell above the AVX2 length limit and counts that need exceptions.
TEST(DecodeKernels, LargeTileRoundTripsThroughTheStreamedPath) {
  std::mt19937_64 rng(3);
  const std::uint64_t n_genes = std::uint64_t{1} << 21;
  std::vector<std::int64_t> indptr{0};
  std::vector<std::uint32_t> genes, counts;
  for (int cell = 0; cell < 80; ++cell) {
    const std::uint64_t want = cell == 7 ? 70000 : cell % 9 == 0 ? 0 : 1 + rng() % 6000;
    std::uint64_t g = rng() % 3;
    for (std::uint64_t k = 0; k < want && g < n_genes; ++k) {
      genes.push_back(static_cast<std::uint32_t>(g));
      counts.push_back(rng() % 500 == 0 ? 70000 + static_cast<std::uint32_t>(rng() % 1000) : 1 + rng() % 40);
      g += 1 + (rng() % 2000 == 0 ? 65000 + rng() % 5000 : rng() % 3);  // rare gap exceptions
    }
    indptr.push_back(static_cast<std::int64_t>(genes.size()));
  }
  ASSERT_GE(genes.size() / 2, detail::kStreamNnz);
  const Tile t =
      Tile::parse(encode_tile({indptr, genes, counts, n_genes}, {.version = 2, .level = 1, .n_chunks = 2}), "big.dct");
  for (const unsigned threads : {1u, 2u}) {
    std::vector<std::int32_t> idx(t.nnz()), val(t.nnz());
    std::vector<float> fval(t.nnz());
    t.decode(idx, val, {.threads = threads});
    t.decode(idx, fval, {.threads = threads});
    EXPECT_EQ(std::vector<std::uint32_t>(idx.begin(), idx.end()), genes);
    EXPECT_EQ(std::vector<std::uint32_t>(val.begin(), val.end()), counts);
    for (std::size_t j = 0; j < counts.size(); ++j) ASSERT_EQ(fval[j], static_cast<float>(counts[j])) << j;
  }
}

// The narrow form of the test above: at most 65,536 genes, a cell longer than a zstd block's
// worth of high bytes, gaps of 65,535 and counts above 65,535 (both exceptions).
TEST(DecodeKernels, LargeNarrowTileRoundTripsBlockByBlock) {
  std::mt19937_64 rng(4);
  const std::uint64_t n_genes = Tile::kNarrowMaxGenes;
  std::vector<std::int64_t> indptr{0};
  std::vector<std::uint32_t> genes, counts;
  std::vector<WideCount> want_wide;
  for (int cell = 0; cell < 300; ++cell) {
    std::vector<std::uint32_t> row;
    if (cell == 11) {
      for (std::uint32_t g = 0; g < n_genes; g += 1 + static_cast<std::uint32_t>(rng() % 2)) row.push_back(g);
    } else if (cell == 12) {
      row = {0, 65535};  // a stored gap of 65,535
    } else if (cell % 10 != 0) {
      const std::uint64_t length = 1 + rng() % 7000;
      for (std::uint64_t g = rng() % 5; g < n_genes && row.size() < length; g += 1 + rng() % 12)
        row.push_back(static_cast<std::uint32_t>(g));
    }
    for (const std::uint32_t g : row) {
      genes.push_back(g);
      counts.push_back(rng() % 400 == 0 ? 65536 + static_cast<std::uint32_t>(rng() % 100000) : 1 + rng() % 300);
      if (counts.back() > 65535) want_wide.push_back({counts.size() - 1, counts.back()});
    }
    indptr.push_back(static_cast<std::int64_t>(genes.size()));
  }
  ASSERT_FALSE(want_wide.empty());
  for (const int chunks : {1, 3}) {
    const Tile t = Tile::parse(encode_tile({indptr, genes, counts, n_genes},
                                           {.version = 2, .level = 3, .n_chunks = static_cast<std::uint32_t>(chunks)}),
                               "narrow.dct");
    ASSERT_TRUE(t.narrow_decodable());
    ASSERT_GE(t.max_chunk_nnz(), detail::kStreamNnz);
    for (const unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(std::to_string(chunks) + " chunks, " + std::to_string(threads) + " threads");
      std::vector<std::uint16_t> g(t.nnz()), c(t.nnz());
      std::vector<WideCount> wide;
      t.decode_narrow(g, c, wide, {.threads = threads});
      EXPECT_EQ(wide, want_wide);
      for (std::size_t j = 0; j < genes.size(); ++j) {
        ASSERT_EQ(g[j], genes[j]) << j;
        ASSERT_EQ(c[j], std::min<std::uint32_t>(counts[j], 65535)) << j;
      }
      std::vector<std::int32_t> idx(t.nnz()), val(t.nnz());
      t.decode(idx, val, {.threads = threads});
      EXPECT_EQ(std::vector<std::uint32_t>(idx.begin(), idx.end()), genes);
      EXPECT_EQ(std::vector<std::uint32_t>(val.begin(), val.end()), counts);
    }
  }
}

}  // namespace
}  // namespace tessera::cells
