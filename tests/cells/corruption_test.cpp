// Robustness of the deltacells readers against damaged input (spec deltacells.md §10): every
// conformance tile truncated at every length and with every single bit flipped, CRC checking on
// and off; every bit of the conformance manifest flipped. Each case must end in a successful read
// or a clean tessera::Error (FormatError for malformed bytes); with the CRC on, every flip at
// offset 64 or later must be rejected. Tiles go through the fuzz target's `exercise_cells_tile`,
// so the sweep and the fuzzer test the same paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/cells/manifest.hpp"
#include "tessera/core/error.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_cells_tile.cpp"

namespace tessera::cells {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> tile_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(tessera::testing::conformance_dir() / "deltacells"))
    if (e.is_regular_file() && e.path().extension() == ".dct") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// "ok", "format" (FormatError) or the name of anything else that escaped.
std::string outcome(std::span<const std::byte> bytes, bool crc) {
  try {
    fuzzing::exercise_cells_tile(bytes, crc);
    return "ok";
  } catch (const FormatError&) {
    return "format";
  } catch (const Error& e) {
    return std::string("other tessera error: ") + e.what();
  } catch (const fuzzing::CellsReaderInconsistency& e) {
    return std::string("inconsistent read: ") + e.what;
  } catch (const std::exception& e) {
    return std::string("untyped exception: ") + e.what();
  }
}

TEST(CellsCorruption, TruncationAtEveryLength) {
  const auto files = tile_files();
  ASSERT_GE(files.size(), 17u);
  for (const auto& path : files) {
    const auto bytes = tessera::testing::read_file_bytes(path);
    for (const bool crc : {false, true}) {
      for (std::size_t len = 0; len < bytes.size(); ++len) {
        const std::string r = outcome(std::span(bytes).first(len), crc);
        // A truncated object never matches its header's total_size (T6) — unless it was already
        // longer than it claims (trailing_garbage.dct).
        if (path.filename() != "trailing_garbage.dct") {
          ASSERT_EQ(r, "format") << path << " cut at " << len;
        } else {
          ASSERT_TRUE(r == "format" || r == "ok") << path << " cut at " << len << ": " << r;
        }
      }
    }
  }
}

TEST(CellsCorruption, EveryBitFlip) {
  std::size_t accepted_crc_off = 0;
  for (const auto& path : tile_files()) {
    auto bytes = tessera::testing::read_file_bytes(path);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        bytes[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
        const std::string off = outcome(bytes, false);
        const std::string on = outcome(bytes, true);
        bytes[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
        ASSERT_TRUE(off == "ok" || off == "format") << path << " byte " << i << " bit " << bit << ": " << off;
        ASSERT_TRUE(on == "ok" || on == "format") << path << " byte " << i << " bit " << bit << ": " << on;
        if (i >= 64) {
          ASSERT_EQ(on, "format") << path << " byte " << i << " bit " << bit << " accepted with CRC on";
        }
        accepted_crc_off += off == "ok";
      }
    }
  }
  // Some flips (padding, reserved CRC field with CRC off) are harmless; most are caught.
  EXPECT_GT(accepted_crc_off, 0u);
}

TEST(CellsCorruption, ManifestBitFlipsAndTruncation) {
  const std::string text =
      tessera::testing::read_file_text(tessera::testing::conformance_dir() / "deltacells/dataset_small/manifest.json");
  const auto check = [](const std::string& t) {
    try {
      const Manifest m = Manifest::parse(t);
      Manifest::parse(m.serialize());
    } catch (const FormatError&) {
    }
  };
  for (std::size_t len = 0; len < text.size(); ++len) check(text.substr(0, len));
  std::string t = text;
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      t[i] = static_cast<char>(t[i] ^ (1 << bit));
      check(t);
      t[i] = text[i];
    }
  }
  // Huge counts and lists stay cheap: nothing is sized from them.
  std::string huge = text;
  huge.replace(huge.find("\"n_cells\": 10"), 13, "\"n_cells\": 9223372036854775807");
  EXPECT_THROW(Manifest::parse(huge), FormatError);
}

}  // namespace
}  // namespace tessera::cells
