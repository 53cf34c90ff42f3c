// Reader behaviour not covered by the conformance sweeps: chunk-touch arithmetic, the pread
// path (no memory map), ranged-read counts, and decode_chunk's buffer contract.
#include <gtest/gtest.h>

#include <cstring>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/synth.hpp"

namespace tessera::tet {
namespace {

using testing::conformance_dir;
using testing::TempDir;

std::vector<std::uint64_t> naive_touched(const AxisRange& r, std::uint64_t cs) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = r.start; i < r.stop; i += r.step)
    if (out.empty() || out.back() != i / cs) out.push_back(i / cs);
  return out;
}

TEST(TouchedChunks, MatchesEnumeratingEverySelectedIndex) {
  for (std::uint64_t cs = 1; cs <= 9; ++cs)
    for (std::uint64_t start = 0; start < 20; ++start)
      for (std::uint64_t stop = start + 1; stop <= 40; stop += 3)
        for (std::uint64_t step = 1; step <= 12; ++step) {
          const AxisRange r{start, stop, step};
          EXPECT_EQ(touched_chunks(r, cs), naive_touched(r, cs)) << start << ":" << stop << ":" << step << " cs " << cs;
        }
}

TEST(TouchedChunks, SpecExampleOnLargeTet) {
  // tet.md §4.1: rows 1:33:4 × columns 3:60:7 of [34,64]/[4,4] touch 8 × 9 chunks.
  EXPECT_EQ(touched_chunks({1, 33, 4}, 4).size(), 8u);
  EXPECT_EQ(touched_chunks({3, 60, 7}, 4).size(), 9u);
}

TEST(TetFileRead, PreadAndMmapGiveTheSameValues) {
  const auto path = (conformance_dir() / "tetration/generated/zstd_f64_3d.tet").string();
  const TetFile mapped = TetFile::open(path, io::OpenMode::Mmap);
  const TetFile pread = TetFile::open(path, io::OpenMode::Pread);
  const Dataset& ds = *mapped.find("cube");
  std::vector<double> a(ds.element_count), b(ds.element_count);
  mapped.read_box(ds, ds.full_box(), std::as_writable_bytes(std::span(a)));
  pread.read_box(*pread.find("cube"), ds.full_box(), std::as_writable_bytes(std::span(b)), {1});
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], 0.5 * static_cast<double>(i));
    EXPECT_EQ(b[i], a[i]);
  }
}

// A source that is not memory-resident (pread, remote) is opened with one parallel fetch of its
// first and last 64 KiB; a file under about 1 MiB is thereby read whole, and its chunks come from
// memory.
TEST(TetFileRead, ASmallFileIsReadWholeWhenOpened) {
  const auto file_source = io::open_file((conformance_dir() / "tetration/large.tet").string(), io::OpenMode::Pread);
  auto counting = std::make_shared<io::CountingSource>(*file_source);
  const TetFile file = TetFile::open(counting);
  EXPECT_EQ(counting->reads(), 1u);
  EXPECT_EQ(counting->bytes(), file_source->size());
  counting->reset();
  std::vector<float> v(1);
  file.read_box(*file.find("a"), {{9, 10, 1}, {13, 14, 1}}, std::as_writable_bytes(std::span(v)));
  EXPECT_EQ(v[0], 9.0f * 64 + 13);
  EXPECT_EQ(counting->reads(), 0u);
}

TEST(TetFileRead, ReadsOnlyTheTouchedChunks) {
  TempDir dir;
  const std::string path = (dir / "big.tet").string();
  tet::SynthOptions options;
  options.datasets.push_back(tet::parse_synth_spec("a:f32:1024x1024:256x256"));
  options.at = "0";
  tet::synth_write(path, options);  // 4 MiB in 16 raw chunks of 256 KiB
  const auto file_source = io::open_file(path, io::OpenMode::Pread);
  auto counting = std::make_shared<io::CountingSource>(*file_source);
  const TetFile file = TetFile::open(counting);
  EXPECT_EQ(counting->reads(), 2u) << "the head and the tail, more than 1 MiB apart";
  EXPECT_EQ(counting->bytes(), 2u * 64 * 1024);
  counting->reset();
  // One element in chunk (2, 3): exactly one read, of that chunk's payload.
  std::vector<float> v(1), whole(1024 * 1024);
  const Dataset& ds = *file.find("a");
  file.read_box(ds, {{600, 601, 1}, {800, 801, 1}}, std::as_writable_bytes(std::span(v)));
  EXPECT_EQ(counting->reads(), 1u);
  EXPECT_EQ(counting->bytes(), 256u * 256 * 4);
  const TetFile mapped = TetFile::open(path);
  mapped.read_box(*mapped.find("a"), mapped.find("a")->full_box(), std::as_writable_bytes(std::span(whole)));
  EXPECT_EQ(v[0], whole[600 * 1024 + 800]);
}

TEST(TetFileRead, DecodeChunkRequiresTheExactTileSize) {
  const TetFile file = TetFile::open((conformance_dir() / "tetration/sample.tet").string());
  std::vector<std::byte> small(8), exact(16);
  EXPECT_THROW(file.decode_chunk(0, small), UsageError);
  file.decode_chunk(0, exact);
  float v[4];
  std::memcpy(v, exact.data(), 16);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 2.0f);
  EXPECT_EQ(v[2], 4.0f);
  EXPECT_EQ(v[3], 5.0f);
}

TEST(TetFileOpen, ErrorsCarryThePathAndStructure) {
  std::vector<std::byte> bytes(10);
  auto src = io::owned_memory_source(bytes, "tiny.tet");
  try {
    TetFile::open(std::shared_ptr<const io::ByteSource>(std::move(src)));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "file too short for superblock: need 32 bytes, got 10");
    EXPECT_EQ(e.path(), "tiny.tet");
    EXPECT_EQ(e.structure(), "superblock");
  }
}

TEST(TetCliErrors, UnreadableFilesNameThePath) {
  const testing::RunResult r = testing::run_cli({"tet", "info", "/nonexistent-dir/x.tet"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: /nonexistent-dir/x.tet: cannot open: No such file or directory\n");
}

}  // namespace
}  // namespace tessera::tet
