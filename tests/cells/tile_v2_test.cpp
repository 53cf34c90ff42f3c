// Version 2 tiles assembled byte by byte (tile_builder.hpp, independent of tessera's encoder):
// exception frames at their edges decode to the true values, every stage-5 rule (T19–T22,
// X1–X4) and T12 fails with its identifier, and the encoder's v2 output round-trips and matches
// the assembled bytes when no exception is needed. Also the writer-side limits (§4.3).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "tessera/cells/tile.hpp"
#include "tessera/core/error.hpp"
#include "tessera/cells/tile_encoder.hpp"
#include "tile_builder.hpp"

namespace tessera::cells {
namespace {

using testing::assemble;
using testing::BuiltChunk;
using testing::BuiltTile;

struct Decoded {
  std::vector<std::int32_t> indices, values;
};

Decoded decode(const std::vector<std::byte>& bytes, unsigned threads = 1) {
  const Tile t = Tile::parse(bytes, "v2.dct");
  Decoded d{std::vector<std::int32_t>(t.nnz()), std::vector<std::int32_t>(t.nnz())};
  t.decode(d.indices, d.values, {.threads = threads});
  return d;
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    decode(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

// The worked example of §2.5: genes [5, 70000, 70001], counts [1, 100000, 2], n_genes 80000.
BuiltTile worked_example() {
  BuiltTile t;
  t.n_genes = 80000;
  t.indptr = {0, 3};
  BuiltChunk c;
  c.cell_lo = 0;
  c.cell_hi = 1;
  c.gaps = {5, 65535, 1};
  c.vals = {1, 65535, 2};
  c.gexc_pos = {1};
  c.gexc_pay = {4460};
  c.vexc_pos = {1};
  c.vexc_pay = {100000};
  t.chunks = {c};
  return t;
}

TEST(TileV2, WorkedExample) {
  const auto d = decode(assemble(worked_example()));
  EXPECT_EQ(d.indices, (std::vector<std::int32_t>{5, 70000, 70001}));
  EXPECT_EQ(d.values, (std::vector<std::int32_t>{1, 100000, 2}));
  // The encoder produces the same frames and therefore decodes the same.
  const std::vector<std::int64_t> indptr{0, 3};
  const std::vector<std::uint32_t> genes{5, 70000, 70001}, counts{1, 100000, 2};
  const auto enc = encode_tile({indptr, genes, counts, 80000}, {.version = 2, .level = 3, .n_chunks = 1});
  EXPECT_EQ(enc, assemble(worked_example()));
}

TEST(TileV2, CountEdgesAndGapExceptions) {
  // Cell 0: counts 65535 (stored as is), 65536 and 2^31-1 (exceptions), first gene 70000 (a
  // first-gap exception). Cell 1: two gexc in one cell. Chunk 1 (cell 2): a mid-cell gap
  // exception and a value exception of its own. n_genes = 2^31.
  BuiltTile t;
  t.n_genes = 0x80000000u;
  t.indptr = {0, 3, 6, 9};
  BuiltChunk a;
  a.cell_lo = 0;
  a.cell_hi = 2;
  // cell 0 genes 70000, 70001, 70002; cell 1 genes 1, 200000, 2147483647
  a.gaps = {65535, 1, 1, 1, 65535, 65535};
  a.vals = {65535, 65535, 65535, 3, 4, 5};
  a.gexc_pos = {0, 4, 5};
  a.gexc_pay = {70000 - 65535, 200000 - 1 - 65535, 2147483647u - 200000 - 65535};
  a.vexc_pos = {1, 2};
  a.vexc_pay = {65536, 2147483647u};
  BuiltChunk b;
  b.cell_lo = 2;
  b.cell_hi = 3;
  // cell 2 genes 0, 100000, 100002
  b.gaps = {0, 65535, 2};
  b.vals = {7, 65535, 9};
  b.gexc_pos = {1};
  b.gexc_pay = {100000 - 65535};
  b.vexc_pos = {1};
  b.vexc_pay = {1000000};
  t.chunks = {a, b};
  for (const unsigned threads : {1u, 2u}) {
    const auto d = decode(assemble(t), threads);
    EXPECT_EQ(d.indices, (std::vector<std::int32_t>{70000, 70001, 70002, 1, 200000, 2147483647, 0, 100000, 100002}));
    EXPECT_EQ(d.values, (std::vector<std::int32_t>{65535, 65536, 2147483647, 3, 4, 5, 7, 1000000, 9}));
  }
  // Encoding the decoded content reproduces the assembled tile (same chunking, level 3).
  const std::vector<std::int64_t> indptr{0, 3, 6, 9};
  const std::vector<std::uint32_t> genes{70000, 70001, 70002, 1, 200000, 2147483647u, 0, 100000, 100002};
  const std::vector<std::uint32_t> counts{65535, 65536, 2147483647u, 3, 4, 5, 7, 1000000, 9};
  const auto enc = encode_tile({indptr, genes, counts, 0x80000000u}, {.version = 2, .level = 3, .n_chunks = 2});
  EXPECT_EQ(enc, assemble(t));
}

TEST(TileV2, EmptyExceptionFrameIsAccepted) {
  BuiltTile t = worked_example();
  t.chunks[0].vals = {1, 7, 2};
  t.chunks[0].vexc_pos.clear();
  t.chunks[0].vexc_frame = testing::zframe({});
  const auto d = decode(assemble(t));
  EXPECT_EQ(d.values, (std::vector<std::int32_t>{1, 7, 2}));
}

struct RuleCase {
  const char* name;
  const char* rule;
  std::function<void(BuiltTile&)> damage;
};

TEST(TileV2, EveryDecodeRuleFails) {
  const std::vector<RuleCase> cases = {
      {"gaps frame too short", "(T19)",
       [](BuiltTile& t) {
         t.chunks[0].gaps_frame = testing::zframe(testing::planar({5, 65535}));
       }},
      {"two frames", "(T19)",
       [](BuiltTile& t) {
         auto f = testing::zframe(testing::planar(t.chunks[0].gaps));
         const auto extra = testing::zframe({});
         f.insert(f.end(), extra.begin(), extra.end());
         t.chunks[0].gaps_frame = f;
       }},
      {"no content size", "(T19)",
       [](BuiltTile& t) {
         t.chunks[0].vals_frame =
             codec::zstd_compress(testing::planar(t.chunks[0].vals), {.level = 3, .content_size = false});
       }},
      {"skippable frame", "(T19)",
       [](BuiltTile& t) {
         std::vector<std::byte> f(8);
         store_le<std::uint32_t>(f.data(), 0x184D2A50u);
         t.chunks[0].vals_frame = f;
       }},
      {"repeated gene", "(T20)",
       [](BuiltTile& t) {
         t.chunks[0].gaps = {5, 0, 1};
         t.chunks[0].gexc_pos.clear();
       }},
      {"zero count", "(T21)",
       [](BuiltTile& t) {
         t.chunks[0].vals = {0, 65535, 2};
       }},
      {"gene beyond n_genes", "(T22)",
       [](BuiltTile& t) {
         t.chunks[0].gaps = {5, 65535, 10000};
       }},
      {"gene beyond n_genes only after gexc", "(T22)",
       [](BuiltTile& t) {
         t.chunks[0].gexc_pay = {79999 - 65535 - 4};
         t.chunks[0].gaps = {5, 65535, 100};
       }},
      {"exception frame size not multiple of 8", "(X1)",
       [](BuiltTile& t) { t.chunks[0].vexc_frame = testing::zframe(std::vector<std::byte>(4)); }},
      {"exception frame above 8n", "(X1)",
       [](BuiltTile& t) {
         t.chunks[0].vexc_frame = testing::zframe(testing::exc_raw({0, 1, 2, 3}, {70000, 70000, 70000, 70000}));
       }},
      {"exception frame two frames", "(X1)",
       [](BuiltTile& t) {
         auto f = testing::zframe(testing::exc_raw({1}, {100000}));
         const auto extra = testing::zframe({});
         f.insert(f.end(), extra.begin(), extra.end());
         t.chunks[0].vexc_frame = f;
       }},
      {"positions not increasing", "(X2)",
       [](BuiltTile& t) {
         t.chunks[0].vals = {65535, 65535, 2};
         t.chunks[0].vexc_pos = {1, 0};
         t.chunks[0].vexc_pay = {100000, 100000};
       }},
      {"repeated position", "(X2)",
       [](BuiltTile& t) {
         t.chunks[0].vexc_pos = {1, 1};
         t.chunks[0].vexc_pay = {100000, 100000};
       }},
      {"position >= n", "(X2)", [](BuiltTile& t) { t.chunks[0].vexc_pos = {3}; }},
      {"vexc payload too small", "(X3)", [](BuiltTile& t) { t.chunks[0].vexc_pay = {65535}; }},
      {"vexc payload too large", "(X3)", [](BuiltTile& t) { t.chunks[0].vexc_pay = {0x80000000u}; }},
      {"vexc stored value not 65535", "(X3)",
       [](BuiltTile& t) {
         t.chunks[0].vals = {1, 65534, 2};
       }},
      {"gexc payload 0", "(X4)", [](BuiltTile& t) { t.chunks[0].gexc_pay = {0}; }},
      {"gexc payload >= n_genes", "(X4)", [](BuiltTile& t) { t.chunks[0].gexc_pay = {80000}; }},
      {"gexc stored gap not 65535", "(X4)",
       [](BuiltTile& t) {
         t.chunks[0].gaps = {5, 65534, 1};
       }},
  };
  ASSERT_TRUE(error_of(assemble(worked_example())).empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    BuiltTile t = worked_example();
    c.damage(t);
    const std::string msg = error_of(assemble(t));
    EXPECT_NE(msg.find(c.rule), std::string::npos) << msg;
    EXPECT_NE(msg.find("v2.dct: chunk 0"), std::string::npos) << msg;
  }
}

TEST(TileV2, ChunkWithTooManyNonzerosFailsT12) {
  BuiltTile t = worked_example();
  t.chunks[0].nnz_hi = std::uint64_t{1} << 32;
  try {
    Tile::parse(assemble(t), "v2.dct", {.verify_crc = true});
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("(T12)"), std::string::npos) << e.what();
  }
}

TEST(TileV2, ExceptionPolicyEdges) {
  // L = 1024: 1024 value exceptions accepted, 1025 refused; same for gaps.
  const auto make = [](std::size_t cells, std::size_t big, bool gaps) {
    std::vector<std::int64_t> indptr{0};
    std::vector<std::uint32_t> genes, counts;
    for (std::size_t r = 0; r < cells; ++r) {
      genes.push_back(gaps && r < big ? 70000 : 1);
      counts.push_back(!gaps && r < big ? 70000 : 1);
      indptr.push_back(static_cast<std::int64_t>(genes.size()));
    }
    return std::tuple{indptr, genes, counts};
  };
  for (const bool gaps : {false, true}) {
    {
      auto [ip, g, c] = make(2000, 1024, gaps);
      EXPECT_NO_THROW(encode_tile({ip, g, c, 80000}, {.version = 2, .level = 1, .n_chunks = 4}));
    }
    {
      auto [ip, g, c] = make(2000, 1025, gaps);
      EXPECT_THROW(encode_tile({ip, g, c, 80000}, {.version = 2, .level = 1, .n_chunks = 4}), LimitError);
    }
    // nnz / 200 > 1024: 300,000 nonzeros give L = 1500.
    {
      auto [ip, g, c] = make(300000, 1500, gaps);
      const auto bytes = encode_tile({ip, g, c, 80000}, {.version = 2, .level = 1, .n_chunks = 8});
      const auto d = decode(bytes, 2);
      EXPECT_EQ(gaps ? d.indices[1499] : d.values[1499], 70000);
      EXPECT_EQ(gaps ? d.indices[1500] : d.values[1500], 1);
    }
    {
      auto [ip, g, c] = make(300000, 1501, gaps);
      EXPECT_THROW(encode_tile({ip, g, c, 80000}, {.version = 2, .level = 1, .n_chunks = 8}), LimitError);
    }
  }
}

TEST(TileV2, Version1RefusesWhatNeedsExceptions) {
  const std::vector<std::int64_t> indptr{0, 1};
  const std::vector<std::uint32_t> genes{3}, big{65536}, ok{65535};
  EXPECT_THROW(encode_tile({indptr, genes, big, 10}, {.version = 1}), LimitError);
  EXPECT_NO_THROW(encode_tile({indptr, genes, ok, 10}, {.version = 1}));
  EXPECT_THROW(encode_tile({indptr, genes, ok, 65537}, {.version = 1}), LimitError);
  try {
    encode_tile({indptr, genes, big, 10}, {.version = 1, .name = "tiles/tile_000004.dct"});
  } catch (const LimitError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("tiles/tile_000004.dct"), std::string::npos) << m;
    EXPECT_NE(m.find("65536"), std::string::npos) << m;
    EXPECT_NE(m.find("version 2"), std::string::npos) << m;
  }
}

TEST(TileV2, RandomRoundTripsBothVersions) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    const std::uint32_t version = iter % 2 ? 2 : 1;
    const std::uint64_t n_genes = version == 1 ? 1 + rng() % 65536 : 1 + rng() % 300000;
    const std::size_t cells = rng() % 40;
    std::vector<std::int64_t> indptr{0};
    std::vector<std::uint32_t> genes, counts;
    for (std::size_t r = 0; r < cells; ++r) {
      const std::size_t k = std::min<std::uint64_t>(rng() % 12, n_genes);
      std::vector<std::uint32_t> g;
      while (g.size() < k) {
        const auto x = static_cast<std::uint32_t>(rng() % n_genes);
        if (std::find(g.begin(), g.end(), x) == g.end()) g.push_back(x);
      }
      std::sort(g.begin(), g.end());
      for (auto x : g) {
        genes.push_back(x);
        const std::uint32_t cmax = version == 1 ? 65535 : (rng() % 50 == 0 ? 2147483647u : 70000);
        counts.push_back(1 + static_cast<std::uint32_t>(rng() % cmax));
      }
      indptr.push_back(static_cast<std::int64_t>(genes.size()));
    }
    const auto bytes =
        encode_tile({indptr, genes, counts, n_genes}, {.version = version,
                                                       .level = 1,
                                                       .n_chunks = 1 + static_cast<std::uint32_t>(rng() % 5),
                                                       .threads = iter % 3 == 0 ? 2u : 1u});
    const Tile t = Tile::parse(bytes, "rt.dct");
    ASSERT_EQ(t.version(), version);
    std::vector<std::int32_t> idx(t.nnz()), val(t.nnz());
    t.decode(idx, val, {.threads = 2});
    EXPECT_EQ(std::vector<std::uint32_t>(idx.begin(), idx.end()), genes);
    EXPECT_EQ(std::vector<std::uint32_t>(val.begin(), val.end()), counts);
    EXPECT_EQ(std::vector<std::int64_t>(t.indptr().begin(), t.indptr().end()), indptr);
  }
}

