// Robustness (DESIGN.md §6 layer 4): every object of the ragged conformance leaves, truncated and
// bit-flipped, read through every ragged reader. Each case must end in a typed tessera::Error or
// a successful read, never a crash, another exception type or a hang. Also replays the fuzz
// seeds through both fuzz entry points' exercise functions.
#include <gtest/gtest.h>

#include <sstream>

#include "support.hpp"
#include "support/testing.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_ragged_cell.cpp"
#undef TESSERA_FUZZ_NO_ENTRY_POINT

namespace tessera::ragged {
namespace {

namespace fs = std::filesystem;

struct Leaf {
  fs::path dir;
  std::vector<std::string> fields;
};

std::vector<Leaf> leaves() {
  return {{test::fixture_leaf("minimal"), {"6/h_tdigest"}},
          {test::fixture_leaf("kitchen_sink"), {"6/h_tdigest_signal", "6/h_tdigest_noise"}},
          {test::fixture_leaf("flux"), {"6/rx_flux"}},
          {test::fixture_leaf("temporal"), {"6/h_tdigest"}},
          {test::fixture_leaf("column").parent_path() / "all.pyramid.zarr", {"5/h_tdigest", "4/h_tdigest"}},
          {test::strata_leaf(), {"6/h_tdigest_signal"}}};
}

// Lengths to truncate an object to: all of them for small objects, a spread for larger ones
// (zarr.json texts fail their JSON parse at almost every cut; binary objects are small).
std::vector<std::size_t> cut_points(std::size_t size, bool json) {
  std::vector<std::size_t> out;
  const std::size_t step = json ? std::max<std::size_t>(1, size / 48) : size <= 192 ? 1 : size / 96;
  for (std::size_t n = 0; n < size; n += step) out.push_back(n);
  for (std::size_t n = size > 16 ? size - 16 : 0; n < size; ++n) out.push_back(n);
  return out;
}

// Content hashes walk every node of the leaf; they run on every 8th case to keep the sweep short.
// The sanitizer stage, there to catch memory errors on the paths the Release stage already
// checks case by case, reads every other case.
void run_all(const io::Store& store, const Leaf& leaf, std::size_t n) {
#ifdef TESSERA_SANITIZED
  if (n % 2 == 1) return;
#endif
  for (const std::string& field : leaf.fields) fuzzing::exercise_ragged_reads(store, field, n % 8 == 0);
}

TEST(RaggedCorruption, TruncationsAndBitFlipsOfEveryFixtureObject) {
  std::size_t cases = 0;
  for (const Leaf& leaf : leaves()) {
    io::MemoryStore store(leaf.dir.filename().string());
    test::load_tree(leaf.dir, store);
    for (const std::string& key : store.list("")) {
      const std::vector<std::byte> original = *store.get(key);
      const bool json = key.size() >= 9 && key.compare(key.size() - 9, 9, "zarr.json") == 0;
      SCOPED_TRACE(leaf.dir.string() + " " + key);
      try {
        for (const std::size_t n : cut_points(original.size(), json)) {
          store.put(key, std::span<const std::byte>(original).first(n));
          run_all(store, leaf, cases);
          ++cases;
        }
        std::vector<std::byte> flipped = original;
        const std::size_t step = json                     ? std::max<std::size_t>(1, original.size() / 64)
                                 : original.size() <= 448 ? 1
                                                          : original.size() / 160;
        for (std::size_t i = 0; i < original.size(); i += step) {
          flipped[i] ^= static_cast<std::byte>(1u << (i % 8));
          store.put(key, flipped);
          run_all(store, leaf, cases);
          flipped[i] = original[i];
          ++cases;
        }
        // a huge count in the first bytes (cell counts, lengths, JSON sizes)
        if (original.size() >= 8) {
          flipped = original;
          for (std::size_t b = 0; b < 4; ++b) flipped[b] = std::byte{0xff};
          store.put(key, flipped);
          run_all(store, leaf, cases);
          ++cases;
        }
      } catch (const fuzzing::RaggedInconsistency& e) {
        ADD_FAILURE() << "inconsistency: " << e.what;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "untyped exception: " << e.what();
      }
      store.put(key, original);
    }
  }
  EXPECT_GT(cases, 4000u);
  std::printf("%zu corruption cases\n", cases);
}

TEST(RaggedCorruption, FuzzSeedsReplay) {
  for (const char* target : {"fuzz_ragged_cell", "fuzz_ragged_gates"}) {
    const std::string list = testing::read_file_text(testing::source_dir() / "fuzz" / (std::string(target) + ".seeds"));
    std::istringstream lines(list);
    std::string line;
    std::size_t n = 0;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto bytes = testing::read_file_bytes(testing::conformance_dir() / line);
      if (std::string(target) == "fuzz_ragged_cell") EXPECT_NO_THROW(fuzzing::exercise_ragged_payload(bytes)) << line;
      else EXPECT_NO_THROW(fuzzing::exercise_tdigest_kernels(bytes)) << line;
      ++n;
    }
    EXPECT_GT(n, 10u) << target;
  }
}

}  // namespace
}  // namespace tessera::ragged
