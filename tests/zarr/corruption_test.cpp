// Robustness of the zarr layer against damaged stores: every object of every conformance array
// (its zarr.json and its chunk and shard objects) truncated at every length and with bits
// flipped, every group zarr.json likewise, plus hand-made metadata declaring absurd geometries.
// Each variant must end in a clean tessera::Error or a successful read; a crash, a sanitizer
// report, a foreign exception or reads that disagree fail the test.
//
// Arrays go through the shard fuzz target's `exercise_zarr_array` (both read paths of every read
// chunk, then the whole array) and group metadata through `exercise_zarr_metadata`, so the sweep
// and the fuzzers test the same paths.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <typeinfo>

#include "fixtures.hpp"
#include "support/testing.hpp"
#include "tessera/core/error.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_zarr_metadata.cpp"
#include "../../fuzz/fuzz_zarr_shard_index.cpp"
#include "../../fuzz/fuzz_zarr_vlen.cpp"

namespace tessera::zarr {
namespace {

namespace fs = std::filesystem;

struct Tally {
  std::uint64_t read = 0;
  std::map<std::string, std::uint64_t> errors;
  std::vector<std::string> failures;
};

std::string error_class(const Error& e) {
  if (dynamic_cast<const FormatError*>(&e)) return "FormatError";
  if (dynamic_cast<const UnsupportedError*>(&e)) return "UnsupportedError";
  if (dynamic_cast<const LimitError*>(&e)) return "LimitError";
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const UsageError*>(&e)) return "UsageError";
  return "Error";
}

template <typename F>
void run_variant(Tally& tally, const std::string& label, F&& f) {
  try {
    f();
    ++tally.read;
  } catch (const Error& e) {
    ++tally.errors[error_class(e)];
    // A UsageError means the library blamed its caller for bad data.
    if (dynamic_cast<const UsageError*>(&e)) tally.failures.push_back(label + ": UsageError: " + e.what());
  } catch (const fuzzing::ZarrInconsistency& e) {
    tally.failures.push_back(label + ": " + e.what);
  } catch (const fuzzing::ZarrArrayInconsistency& e) {
    tally.failures.push_back(label + ": " + e.what);
  } catch (const std::exception& e) {
    tally.failures.push_back(label + ": " + typeid(e).name() + ": " + e.what());
  }
}

// The Release stage sweeps every case; the sanitizer stage, there to catch memory errors on the
// same paths (the Release run already checks every outcome), takes every other length and byte.
#ifdef TESSERA_SANITIZED
constexpr std::size_t kSweepStride = 2;
#else
constexpr std::size_t kSweepStride = 1;
#endif

// Truncations at every length; bit flips of every bit for objects up to `all_bits_limit` bytes,
// else one bit per byte (rotating through the bit positions).
template <typename F>
void sweep_bytes(const std::vector<std::byte>& original, std::size_t all_bits_limit, F&& variant) {
  for (std::size_t len = 0; len < original.size(); len += kSweepStride)
    variant(std::vector<std::byte>(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(len)),
            "truncated to " + std::to_string(len));
  const bool every_bit = original.size() <= all_bits_limit;
  for (std::size_t i = 0; i < original.size(); i += kSweepStride) {
    for (int bit = 0; bit < 8; ++bit) {
      if (!every_bit && bit != static_cast<int>((i / kSweepStride) % 8)) continue;
      auto flipped = original;
      flipped[i] ^= static_cast<std::byte>(1u << bit);
      variant(std::move(flipped), "byte " + std::to_string(i) + " bit " + std::to_string(bit));
    }
  }
}

void report(const Tally& t, const std::string& what) {
  std::string summary = what + ": " + std::to_string(t.read) + " read";
  for (const auto& [k, n] : t.errors) summary += ", " + std::to_string(n) + " " + k;
  std::printf("%s\n", summary.c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(t.failures.size(), 20); ++i) ADD_FAILURE() << t.failures[i];
  EXPECT_TRUE(t.failures.empty()) << t.failures.size() << " failures";
}

TEST(ZarrCorruption, EveryArrayObjectTruncatedAndBitFlipped) {
  Tally tally;
  std::uint64_t objects = 0;
  // Many fixture arrays share a zarr.json byte for byte; each distinct one is swept once.
  std::set<std::string> swept_metadata;
  for (const auto& fa : test::all_fixture_arrays()) {
    // The array's objects, keyed as in its store.
    std::map<std::string, std::vector<std::byte>> files;
    const fs::path dir = fa.root / fa.path;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file())
        files[fs::relative(e.path(), fa.root).generic_string()] = testing::read_file_bytes(e.path());
    io::MemoryStore store;
    for (const auto& [k, v] : files) store.put(k, v);
    ASSERT_GT(fuzzing::exercise_zarr_array(store, fa.path), 0u) << fa.name();
    for (const auto& entry : files) {
      // Plain references: clang before 16 cannot capture structured bindings in lambdas.
      const std::string& key = entry.first;
      const std::vector<std::byte>& original = entry.second;
      const bool metadata = key.ends_with("zarr.json");
      if (metadata &&
          !swept_metadata.insert(std::string(reinterpret_cast<const char*>(original.data()), original.size())).second)
        continue;
      ++objects;
      sweep_bytes(original, metadata ? 0 : 256, [&](std::vector<std::byte> bytes, const std::string& how) {
        store.put(key, bytes);
        run_variant(tally, fa.name() + " " + key + " " + how, [&] { fuzzing::exercise_zarr_array(store, fa.path); });
      });
      // An empty object and a missing one.
      store.erase(key);
      run_variant(tally, fa.name() + " " + key + " missing", [&] { fuzzing::exercise_zarr_array(store, fa.path); });
      store.put(key, original);
    }
  }
  EXPECT_GE(objects, 100u);
  report(tally, "array objects");
  EXPECT_GT(tally.read, 0u);
  EXPECT_GT(tally.errors["FormatError"], 0u);
}