TEST(TileV2, V2WithoutExceptionsHasTheFramesOfV1) {
  const std::vector<std::int64_t> indptr{0, 2, 2, 5};
  const std::vector<std::uint32_t> genes{1, 4, 0, 2, 9}, counts{3, 1, 65535, 2, 8};
  const auto v1 = Tile::parse(encode_tile({indptr, genes, counts, 10}, {.version = 1, .n_chunks = 2}), "v1");
  const auto v2 = Tile::parse(encode_tile({indptr, genes, counts, 10}, {.version = 2, .n_chunks = 2}), "v2");
  ASSERT_EQ(v1.chunks().size(), v2.chunks().size());
  for (std::size_t k = 0; k < v1.chunks().size(); ++k) {
    const auto& a = v1.chunks()[k];
    const auto& b = v2.chunks()[k];
    EXPECT_TRUE(
        std::ranges::equal(v1.bytes().subspan(a.gaps.off, a.gaps.len), v2.bytes().subspan(b.gaps.off, b.gaps.len)));
    EXPECT_TRUE(
        std::ranges::equal(v1.bytes().subspan(a.vals.off, a.vals.len), v2.bytes().subspan(b.vals.off, b.vals.len)));
    EXPECT_EQ(b.vexc.len, 0u);
    EXPECT_EQ(b.gexc.len, 0u);
  }
  EXPECT_EQ(v2.header().indptr_off, 64 + 96 * v2.chunks().size());
}

}  // namespace
}  // namespace tessera::cells
