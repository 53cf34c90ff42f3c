// The sweep's checks of each populated read chunk's morton words (spec §5.2, RD-3): every
// written word is a valid area word of the axis order, and a chunk's words share one ancestor at
// the chunk order. The words are checked on the workers that decode the chunks; the error must
// still be the one a serial sweep in axis order raises, whatever the thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <stdexcept>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/synth.hpp"
#include "tessera/zarr/array.hpp"
#include "tessera/zarr/array_writer.hpp"

namespace tessera::ragged {
namespace {

// One shard of 4096 cells of order 15 in 64 read chunks of 64 cells (several batches at any
// thread count), about half the cells populated.
struct Leaf {
  testing::TempDir dir;
  std::optional<io::DirectoryStore> store;
  std::uint64_t shard = 0;
  std::optional<std::uint64_t> previous, first;  // the first cells of two populated chunks
  static constexpr int kDepth = 6;
  static constexpr std::uint64_t kChunkCells = 64;

  Leaf() {
    io::DirectoryStore hive(dir.path().string());
    SynthLeafOptions s;
    s.cell_order = 15;
    s.shard_order = 9;
    s.chunk_order = 12;
    s.shard_decimal = "1111111111";
    s.populated_fraction = 0.5;
    s.max_centroids = 20;
    const SynthLeafReport report = synth_hive(hive, s);
    shard = report.shard;
    store.emplace((dir / report.leaf_key).string());
    // Chunks without digests have no words and are not checked: take two with, in the third
    // batch of 16 chunks or later, so workers have checked chunks before them.
    const std::vector<std::byte> words = zarr::Array::open(*store, "15/morton").read_all();
    for (std::uint64_t c = 33; c < 64 && !first; ++c)
      if (load_le<std::uint64_t>(words.data() + 8 * c * kChunkCells) != 0)
        (previous ? first : previous) = c * kChunkCells;
    if (!first) throw std::logic_error("the synthetic leaf has fewer than two populated chunks past the 33rd");
  }

  RaggedField field() const { return RaggedField::open(*store, "15/h_tdigest"); }

  // Replaces cell `cell`'s morton word.
  void set_word(std::uint64_t cell, std::uint64_t word) {
    const zarr::Array morton = zarr::Array::open(*store, "15/morton");
    std::vector<std::byte> words = morton.read_all();
    store_le<std::uint64_t>(words.data() + 8 * cell, word);
    zarr::ArrayWriter writer(*store, "15/morton", morton.meta());
    writer.write_dense_object({0}, words);
  }

  // The message of the FormatError a whole-leaf read_tensors raises on `threads` threads.
  std::string sweep_error(unsigned threads) const {
    TensorOptions o;
    o.fit = FitPolicy::DegradeResolution;
    o.n_bins = 8;
    o.threads = threads;
    try {
      field().read_tensors(o, [](TensorBlock&&) {});
    } catch (const FormatError& e) {
      return e.what();
    }
    return "no error";
  }

  // The message on one thread, after checking two threads give the same.
  std::string error() const {
    const std::string one = sweep_error(1);
    EXPECT_EQ(sweep_error(2), one);
    return one;
  }
};

void expect_contains(const std::string& error, const std::string& part) {
  EXPECT_NE(error.find(part), std::string::npos) << error;
}

// What the sweep says of a chunk at cell `at` whose first word is of order 16.
std::string order_16_at(std::uint64_t at) {
  return "read chunk at cell " + std::to_string(at) + " cell 0: morton word of order 16 on an axis of order 15";
}

TEST(RaggedSweepWords, AnUntouchedLeafSweeps) {
  Leaf leaf;
  EXPECT_EQ(leaf.sweep_error(2), "no error");
}

// A chunk whose words are consistent among themselves, at an order finer than the axis.
TEST(RaggedSweepWords, AChunkOfAnotherOrderIsNamedAtItsFirstWord) {
  Leaf leaf;
  const std::uint64_t at = *leaf.first;
  for (std::uint64_t i = 0; i < Leaf::kChunkCells; ++i)
    leaf.set_word(at + i, morton::descendant(leaf.shard, Leaf::kDepth + 1, 4 * at + i));  // nested, one order finer
  expect_contains(leaf.error(), order_16_at(at));
}

// The chunk's own first word sets no order of its own: the sweep's order (from the chunks before)
// is the one its words are held to, so the first word is the wrong one, not the second.
TEST(RaggedSweepWords, AWrongFirstWordIsNamedNotTheRightOnesAfterIt) {
  Leaf leaf;
  const std::uint64_t at = *leaf.first;
  leaf.set_word(at, morton::descendant(leaf.shard, Leaf::kDepth + 1, 4 * at));
  expect_contains(leaf.error(), order_16_at(at));
}

TEST(RaggedSweepWords, WordsUnderTwoAncestorsAreNotNested) {
  Leaf leaf;
  const std::uint64_t at = *leaf.first;
  leaf.set_word(at + 5, morton::descendant(leaf.shard, Leaf::kDepth, *leaf.previous + 5));
  const std::string e = leaf.error();
  expect_contains(e, "read chunk at cell " + std::to_string(at) + ": morton words");
  expect_contains(e, "of one read chunk have different ancestors");
}

TEST(RaggedSweepWords, AnInvalidWordNamesItsCell) {
  Leaf leaf;
  const std::uint64_t at = *leaf.first;
  leaf.set_word(at + 7, ~std::uint64_t{0});
  expect_contains(leaf.error(), "read chunk at cell " + std::to_string(at) + " cell 7");
}

// Errors in two chunks: the first on the axis is reported, though a worker may check the other first.
TEST(RaggedSweepWords, TheFirstFailingChunkOnTheAxisIsReported) {
  Leaf leaf;
  const std::uint64_t at = *leaf.first;
  leaf.set_word(at + 7, ~std::uint64_t{0});
  leaf.set_word(*leaf.previous + 3, ~std::uint64_t{0});
  expect_contains(leaf.error(), "read chunk at cell " + std::to_string(*leaf.previous) + " cell 3");
}

}  // namespace
}  // namespace tessera::ragged
