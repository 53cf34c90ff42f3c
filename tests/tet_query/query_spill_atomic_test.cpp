// User-named spill outputs are atomic (docs/reliability.md): a query that fails half way through
// writing its `"spill"` (or `write.target = "spill"`) leaves an existing file under that name
// untouched and no partial file and no temporary behind. The failure is made deterministic by a
// .tet whose last chunk cannot be decoded, so the error comes after the output was opened.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// a: f32 64x64 in 16 zstd chunks; with `break_last_chunk`, the last payload's zstd magic is
// zeroed so decoding it fails with FormatError.
void write_tet(const fs::path& path, bool break_last_chunk) {
  {
    tet::TetWriter writer(path.string());
    tet::DatasetSpec spec;
    spec.name = "a";
    spec.shape = {64, 64};
    spec.chunk_shape = {16, 16};
    spec.codec = tet::Codec::Zstd;
    const std::uint32_t id = writer.add_dataset(spec);
    std::vector<float> values(64 * 64);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
    writer.write_dataset(id, std::as_bytes(std::span(values)));
    writer.commit();
  }
  if (!break_last_chunk) return;
  auto bytes = testing::read_file_bytes(path);
  const std::byte magic[] = {std::byte{0x28}, std::byte{0xB5}, std::byte{0x2F}, std::byte{0xFD}};
  const auto last = std::find_end(bytes.begin(), bytes.end(), std::begin(magic), std::end(magic));
  ASSERT_NE(last, bytes.end());
  std::fill(last, last + 4, std::byte{0});
  testing::write_file_bytes(path, bytes);
}

tet::QueryResponse run_in(const fs::path& dir, const std::string& doc) {
  tet::QueryOptions o;
  o.tet_path = (dir / "in.tet").string();
  o.execute = true;
  o.preview = 0;
  o.threads = 1;
  return tet::run_query(tet::parse_query_json(doc), o);
}

class SpillAtomicity : public ::testing::TestWithParam<const char*> {};

TEST_P(SpillAtomicity, FailedQueryKeepsTheOldFileAndLeavesNoPartialOne) {
  testing::TempDir dir("spill-atomic");
  write_tet(dir / "in.tet", /*break_last_chunk=*/false);
  // The document is valid: against the intact file it writes the output.
  run_in(dir.path(), GetParam());
  EXPECT_EQ(fs::file_size(dir / "out.bin"), 64u * 64u * 4u);

  write_tet(dir / "in.tet", /*break_last_chunk=*/true);
  testing::write_file_text(dir / "out.bin", "previous result");
  EXPECT_THROW(run_in(dir.path(), GetParam()), FormatError);
  EXPECT_EQ(testing::read_file_text(dir / "out.bin"), "previous result");
  EXPECT_EQ(entries(dir.path()), (std::set<std::string>{"in.tet", "out.bin"}));
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, SpillAtomicity,
    ::testing::Values(
        R"({"dataset":"a","spill":"out.bin"})",
        R"({"dataset":"a","transform":{"method":"center"},"write":{"target":"spill","path":"out.bin"}})"));

}  // namespace
}  // namespace tessera
