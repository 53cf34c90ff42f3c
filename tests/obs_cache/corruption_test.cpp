// Corrupt cache files (C7–C9): truncated, bit-flipped in the footer or the string offsets, codes
// out of range, the wrong field: each is detected, reported, deleted and rebuilt, and `take`
// returns the right values; a flipped footer never crashes the reader.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "obs_cache/obs_cache_support.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/columnar/arrow_ipc.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using obs_test::expect_take;
using obs_test::make_obs_dataset;
using obs_test::random_cells;
using Bytes = std::vector<std::byte>;

class ObsCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = make_obs_dataset(600, 70, 3);
    d_->open()->localize_all();
    cells_ = random_cells(600, 400, 3);
    cells_.push_back(0);
    cells_.push_back(599);
  }
  std::string file_of(const std::string& column) const {
    return d_->open()->cache_dir() + "/" + quote_column_file_name(column) + ".arrow";
  }
  // File offset of the buffer `pick` selects in record batch `batch` of the good file.
  std::size_t buffer_offset(
      const std::string& column, std::size_t batch,
      const std::function<std::span<const std::byte>(const columnar::ArrowArrayView&)>& pick) const {
    const auto source = io::open_file(file_of(column));
    const auto file = columnar::ArrowFile::open(*source);
    return static_cast<std::size_t>(pick(file.column(batch, 0)).data() - source->view(0, source->size()));
  }
  // Replaces the cache file of `column` with `bytes` (a new inode, as a writer would), takes the
  // column through a fresh store and checks the result, the warning and the rebuilt file.
  void expect_rebuilt(const std::string& column, const Bytes& bytes, const std::string& what) {
    SCOPED_TRACE(what);
    const std::string path = file_of(column);
    const Bytes good = testing::read_file_bytes(path);
    testing::write_file_bytes(path + ".new", bytes);
    std::filesystem::rename(path + ".new", path);
    std::vector<std::string> warnings;
    const auto store = d_->open([&](const std::string& w) { warnings.push_back(w); });
    const std::vector<std::string> cols = {column};
    const auto got = store->take(cells_, cols);
    ASSERT_EQ(got.size(), 1u);
    expect_take(*d_, got[0], cells_);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("corrupt"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find(path), std::string::npos) << warnings[0];
    EXPECT_EQ(testing::read_file_bytes(path), good) << "the rebuilt file equals the first build";
    EXPECT_TRUE(obs_test::files_containing(d_->cache, ".tmp").empty());
  }

  std::unique_ptr<obs_test::ObsDataset> d_;
  std::vector<std::int64_t> cells_;
};

TEST_F(ObsCorruption, TruncatedFilesAreRebuilt) {
  for (const std::string column : {"donor/id", "cell type", "age"}) {
    const Bytes good = testing::read_file_bytes(file_of(column));
    expect_rebuilt(column, Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2)),
                   column + " half");
    expect_rebuilt(column, Bytes(good.begin(), good.end() - 1), column + " minus one byte");
    expect_rebuilt(column, Bytes(good.begin(), good.begin() + 8), column + " magic only");
    expect_rebuilt(column, Bytes(), column + " empty");
  }
}

TEST_F(ObsCorruption, FlippedFooterIsRebuilt) {
  const std::string column = "donor/id";
  const Bytes good = testing::read_file_bytes(file_of(column));
  const std::size_t n = good.size();
  const std::size_t footer_length = load_le<std::uint32_t>(good.data() + n - 10);
  const std::size_t footer = n - 10 - footer_length;
  Bytes b = good;
  store_le<std::uint32_t>(b.data() + n - 10, 0x7FFFFFF0u);
  expect_rebuilt(column, b, "footer length");
  b = good;
  b[n - 1] ^= std::byte{0x01};
  expect_rebuilt(column, b, "trailing magic");
  b = good;
  b[footer] ^= std::byte{0x80};  // the flatbuffer's root offset
  b[footer + 1] ^= std::byte{0x10};
  expect_rebuilt(column, b, "footer root offset");
  b = good;
  b[3] ^= std::byte{0x20};
  expect_rebuilt(column, b, "leading magic");
}

TEST_F(ObsCorruption, BadStringOffsetsAreRebuilt) {
  const std::string column = "donor/id";
  const Bytes good = testing::read_file_bytes(file_of(column));
  const auto offsets = [](const columnar::ArrowArrayView& v) { return v.values; };
  const std::size_t at0 = buffer_offset(column, 0, offsets);
  const std::size_t at2 = buffer_offset(column, 2, offsets);
  Bytes b = good;
  store_le<std::int32_t>(b.data() + at0 + 4 * 70, 0x7FFFFFF0);  // past the data
  expect_rebuilt(column, b, "last offset of batch 0");
  b = good;
  store_le<std::int32_t>(b.data() + at2 + 4 * 10, 0x7FFFFFF0);  // decreasing afterwards
  expect_rebuilt(column, b, "offset 10 of batch 2");
  b = good;
  store_le<std::int32_t>(b.data() + at2, 1);  // not starting at 0
  expect_rebuilt(column, b, "first offset of batch 2");
}

