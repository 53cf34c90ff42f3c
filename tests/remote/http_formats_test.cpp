// Every format read through a real HTTP server (nginx on loopback serving the conformance data)
// equals the same read from the local files: `.tet` info/verify/cat/query through the CLI and
// whole datasets through the library, the deltacells dataset through the CLI and the library,
// and zagg-ragged leaves through `ragged cell`.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "nginx_server.hpp"
#include "support/testing.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// `text` with every occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Fields that measure the host or the clock, not the data (docs/cli: host-specific fields).
std::string masked(const std::string& text) {
  static const std::regex host_specific(
      R"re("(memory_budget_bytes|host_available_ram_bytes|seconds|cells_per_second)":[-+0-9.eE]+)re");
  return std::regex_replace(text, host_specific, "\"$1\":X");
}

std::vector<fs::path> tet_files() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(conformance_dir() / "tetration"))
    if (entry.is_regular_file() && entry.path().extension() == ".tet") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string rel_path(const fs::path& path) { return fs::relative(path, conformance_dir()).string(); }

#define REQUIRE_NGINX()                       \
  NginxServer* server = conformance_server(); \
  if (!server) {                              \
    GTEST_SKIP() << kNoNginx;                 \
  }

// The CLI on the URL equals the CLI on the local path (the input's name masked in both).
void expect_same_cli(const NginxServer& server, const fs::path& file, const std::vector<std::string>& before,
                     const std::vector<std::string>& after = {}, const RunOptions& options = {}) {
  const std::string url = server.url(rel_path(file));
  auto args_for = [&](const std::string& input) {
    std::vector<std::string> args = before;
    args.push_back(input);
    args.insert(args.end(), after.begin(), after.end());
    return args;
  };
  const RunResult local = run_cli(args_for(file.string()), options);
  const RunResult remote = run_cli(args_for(url), options);
  EXPECT_EQ(remote.rc, local.rc) << url << "\n" << remote.err;
  EXPECT_EQ(masked(replaced(remote.out, url, "INPUT")), masked(replaced(local.out, file.string(), "INPUT"))) << url;
  if (local.rc != 0) {
    EXPECT_FALSE(remote.err.empty()) << url;
  }
}

TEST(HttpTet, InfoAndVerifyEqualLocal) {
  REQUIRE_NGINX();
  const auto files = tet_files();
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    expect_same_cli(*server, file, {"tet", "info", "--json"});
    expect_same_cli(*server, file, {"tet", "verify", "--json", "--deep"});
  }
}

TEST(HttpTet, EveryDatasetReadsTheSameBytes) {
  REQUIRE_NGINX();
  for (const fs::path& file : tet_files()) {
    SCOPED_TRACE(file.string());
    std::optional<tet::TetFile> local;
    try {
      local.emplace(tet::TetFile::open(file.string()));
    } catch (const Error&) {
      continue;  // files that do not open are compared through `verify` above
    }
    const tet::TetFile remote = tet::TetFile::open(server->url(rel_path(file)));
    ASSERT_EQ(remote.datasets().size(), local->datasets().size());
    for (std::size_t i = 0; i < local->datasets().size(); ++i) {
      const tet::Dataset& ds = local->datasets()[i];
      std::vector<std::byte> a(ds.logical_bytes), b(ds.logical_bytes);
      local->read_box(ds, ds.full_box(), a);
      remote.read_box(remote.datasets()[i], remote.datasets()[i].full_box(), b);
      EXPECT_EQ(a, b) << ds.name;
    }
  }
}

TEST(HttpTet, CatWritesTheSameNpy) {
  REQUIRE_NGINX();
  TempDir tmp;
  const fs::path file = tet_fixture("sample.tet");
  const tet::TetFile opened = tet::TetFile::open(file.string());
  for (const tet::Dataset& ds : opened.datasets()) {
    const auto local = run_cli({"tet", "cat", file.string(), ds.name, "-o", (tmp / "local.npy").string()});
    const auto remote =
        run_cli({"tet", "cat", server->url(rel_path(file)), ds.name, "-o", (tmp / "remote.npy").string()});
    ASSERT_EQ(local.rc, 0) << local.err;
    ASSERT_EQ(remote.rc, 0) << remote.err;
    EXPECT_EQ(read_file_bytes(tmp / "remote.npy"), read_file_bytes(tmp / "local.npy")) << ds.name;
  }
}

TEST(HttpTet, QueriesGiveTheSameResults) {
  REQUIRE_NGINX();
  TempDir tmp;
  const RunOptions options{.env = {{"TET_QUERY_HISTORY_FILE", (tmp / "history.jsonl").string()}}};
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(tet_fixture("queries"))) {
    if (entry.path().extension() != ".json") continue;
    for (const char* name : {"sample.tet", "large.tet", "plan.tet"}) {
      SCOPED_TRACE(entry.path().string() + " on " + name);
      expect_same_cli(*server, tet_fixture(name),
                      {"tet", "query", entry.path().string(), "-x", "--format", "json", "-t"}, {}, options);
      ++compared;
    }
  }
  EXPECT_GE(compared, 9);
}

