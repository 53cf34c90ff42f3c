// Robustness of the `.tet` reader against damaged files: every conformance file truncated at
// every length and with its leading bits flipped, plus hand-made headers declaring absurd counts
// and extents. Each variant must end in a successful read or a clean FormatError (the error class
// for malformed input); a crash, a sanitizer report, any other exception or an inconsistent read
// fails the test.
//
// Each variant goes through the fuzz target's `exercise_tet_reader` (open, decode every chunk,
// full and strided box reads with the fuzzer's size caps), so the sweep and the fuzzer test the
// same paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "crafted_file.hpp"
#include "support/testing.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/verify.hpp"

#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "../../fuzz/fuzz_tet_reader.cpp"

namespace tessera::tet {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

#if defined(TESSERA_SANITIZED) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // the library under test is (tests themselves are not instrumented)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Only the first bytes are swept: they hold every header, record and index entry of the small
// fixtures, and the payload bytes behind them are already covered by the fuzzer.
constexpr std::size_t kSweepPrefix = 4096;
// Bytes parsed per file by the bit-flip sweep before it starts sampling (every k-th bit, k odd
// so every bit position within a byte is still visited). Sanitizers make each parse ~5× slower.
constexpr std::uint64_t kFlipBudgetBytes = kSanitized ? (64ull << 20) : (2048ull << 20);

std::vector<fs::path> conformance_tet_files() {
  std::vector<fs::path> files;
  const fs::path root = testing::conformance_dir() / "tetration";
  for (const fs::path& dir : {root, root / "generated"})
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".tet") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// How the variants of one file ended.
struct Tally {
  std::uint64_t read = 0;
  std::uint64_t rejected = 0;         // FormatError
  std::vector<std::string> failures;  // anything else, described
  std::uint64_t total() const { return read + rejected + failures.size(); }
};

std::string error_class(const Error& e) {
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const LimitError*>(&e)) return "LimitError";
  if (dynamic_cast<const UsageError*>(&e)) return "UsageError";
  if (dynamic_cast<const UnsupportedError*>(&e)) return "UnsupportedError";
  return "Error";
}

void run_variant(std::span<const std::byte> bytes, const std::string& label, Tally& tally) {
  try {
    fuzzing::exercise_tet_reader(bytes);
    ++tally.read;
  } catch (const FormatError&) {
    ++tally.rejected;
  } catch (const Error& e) {
    tally.failures.push_back(label + ": " + error_class(e) + " instead of FormatError: " + e.what());
  } catch (const fuzzing::ReaderInconsistency& e) {
    tally.failures.push_back(label + ": " + e.what);
  } catch (const std::exception& e) {
    tally.failures.push_back(label + ": " + typeid(e).name() + ": " + e.what());
  } catch (...) {
    tally.failures.push_back(label + ": non-standard exception");
  }
}

void report(const std::string& what, const fs::path& file, const Tally& tally) {
  std::printf("%s %s: %llu variants, %llu read, %llu FormatError, %zu failed\n", what.c_str(), file.filename().c_str(),
              static_cast<unsigned long long>(tally.total()), static_cast<unsigned long long>(tally.read),
              static_cast<unsigned long long>(tally.rejected), tally.failures.size());
  // The first few are enough to debug; a systematic failure would otherwise flood the log.
  for (std::size_t i = 0; i < std::min<std::size_t>(tally.failures.size(), 10); ++i) ADD_FAILURE() << tally.failures[i];
}

TEST(CorruptionSweep, ConformanceFilesAreFound) {
  // Guards the sweeps below against passing vacuously on a missing directory.
  EXPECT_GE(conformance_tet_files().size(), 12u);
}

TEST(CorruptionSweep, EveryTruncationFailsCleanly) {
  for (const fs::path& path : conformance_tet_files()) {
    const std::vector<std::byte> bytes = testing::read_file_bytes(path);
    Tally tally;
    const std::size_t n = std::min(kSweepPrefix, bytes.size());
    for (std::size_t len = 0; len < n; ++len)
      run_variant(std::span(bytes).first(len), path.filename().string() + " truncated to " + std::to_string(len),
                  tally);
    report("truncate", path, tally);
    // A strict prefix of a valid file can only read when the cut lands in ignored trailing bytes,
    // which no fixture has; every cut must be detected.
    EXPECT_EQ(tally.read, 0u) << path;
  }
}