TEST_F(ObsCorruption, CategoryCodesOutOfRangeAreRebuilt) {
  const std::string column = "cell type";
  const Bytes good = testing::read_file_bytes(file_of(column));
  const auto values = [](const columnar::ArrowArrayView& v) { return v.values; };
  for (const std::int8_t code : {std::int8_t{5}, std::int8_t{100}, std::int8_t{-2}, std::int8_t{-128}}) {
    Bytes b = good;
    b[buffer_offset(column, 4, values) + 17] = static_cast<std::byte>(code);
    expect_rebuilt(column, b, "code " + std::to_string(code));
  }
}

// A flipped bit in a value leaves every structure valid; the file's .check sidecar (its CRC-32C as
// written) catches it, and the file is rebuilt like any other corrupt one.
TEST_F(ObsCorruption, FlippedValueIsCaughtByTheChecksum) {
  const auto values = [](const columnar::ArrowArrayView& v) { return v.values; };
  for (const std::string column : {"age", "n_genes", "cell type"}) {
    const Bytes good = testing::read_file_bytes(file_of(column));
    Bytes b = good;
    b[buffer_offset(column, 3, values) + 5] ^= std::byte{0x10};
    expect_rebuilt(column, b, column + ": one value bit");
  }
}

TEST_F(ObsCorruption, WrongFieldOrTilingIsRebuilt) {
  // Another column's file (C7: name and type).
  expect_rebuilt("n_genes", testing::read_file_bytes(file_of("age")), "age's file as n_genes");
  expect_rebuilt("count", testing::read_file_bytes(file_of("n_genes")), "n_genes's file as count");
  // The same column of a dataset tiled differently (C8: batch count and rows).
  const auto other = make_obs_dataset(600, 100, 3);
  const auto store = other->open();
  const std::vector<std::string> cols = {"age"};
  store->localize(cols);
  expect_rebuilt("age", testing::read_file_bytes(store->cache_dir() + "/age.arrow"), "age tiled by 100");
}

// Every byte of the footer flipped in turn (bits 0 and 7): never a crash; a detected flip is
// rebuilt, and an undetected one (padding, the nullable flag, …) does not change the values.
TEST_F(ObsCorruption, FooterFlipSweepNeverCrashes) {
  const std::string column = "cell type";
  const std::string path = file_of(column);
  const Bytes good = testing::read_file_bytes(path);
  const std::size_t n = good.size();
  const std::size_t footer = n - 10 - load_le<std::uint32_t>(good.data() + n - 10);
  std::size_t detected = 0, flips = 0;
  std::vector<std::size_t> wrong;  // footer bytes whose undetected flip changed values
  for (std::size_t i = footer; i < n; ++i) {
    for (const std::byte mask : {std::byte{0x01}, std::byte{0x80}}) {
      Bytes b = good;
      b[i] ^= mask;
      testing::write_file_bytes(path + ".new", b);
      std::filesystem::rename(path + ".new", path);
      std::vector<std::string> warnings;
      const auto store = d_->open([&](const std::string& w) { warnings.push_back(w); });
      const std::vector<std::string> cols = {column};
      std::vector<ObsTakeColumn> got;
      ASSERT_NO_THROW(got = store->take(cells_, cols)) << "byte " << i;
      ++flips;
      if (!warnings.empty()) {
        ++detected;
        expect_take(*d_, got[0], cells_);
        ASSERT_EQ(testing::read_file_bytes(path), good) << "byte " << i;
      } else {
        const auto& src = d_->source_of(column);
        for (std::size_t r = 0; r < cells_.size(); ++r)
          if (got[0].values.data[r] != src.data[static_cast<std::size_t>(cells_[r])]) {
            wrong.push_back(i - footer);
            break;
          }
      }
    }
  }
  testing::write_file_bytes(path, good);
  EXPECT_GT(detected, flips / 4) << detected << " of " << flips << " footer flips detected";
  RecordProperty("footer_flips_detected", std::to_string(detected) + "/" + std::to_string(flips));
  std::string list;
  for (const auto w : wrong) list += std::to_string(w) + " ";
  EXPECT_TRUE(wrong.empty()) << "undetected flips that changed values, at footer bytes " << list;
}

}  // namespace
}  // namespace tessera::cells