fs::path small_dataset() { return conformance_dir() / "deltacells" / "dataset_small"; }

TEST(HttpCells, InfoGetAndVerifyEqualLocal) {
  REQUIRE_NGINX();
  const fs::path dir = small_dataset();
  const std::string url = server->url(rel_path(dir));
  const auto local = run_cli({"cells", "info", dir.string()});
  const auto remote = run_cli({"cells", "info", url});
  ASSERT_EQ(local.rc, 0) << local.err;
  ASSERT_EQ(remote.rc, 0) << remote.err;
  EXPECT_EQ(replaced(remote.out, url, "INPUT"),
            replaced(local.out, "local:" + fs::absolute(dir).lexically_normal().string(), "INPUT"));
  const auto ds = cells::Dataset::open(dir.string());
  const std::string all = "0:" + std::to_string(ds->n_cells());
  for (const std::vector<std::string>& tail :
       {std::vector<std::string>{all, "--json"}, std::vector<std::string>{"9,0,4,4,3"}})
    expect_same_cli(*server, dir, {"cells", "get"}, tail);
  for (const char* tile : {"basic_5x10_2chunks.dct", "single_chunk_4x6.dct"}) {
    const fs::path file = conformance_dir() / "deltacells/tiles" / tile;
    expect_same_cli(*server, file, {"cells", "info"});
    expect_same_cli(*server, file, {"cells", "verify"});
  }
  const auto verified = run_cli({"cells", "verify", url});
  EXPECT_EQ(verified.rc, 0) << verified.err;
  expect_same_cli(*server, dir, {"cells", "epoch"}, {"--batch-size", "3", "--seed", "5", "--json"});
}

TEST(HttpCells, LibraryRowsEqualLocal) {
  REQUIRE_NGINX();
  const auto local = cells::Dataset::open(small_dataset().string());
  const auto remote = cells::Dataset::open(server->url(rel_path(small_dataset())));
  ASSERT_EQ(remote->n_cells(), local->n_cells());
  ASSERT_EQ(remote->n_genes(), local->n_genes());
  std::vector<std::int64_t> rows(local->n_cells());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(rows.size() - 1 - i);
  const auto a = local->get_batch(rows, cells::Values::Int32);
  const auto b = remote->get_batch(rows, cells::Values::Int32);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values_int32, b.values_int32);
}

fs::path minimal_hive() { return conformance_dir() / "zagg/tests/data/spec/minimal"; }

TEST(HttpRagged, CellsEqualLocal) {
  REQUIRE_NGINX();
  const fs::path leaf = minimal_hive() / "1/1/2/1/3/11213.zarr";
  for (const std::string field : {"6/h_tdigest", "6/count"})
    for (const std::string index : {"0", "1", "2", "3"}) {
      SCOPED_TRACE(field + " " + index);
      expect_same_cli(*server, leaf, {"ragged", "cell"}, {field, index});
    }
  // The same leaf through the hive root and --shard.
  expect_same_cli(*server, minimal_hive(), {"ragged", "cell"}, {"--shard", "11213", "6/h_tdigest", "1"});
}

TEST(HttpRagged, HiveInfoEqualsLocal) {
  REQUIRE_NGINX();
  expect_same_cli(*server, minimal_hive(), {"ragged", "info"});
}

// `tessera info URL` detects the format over HTTP as it does on disk: an object by its magic, a
// prefix by the metadata objects it holds.
TEST(HttpDetect, InfoRoutesUrlsLikePaths) {
  REQUIRE_NGINX();
  expect_same_cli(*server, tet_fixture("sample.tet"), {"info"});
  expect_same_cli(*server, minimal_hive(), {"info"});
  const fs::path dir = small_dataset();
  const std::string url = server->url(rel_path(dir));
  const auto local = run_cli({"info", dir.string()});
  const auto remote = run_cli({"info", url});
  ASSERT_EQ(remote.rc, 0) << remote.err;
  EXPECT_EQ(replaced(remote.out, url, "INPUT"),
            replaced(local.out, "local:" + fs::absolute(dir).lexically_normal().string(), "INPUT"));
  const auto missing = run_cli({"info", server->url("tetration/none.tet")});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("HTTP 404"), std::string::npos) << missing.err;
}

TEST(HttpDetect, ConvertFromUrlIsNotSupportedYet) {
  REQUIRE_NGINX();
  TempDir tmp;
  const auto r =
      run_cli({"tet", "convert", server->url("zagg/tests/data/index/atl03_mini.h5"), (tmp / "x.tet").string()});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("converting from a URL or bucket is not supported yet"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "x.tet"));
}

}  // namespace
}  // namespace tessera::testing