TEST(ZarrCorruption, GroupMetadataTruncatedAndBitFlipped) {
  Tally tally;
  for (const fs::path& file : test::all_metadata_files()) {
    const auto original = testing::read_file_bytes(file);
    if (testing::read_file_text(file).find("\"node_type\": \"group\"") == std::string::npos) continue;
    sweep_bytes(original, 0, [&](std::vector<std::byte> bytes, const std::string& how) {
      run_variant(tally, file.string() + " " + how, [&] { fuzzing::exercise_zarr_metadata(bytes); });
    });
  }
  report(tally, "group metadata");
}

TEST(ZarrCorruption, ShardObjectsUnderEveryFuzzTemplate) {
  Tally tally;
  for (const auto& fa : test::all_fixture_arrays()) {
    for (const auto& e : fs::recursive_directory_iterator(fa.root / fa.path / "c")) {
      if (!e.is_regular_file()) continue;
      const auto original = testing::read_file_bytes(e.path());
      run_variant(tally, e.path().string(), [&] {
        fuzzing::exercise_shard_object(original);
        fuzzing::exercise_vlen(original);
      });
    }
  }
  report(tally, "fuzz templates");
}

TEST(ZarrCorruption, AbsurdGeometriesAreRefusedBeforeAllocating) {
  const auto base = [](const std::string& shape, const std::string& chunk, const std::string& inner) {
    return R"({"shape":)" + shape +
           R"(,"data_type":"uint64","chunk_grid":{"name":"regular","configuration":{"chunk_shape":)" + chunk +
           R"(}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"sharding_indexed","configuration":)"
           R"({"chunk_shape":)" +
           inner +
           R"(,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}],"index_codecs":)"
           R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}]}}],"zarr_format":3,"node_type":"array"})";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base("[4611686018427387904]", "[4611686018427387904]", "[1]"), "LimitError"},  // 16·K overflows
      {base("[16]", "[1099511627776]", "[1]"), "LimitError"},                         // 16 TiB index
      {base("[4294967296,4294967296]", "[4294967296,4294967296]", "[4294967296,4294967296]"), "LimitError"},
      {base("[16]", "[16]", "[1099511627776]"), "FormatError"},  // inner does not divide
      {base("[18446744073709551615]", "[1]", "[1]"), "read"},    // huge, empty: nothing stored
  };
  for (const auto& [meta, expected] : cases) {
    SCOPED_TRACE(meta);
    io::MemoryStore store;
    store.put("a/zarr.json", test::as_bytes(meta));
    store.put("a/c/0", std::vector<std::byte>(100));
    Tally tally;
    run_variant(tally, "crafted", [&] {
      const Array array = Array::open(store, "a", ReadOptions{.max_chunk_bytes = 1 << 20});
      array.read_shard_index(Coords(array.rank(), 0));
      array.read_stored_chunk(Coords(array.rank(), 0));
    });
    EXPECT_TRUE(tally.failures.empty()) << tally.failures.front();
    if (expected == "read") EXPECT_EQ(tally.read + tally.errors["FormatError"], 1u);
    else EXPECT_EQ(tally.errors[expected], 1u);
  }
}

}  // namespace
}  // namespace tessera::zarr
