// ragged::synth_hive / `tessera ragged synth`: the synthetic stores the demo and the benchmark use
// must be valid zagg-ragged leaves (they verify, read back through every reader) and
// deterministic for a seed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/synth.hpp"
#include "tessera/ragged/tdigest.hpp"
#include "tessera/ragged/verify.hpp"

namespace tessera::ragged {
namespace {

using testing::run_cli;
using testing::TempDir;

SynthLeafOptions small() {
  SynthLeafOptions o;
  o.cell_order = 13;
  o.shard_order = 9;
  o.chunk_order = 11;  // 256 cells of 16-cell chunks
  o.shard_decimal = "1111111111";
  o.max_centroids = 40;
  o.populated_fraction = 0.4;
  o.seed = 3;
  return o;
}

TEST(RaggedSynth, LeafVerifiesAndEveryPopulatedCellIsAValidDigest) {
  TempDir dir;
  io::DirectoryStore hive(dir.path().string());
  const SynthLeafReport report = synth_hive(hive, small());
  EXPECT_EQ(report.cells, 256u);
  EXPECT_GT(report.populated, 0u);
  EXPECT_LT(report.populated, report.cells);
  io::DirectoryStore leaf((dir / report.leaf_key).string());
  const StoreVerifyReport verified = verify_store(leaf);
  EXPECT_TRUE(verified.ok()) << (verified.failures.empty() ? "" : verified.failures[0].message);
  EXPECT_EQ(verified.populated_cells, report.populated);

  const auto field = RaggedField::open(leaf, "13/h_tdigest");
  std::uint64_t populated = 0, centroids = 0;
  for (std::int64_t i = 0; i < 256; ++i) {
    const RaggedCell cell = field.read_cell(i);
    if (cell.rows == 0) continue;
    ++populated;
    centroids += cell.rows;
    tdigest::validate(tdigest::decode(cell.bytes, "cell"), "cell");
  }
  EXPECT_EQ(populated, report.populated);
  EXPECT_EQ(centroids, report.centroids);
  EXPECT_FALSE(field.read_tensors().empty());
}

TEST(RaggedSynth, SameSeedSameBytesOtherSeedOtherBytes) {
  TempDir dir;
  auto hashes = [&](const std::string& name, std::uint64_t seed) {
    const auto out = dir / name;
    const auto run = run_cli({"ragged", "synth", out.string(), "--cell-order", "13", "--shard-order", "9",
                              "--chunk-order", "11", "--shard", "1111111111", "--seed", std::to_string(seed)});
    EXPECT_EQ(run.rc, 0) << run.err;
    const auto report = nlohmann::json::parse(run.out);
    const auto h = run_cli({"ragged", "hashes", (out / report["leaf"].get<std::string>()).string()});
    EXPECT_EQ(h.rc, 0) << h.err;
    return nlohmann::json::parse(h.out)["combined"].get<std::string>();
  };
  const std::string a = hashes("a", 5), b = hashes("b", 5), c = hashes("c", 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// A stamped leaf is committed as a writer commits it: exact occupancy from its coverage bitmap of
// the populated cells, which changes no tensor (every populated cell is 2 either way, and no cell
// is observed without a digest).
TEST(RaggedSynth, StampedLeafHasExactOccupancyAndTheSameTensors) {
  TempDir dir;
  io::DirectoryStore plain_hive((dir / "plain").string()), stamped_hive((dir / "stamped").string());
  SynthLeafOptions o = small();
  const SynthLeafReport report = synth_hive(plain_hive, o);
  o.stamp = true;
  const SynthLeafReport stamped_report = synth_hive(stamped_hive, o);
  EXPECT_EQ(stamped_report.populated, report.populated);
  io::DirectoryStore plain((dir / "plain" / report.leaf_key).string()),
      stamped((dir / "stamped" / report.leaf_key).string());
  EXPECT_FALSE(has_exact_occupancy(plain));
  EXPECT_TRUE(has_exact_occupancy(stamped));
  const StoreVerifyReport verified = verify_store(stamped);
  EXPECT_TRUE(verified.ok()) << (verified.failures.empty() ? "" : verified.failures[0].message);
  const auto plain_blocks = RaggedField::open(plain, "13/h_tdigest").read_tensors();
  const auto stamped_blocks = RaggedField::open(stamped, "13/h_tdigest").read_tensors();
  ASSERT_EQ(stamped_blocks.size(), plain_blocks.size());
  std::uint64_t populated = 0;
  for (std::size_t i = 0; i < plain_blocks.size(); ++i) {
    EXPECT_EQ(stamped_blocks[i].tensor, plain_blocks[i].tensor);
    EXPECT_EQ(stamped_blocks[i].mask, plain_blocks[i].mask);
    EXPECT_EQ(stamped_blocks[i].observed_empty, 0u);
    populated += stamped_blocks[i].populated;
  }
  EXPECT_EQ(populated, report.populated);
}

TEST(RaggedSynth, InconsistentOrdersAreUsageErrors) {
  TempDir dir;
  io::DirectoryStore hive(dir.path().string());
  SynthLeafOptions o = small();
  o.chunk_order = o.shard_order;
  EXPECT_THROW(synth_hive(hive, o), UsageError);
  o = small();
  o.shard_decimal = "11111";  // order 4, not 9
  EXPECT_THROW(synth_hive(hive, o), UsageError);
  o = small();
  o.populated_fraction = 0.9;
  EXPECT_THROW(synth_hive(hive, o), UsageError);
}

}  // namespace
}  // namespace tessera::ragged