TEST(CorruptionSweep, BitFlipsFailCleanlyOrRead) {
  for (const fs::path& path : conformance_tet_files()) {
    std::vector<std::byte> bytes = testing::read_file_bytes(path);
    const std::uint64_t bits = 8 * std::min(kSweepPrefix, bytes.size());
    std::uint64_t stride = (bits * bytes.size() + kFlipBudgetBytes - 1) / kFlipBudgetBytes;
    stride = std::max<std::uint64_t>(stride, 1) | 1;
    Tally tally;
    for (std::uint64_t bit = 0; bit < bits; bit += stride) {
      std::byte& b = bytes[bit / 8];
      const std::byte mask{static_cast<unsigned char>(1u << (bit % 8))};
      b ^= mask;
      run_variant(bytes, path.filename().string() + " bit " + std::to_string(bit) + " flipped", tally);
      b ^= mask;
    }
    report("bit-flip (every " + std::to_string(stride) + ". bit)", path, tally);
  }
}

// ---- Huge counts and extents ---------------------------------------------------------------
// Each case patches one field of a small valid file; open must reject it with a FormatError
// before sizing anything by the patched value (an absurd allocation would surface as
// std::bad_alloc or a sanitizer report, both failures here).

std::vector<std::byte> sample_tet() {
  return testing::read_file_bytes(testing::conformance_dir() / "tetration/sample.tet");
}

template <typename T>
std::vector<std::byte> patched(std::vector<std::byte> bytes, std::size_t offset, T value) {
  store_le<T>(bytes.data() + offset, value);
  return bytes;
}

// sample.tet (§1.11) with the footer flag set and `json` plus a tail declaring `json_len`.
std::vector<std::byte> with_footer(std::string_view json, std::uint64_t json_len) {
  std::vector<std::byte> bytes = patched<std::uint32_t>(sample_tet(), 12, Superblock::kHistoryFooterFlag);
  const auto* p = reinterpret_cast<const std::byte*>(json.data());
  bytes.insert(bytes.end(), p, p + json.size());
  std::byte tail[FooterTail::kSize];
  FooterTail{json_len, 1}.encode_to(tail);
  bytes.insert(bytes.end(), tail, tail + sizeof tail);
  return bytes;
}

void expect_format_error(const std::vector<std::byte>& bytes, const std::string& label) {
  try {
    fuzzing::exercise_tet_reader(bytes);
    ADD_FAILURE() << label << ": opened";
  } catch (const FormatError&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": " << typeid(e).name() << ": " << e.what();
  }
}

// sample.tet offsets (§1.11).
constexpr std::size_t kDatasetCount = 8, kBlobLen = 32, kNameLen = 40, kNdim = 48, kShape = 72, kChunkShape = 88,
                      kEntryCount = 112;

TEST(HugeCounts, DatasetCount) {
  expect_format_error(patched<std::uint32_t>(sample_tet(), kDatasetCount, 0xFFFFFFFFu), "dataset_count 2^32-1");
}

TEST(HugeCounts, EntryCount) {
  // 2^61 + 2 entries wrap 32 + 104·count to the real region length (240) in 64-bit arithmetic.
  for (const std::uint64_t count : {kU64Max, kU64Max / 104, (std::uint64_t{1} << 61) + 2, std::uint64_t{1} << 40})
    expect_format_error(patched<std::uint64_t>(sample_tet(), kEntryCount, count),
                        "entry_count " + std::to_string(count));
}

TEST(HugeCounts, Ndim) {
  for (const std::uint32_t ndim : {0u, 9u, 0x7FFFFFFFu, 0xFFFFFFFFu})
    expect_format_error(patched<std::uint32_t>(sample_tet(), kNdim, ndim), "ndim " + std::to_string(ndim));
}

TEST(HugeCounts, NameLen) {
  for (const std::uint32_t len : {0xFFFFFFFFu, 0xFFFFFFF8u, 0x80000000u})
    expect_format_error(patched<std::uint32_t>(sample_tet(), kNameLen, len), "name_len " + std::to_string(len));
}

TEST(HugeCounts, DatasetBlobLen) {
  // kU64Max - 39 makes 40 + len exactly 2^64 - 1; kU64Max - 38 wraps to 0.
  for (const std::uint64_t len : {kU64Max, kU64Max - 39, kU64Max - 38, std::uint64_t{1} << 62})
    expect_format_error(patched<std::uint64_t>(sample_tet(), kBlobLen, len), "dataset_blob_len " + std::to_string(len));
}

