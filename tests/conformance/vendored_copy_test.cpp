// The conformance data vendored in tests/data/conformance must stay byte-identical to the project's
// upstream copy (../shared/conformance beside the repository) whenever that copy exists: the same
// relative paths, each with the same SHA-256. The upstream per-format README files are prose and
// are deliberately not vendored (tests/data/PROVENANCE.md); every other difference fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// Upstream prose, left out of the vendored copy on purpose.
const std::set<std::string>& upstream_prose() {
  static const std::set<std::string> kProse = {"tetration/README.md", "deltacells/README.md", "zagg/README.md"};
  return kProse;
}

// Relative path -> SHA-256 of every regular file under `root`, minus the `excluded` paths.
std::map<std::string, std::string> sha256_tree(const fs::path& root, const std::set<std::string>& excluded) {
  std::map<std::string, std::string> hashes;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), root).generic_string();
    if (excluded.count(relative) != 0) continue;
    hashes.emplace(relative, codec::sha256_hex(read_file_bytes(entry.path())));
  }
  return hashes;
}

// Every way two trees differ, one line each ("only in vendored: X", "differs: Y"); empty if equal.
std::vector<std::string> tree_differences(const fs::path& vendored, const fs::path& upstream) {
  const auto ours = sha256_tree(vendored, {});
  const auto theirs = sha256_tree(upstream, upstream_prose());
  std::vector<std::string> out;
  for (const auto& [path, hash] : ours) {
    const auto it = theirs.find(path);
    if (it == theirs.end()) out.push_back("only in vendored: " + path);
    else if (it->second != hash) out.push_back("differs: " + path);
  }
  for (const auto& [path, hash] : theirs) {
    if (ours.count(path) == 0) out.push_back("only upstream: " + path);
  }
  return out;
}

fs::path vendored_dir() { return source_dir() / "tests" / "data" / "conformance"; }

fs::path upstream_dir() {
  if (const char* env = std::getenv("TESSERA_UPSTREAM_CONFORMANCE_DIR"); env != nullptr && *env != '\0') return env;
  return TESSERA_UPSTREAM_CONFORMANCE_DIR;
}

TEST(VendoredConformance, IdenticalToUpstreamCopy) {
  const fs::path upstream = upstream_dir();
  if (!fs::is_directory(upstream)) {
    GTEST_SKIP() << "no upstream conformance copy at " << upstream << " to compare with (a clone on its own)";
  }
  const auto differences = tree_differences(vendored_dir(), upstream);
  std::string listing;
  for (const auto& line : differences) listing += "\n  " + line;
  EXPECT_TRUE(differences.empty()) << vendored_dir() << " and " << upstream << " differ:" << listing
                                   << "\ncopy the files again from the upstream folder (tests/data/PROVENANCE.md)";
}

TEST(VendoredConformance, EveryGroupOfTheProvenanceFileIsPresent) {
  // The vendored copy is complete on its own: each group the provenance file lists has its files.
  for (const char* relative :
       {"tetration/sample.tet", "tetration/queries", "tetration/sources/h5", "tetration/generated/meta_spill.tet",
        "tetration/expected/reference_cli_outputs.json", "deltacells/dataset_small/manifest.json",
        "deltacells/tiles/corrupt", "zagg/tests/data/spec/minimal.expected.json", "zagg/tests/data/index/atl03_mini.h5",
        "zagg/configs/atl06.yaml", "zagg/mortie/packed_u64_golden.json",
        "zagg/moczarr/tests/data/strata_goldens/signal_tensors.npy", "zagg/golden_vectors.json"}) {
    EXPECT_TRUE(fs::exists(vendored_dir() / relative)) << relative;
  }
  const std::string provenance = read_file_text(source_dir() / "tests" / "data" / "PROVENANCE.md");
  for (const char* upstream_repo : {"thicclatka/tetration", "englacial/zagg", "espg/mortie", "espg/moczarr"}) {
    EXPECT_NE(provenance.find(upstream_repo), std::string::npos) << upstream_repo;
  }
}

// The comparison itself, on two small copies of a vendored group: it must see one flipped byte, a
// missing file and an extra file, and ignore only the upstream prose.
TEST(VendoredConformance, ComparisonCatchesOneFlippedByte) {
  TempDir tmp("vendored-copy");
  const fs::path ours = tmp.path() / "ours";
  const fs::path theirs = tmp.path() / "theirs";
  for (const fs::path& dir : {ours, theirs}) {
    fs::create_directories(dir / "deltacells");
    fs::copy(vendored_dir() / "deltacells", dir / "deltacells", fs::copy_options::recursive);
  }
  write_file_text(theirs / "deltacells" / "README.md", "upstream prose, not vendored\n");
  EXPECT_TRUE(tree_differences(ours, theirs).empty());

  const fs::path tile = ours / "deltacells" / "tiles" / "basic_5x10_2chunks.dct";
  auto bytes = read_file_bytes(tile);
  ASSERT_GT(bytes.size(), 100u);
  bytes[100] ^= std::byte{0x01};
  write_file_bytes(tile, bytes);
  EXPECT_EQ(tree_differences(ours, theirs),
            std::vector<std::string>{"differs: deltacells/tiles/basic_5x10_2chunks.dct"});

  fs::copy_file(theirs / "deltacells" / "tiles" / "basic_5x10_2chunks.dct", tile, fs::copy_options::overwrite_existing);
  fs::remove(ours / "deltacells" / "vectors.json");
  write_file_text(ours / "deltacells" / "extra.json", "{}");
  EXPECT_EQ(tree_differences(ours, theirs), (std::vector<std::string>{"only in vendored: deltacells/extra.json",
                                                                      "only upstream: deltacells/vectors.json"}));
}

}  // namespace
}  // namespace tessera::testing
