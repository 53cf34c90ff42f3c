// read_box reads a raw tile straight into the output when the tile is selected whole and fills
// one contiguous run of it (row-chunked data read whole or by whole chunks), and through a staging
// buffer otherwise. Each case checks the values against the written array (uint32 logical indices)
// and which reads landed in the output buffer.
#include <gtest/gtest.h>

#include <mutex>
#include <numeric>
#include <vector>

#include "support/testing.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"

namespace tessera::tet {
namespace {

// Records where each read of a mapped file's bytes was copied to. It offers the map's views, as a
// local file does, so the reader reads it directly (a source without views is read through a
// prefetching buffer).
class RecordingSource final : public io::ByteSource {
 public:
  explicit RecordingSource(std::unique_ptr<io::ByteSource> inner) : inner_(std::move(inner)) {}
  std::uint64_t size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  const std::byte* view(std::uint64_t offset, std::uint64_t len) const override { return inner_->view(offset, len); }
  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    inner_->read_at(offset, dst);
    const std::lock_guard lock(mutex_);
    reads_.push_back(dst);
  }
  // Reads copied into `out`, and all reads, since the last call.
  std::pair<std::size_t, std::size_t> take(std::span<const std::byte> out) const {
    const std::lock_guard lock(mutex_);
    std::size_t inside = 0;
    for (const auto& r : reads_) inside += r.data() >= out.data() && r.data() + r.size() <= out.data() + out.size();
    const std::size_t all = reads_.size();
    reads_.clear();
    return {inside, all};
  }

 private:
  std::unique_ptr<io::ByteSource> inner_;
  mutable std::mutex mutex_;
  mutable std::vector<std::span<std::byte>> reads_;
};

struct Case {
  testing::TempDir dir;
  std::vector<std::uint64_t> shape;
  std::shared_ptr<RecordingSource> source;
  std::optional<TetFile> file;

  // A uint32 dataset whose values are their logical indices, in raw chunks of `chunks`.
  Case(std::vector<std::uint64_t> shape_, std::vector<std::uint64_t> chunks) : shape(std::move(shape_)) {
    const auto path = dir / "in_place.tet";
    std::uint64_t n = 1;
    for (auto e : shape) n *= e;
    std::vector<std::uint32_t> values(n);
    std::iota(values.begin(), values.end(), 0u);
    TetWriter writer(path.string(), WriterOptions{});
    writer.add_dataset({"v", DType::U32, shape, chunks, Codec::Raw});
    writer.write_dataset(0, std::as_bytes(std::span(values)));
    writer.commit();
    source = std::make_shared<RecordingSource>(io::open_file(path.string(), io::OpenMode::Mmap));
    file.emplace(TetFile::open(source));
    source->take({});
  }

  // Reads `box` and checks every value; returns {reads into the output, all reads}.
  std::pair<std::size_t, std::size_t> read(const Box& box, unsigned threads = 1) {
    std::uint64_t count = 1;
    for (const auto& r : box) count *= r.count();
    std::vector<std::uint32_t> out(count, 0xFFFFFFFFu);
    const auto bytes = std::as_writable_bytes(std::span(out));
    file->read_box(*file->find("v"), box, bytes, {threads});
    std::vector<std::uint64_t> idx(box.size(), 0);
    for (std::uint64_t k = 0; k < count; ++k) {
      std::uint64_t logical = 0;
      for (std::size_t d = 0; d < box.size(); ++d) logical = logical * shape[d] + box[d].start + idx[d] * box[d].step;
      if (out[k] != logical) {
        ADD_FAILURE() << "element " << k << " is " << out[k] << ", expected " << logical;
        break;
      }
      for (std::size_t d = box.size(); d-- > 0;) {
        if (++idx[d] < box[d].count()) break;
        idx[d] = 0;
      }
    }
    return source->take(bytes);
  }
};

TEST(TetReadInPlace, WholeRowChunksAreReadStraightIntoTheOutput) {
  Case c({64, 64, 128}, {4, 64, 128});  // 16 chunks of 128 KiB, each whole rows
  EXPECT_EQ(c.read({{0, 64, 1}, {0, 64, 1}, {0, 128, 1}}, 2), std::make_pair(std::size_t{16}, std::size_t{16}));
  // Whole chunks 2..5 in the middle.
  EXPECT_EQ(c.read({{8, 24, 1}, {0, 64, 1}, {0, 128, 1}}), std::make_pair(std::size_t{4}, std::size_t{4}));
  // Rows 6..24: chunk 1 is cut, so it goes through the staging buffer; the rest in place.
  EXPECT_EQ(c.read({{6, 24, 1}, {0, 64, 1}, {0, 128, 1}}), std::make_pair(std::size_t{4}, std::size_t{5}));
}

TEST(TetReadInPlace, InnerAxesWholeAndOuterOnesSingleFormARun) {
  // Tiles of one index on axis 0, 8 of 32 on axis 1, all of axis 2: each is a contiguous run.
  Case c({4, 32, 1024}, {1, 8, 1024});
  EXPECT_EQ(c.read({{0, 4, 1}, {0, 32, 1}, {0, 1024, 1}}, 2), std::make_pair(std::size_t{16}, std::size_t{16}));
  // Only part of axis 2 selected: no tile is whole, every one is staged.
  EXPECT_EQ(c.read({{0, 4, 1}, {0, 32, 1}, {0, 512, 1}}), std::make_pair(std::size_t{0}, std::size_t{16}));
}

TEST(TetReadInPlace, OtherTilesAreStagedAndStillExact) {
  // Column chunks: a whole tile is 256 runs of the output, not one.
  Case cols({512, 1024}, {512, 256});
  EXPECT_EQ(cols.read({{0, 512, 1}, {0, 1024, 1}}, 2).first, 0u);
  // Strided selections and a last chunk cut short by the shape (10 rows of 4-row chunks).
  Case rows({10, 65536}, {4, 65536});
  EXPECT_EQ(rows.read({{0, 10, 2}, {0, 65536, 1}}).first, 0u);
  const auto whole = rows.read({{0, 10, 1}, {0, 65536, 1}}, 2);
  EXPECT_EQ(whole.second, 3u);
  EXPECT_GE(whole.first, 2u);  // the two full chunks; the edge one as its stored size allows
}

}  // namespace
}  // namespace tessera::tet