TEST(HugeCounts, MetadataRefLen) {
  for (const char* ref : {R"({"offset":0,"len":18446744073709551615})", R"({"offset":0,"len":9223372036854775808})",
                          R"({"offset":18446744073709551615,"len":1})", R"({"offset":18446744073709551600,"len":100})",
                          R"({"offset":0,"len":16777217})"}) {
    const std::string json = std::string(R"({"history":[],"metadata_ref":)") + ref + "}";
    expect_format_error(with_footer(json, json.size()), std::string("metadata_ref ") + ref);
  }
}

TEST(HugeCounts, HistoryJsonLen) {
  const std::string json = R"({"history":[]})";
  // kU64Max - 15 makes 16 + len wrap to 0; the others exceed the file.
  for (const std::uint64_t len : {kU64Max, kU64Max - 15, kU64Max - 16, std::uint64_t{1} << 40, json.size() + 1000})
    expect_format_error(with_footer(json, len), "history_json_len " + std::to_string(len));
}

TEST(HugeCounts, ShapeExtentsNear2To64) {
  const auto sample = sample_tet();
  // f32 elements: the logical byte size overflows.
  expect_format_error(patched<std::uint64_t>(sample, kShape, kU64Max), "shape[0] 2^64-1");
  expect_format_error(patched<std::uint64_t>(sample, kShape, std::uint64_t{1} << 62), "shape[0] 2^62");
  expect_format_error(patched<std::uint64_t>(patched<std::uint64_t>(sample, kShape, std::uint64_t{1} << 31), kShape + 8,
                                             std::uint64_t{1} << 31),
                      "shape 2^31 x 2^31 (grid of 2^61 chunks declared by 2 entries)");
  // Chunk extents near 2^64: a one-cell grid that the two entries no longer match.
  expect_format_error(
      patched<std::uint64_t>(patched<std::uint64_t>(sample, kChunkShape, kU64Max), kChunkShape + 8, kU64Max),
      "chunk_shape 2^64-1");
  expect_format_error(patched<std::uint64_t>(sample, kChunkShape + 8, kU64Max - 1), "chunk_shape[1] 2^64-2");
}

// ---- Extents at the very top of the u64 range ------------------------------------------------
// A u8 dataset may legally span 2^64 - 1 bytes; its grid and tile arithmetic must not wrap.

// One u8 dataset of `shape`/`chunk` (rank 1) with zstd entries of the given raw lengths, each
// payload a tiny valid frame (the reader checks lengths only when decoding).
std::vector<std::byte> u8_file(std::uint64_t shape, std::uint64_t chunk, const std::vector<std::uint64_t>& raw_lens) {
  return crafted::u8_file(shape, chunk, raw_lens, codec::zstd_compress(std::vector<std::byte>(4)));
}

TEST(ExtentsNear2To64, SingleChunkOfTheWholeRange) {
  const auto bytes = u8_file(kU64Max, kU64Max, {kU64Max});
  const TetFile file = TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(bytes)));
  const Dataset& ds = file.datasets().at(0);
  EXPECT_EQ(ds.grid, std::vector<std::uint64_t>{1});
  ASSERT_EQ(ds.entry_of_chunk.size(), 1u);
  EXPECT_EQ(ds.logical_bytes, kU64Max);
  EXPECT_TRUE(fuzzing::exercise_tet_reader(bytes));  // skipped by the size caps, must not crash
}

TEST(ExtentsNear2To64, ClippedLastTileIsExact) {
  // Tiles of 2^63 over 2^64 - 1 elements: the second tile is clipped to 2^63 - 1.
  const std::uint64_t half = std::uint64_t{1} << 63;
  const auto bytes = u8_file(kU64Max, half, {half, half - 1});
  const TetFile file = TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(bytes)));
  EXPECT_EQ(file.datasets().at(0).grid, (std::vector<std::uint64_t>{2}));
  expect_format_error(u8_file(kU64Max, half, {half, half}), "clipped tile declared unclipped");
  EXPECT_EQ(touched_chunks({0, kU64Max, 1}, half), (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(touched_chunks({kU64Max - 2, kU64Max, 1}, half), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(touched_chunks({1, kU64Max, half}, half), (std::vector<std::uint64_t>{0, 1}));
}

TEST(HugeCounts, ManyDatasetsOpenInLinearTime) {
  // 50 000 one-element datasets with one raw entry each (about 7 MB). The semantic pass once
  // scanned every entry for every dataset: 2.5e9 steps here, minutes under sanitizers.
  constexpr std::uint32_t kDatasets = 50000;
  std::vector<std::byte> blob;
  for (std::uint32_t i = 0; i < kDatasets; ++i)
    DatasetRecord{"d" + std::to_string(i), tag_from_dtype(DType::U8), {1}, {1}}.append_to(blob);
  const std::uint64_t index_offset = align8(40 + blob.size());
  const std::uint64_t index_len = ChunkIndexHeader::kSize + std::uint64_t{ChunkEntry::kSize} * kDatasets;
  std::vector<std::byte> bytes(index_offset + index_len + kDatasets, std::byte{1});
  Superblock{kLayoutVersion, kDatasets, 0, index_offset, index_len}.encode_to(bytes.data());
  store_le<std::uint64_t>(bytes.data() + 32, blob.size());
  std::copy(blob.begin(), blob.end(), bytes.begin() + 40);
  std::fill(bytes.begin() + 40 + blob.size(), bytes.begin() + index_offset, std::byte{0});
  ChunkIndexHeader{1, kDatasets, 0, 0}.encode_to(bytes.data() + index_offset);
  for (std::uint32_t i = 0; i < kDatasets; ++i) {
    ChunkEntry e;
    e.dataset_id = i;
    e.payload_offset = index_offset + index_len + i;
    e.raw_byte_len = e.stored_byte_len = 1;
    e.encode_to(bytes.data() + index_offset + ChunkIndexHeader::kSize + std::uint64_t{ChunkEntry::kSize} * i);
  }
  const TetFile file = TetFile::open(std::shared_ptr<const io::ByteSource>(io::memory_source(bytes)));
  EXPECT_EQ(file.datasets().size(), kDatasets);
  EXPECT_EQ(dataset_rule_violations(file.layout()).size(), kDatasets);
  // The single-dataset form gives the same answer as the batch form.
  auto broken = file.layout();
  broken.entries[777].raw_byte_len = 2;
  EXPECT_EQ(dataset_rule_violations(broken)[777], dataset_rule_violation(broken, 777));
  EXPECT_EQ(dataset_rule_violation(broken, 777), "dataset 777 chunk 777: raw_byte_len 2 != tile 1");
}

// ---- verify's decode check on tiles that claim more than they hold ------------------------

TEST(VerifyDecodeCheck, HugeDeclaredTileIsAFindingNotAnAllocation) {
  // A valid header for a 1 TiB u8 tile whose 13-byte payload decodes to 4 bytes.
  const auto bytes = u8_file(std::uint64_t{1} << 40, std::uint64_t{1} << 40, {std::uint64_t{1} << 40});
  const VerifyReport report = verify(*io::memory_source(bytes), {.deep_decode = true, .threads = 1});
  EXPECT_FALSE(report.ok);
  const auto it = std::find_if(report.findings.begin(), report.findings.end(),
                               [](const Finding& f) { return f.check == "chunk_decode" && !f.ok; });
  ASSERT_NE(it, report.findings.end());
  EXPECT_EQ(it->detail, "chunk 0: decoded payload length 4 != raw_byte_len 1099511627776");
}

// The streaming check must fail exactly where, and with the text, the whole-tile decode fails.
std::string outcome(const std::function<void()>& run) {
  try {
    run();
    return "ok";
  } catch (const FormatError& e) {
    return e.what();
  }
}

TEST(VerifyDecodeCheck, StreamingCheckMatchesWholeTileDecode) {
  const std::vector<std::byte> data(300000, std::byte{7});
  const auto sized = codec::zstd_compress(data);
  const auto unsized = codec::zstd_compress(data, {.level = 3, .content_size = false});
  auto two_frames = sized;
  two_frames.insert(two_frames.end(), unsized.begin(), unsized.end());
  const std::vector<std::byte> garbage(64, std::byte{0x5A});
  const std::vector<std::pair<std::vector<std::byte>, std::string>> payloads{
      {sized, "content size"},
      {unsized, "no content size"},
      {two_frames, "two frames"},
      {std::vector<std::byte>(sized.begin(), sized.end() - 5), "truncated"},
      {std::vector<std::byte>(unsized.begin(), unsized.begin() + 12), "header only"},
      {garbage, "garbage"},
      {{}, "empty"}};
  for (const auto& case_ : payloads) {
    const std::vector<std::byte>& payload = case_.first;  // named: lambdas cannot capture bindings
    for (const std::uint64_t expected : {std::uint64_t{1}, std::uint64_t{299999}, std::uint64_t{300000},
                                         std::uint64_t{300001}, std::uint64_t{600000}}) {
      std::vector<std::byte> dst(expected);
      EXPECT_EQ(outcome([&] { codec::zstd_check_decoded_length(payload, expected); }),
                outcome([&] { codec::zstd_decompress_into(payload, dst); }))
          << case_.second << ", expected " << expected;
    }
  }
}

}  // namespace
}  // namespace tessera::tet
