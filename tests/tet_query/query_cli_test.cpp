// `tessera tet query` and `tessera tet qhist` as processes (spec tet.md §6.4, §6.5): exit codes,
// stdin and TOML input, the history file (always redirected with TET_QUERY_HISTORY_FILE so tests
// never touch the user's cache), listing, replay and clearing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "support/testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::RunOptions;
using testing::TempDir;

class QueryCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy_file(testing::tet_fixture("sample.tet"), dir_ / "sample.tet");
    options_.cwd = dir_.path();
    options_.env = {{"TET_QUERY_HISTORY_FILE", (dir_ / "hist/query_history.jsonl").string()},
                    {"XDG_CACHE_HOME", (dir_ / "cache").string()}};
  }
  testing::RunResult cli(std::vector<std::string> args, const std::string& stdin_data = "") {
    RunOptions o = options_;
    o.stdin_data = stdin_data;
    args.insert(args.begin(), "tet");
    return testing::run_cli(args, o);
  }
  TempDir dir_{"query-cli"};
  RunOptions options_;
};

TEST_F(QueryCli, ExitCodes) {
  EXPECT_EQ(cli({"query", R"({"dataset":"temperature"})", "-x"}).rc, 2);  // -x without -t
  EXPECT_EQ(cli({"query", R"({"dataset":"temperature"})", "-t", "sample.tet", "-q", "--format", "json"}).rc, 2);
  EXPECT_EQ(cli({"query", R"({"dataset":"temperature"})", "-t", "sample.tet", "--format", "xml"}).rc, 2);
  EXPECT_EQ(cli({"query", R"({"dataset":"temperature"})", "-t", "sample.tet", "--device", "cpu"}).rc, 2);
  EXPECT_EQ(cli({"query", R"({"dataset":"temperature"})", "-t", "sample.tet", "--spill-allow", "."}).rc, 2);
  const auto r = cli({"query", R"({"dataset":"temperature"})", "-t", "sample.tet", "--preview", "3"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: --preview requires -x / --execute\n");
  const auto missing = cli({"query", R"({"dataset":"temperature"})", "-t", "nope.tet", "-x"});
  EXPECT_EQ(missing.rc, 1);
}

TEST_F(QueryCli, StdinTomlAndTable) {
  auto r = cli({"query", "-", "-t", "./sample.tet", "-x", "-q"},
               "dataset = \"temperature\"\n[quantile]\nq = 0.5\naxis = 0\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "dataset=temperature status=ok op=quantile axes=[0] q=0.5 reduced_shape=3 values=[2.5,3.5,4.5] elements=6 "
            "memory_strategy=in_memory_materialize\n");
  r = cli({"query", R"({"dataset":"temperature","mean":1})", "-t", "./sample.tet", "-x", "--format", "table"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("result (reduced_shape=2):\n       #  value\n       0  2\n       1  5\n\n      elements  6\n\n"),
            std::string::npos)
      << r.out;
  r = cli({"query", R"({"dataset":"temperature","arg_min":1})", "-t", "./sample.tet", "-x", "--format", "table"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: table format: arg_min partial values use --format quiet or stats\n");
}

TEST_F(QueryCli, HistoryRecordsListsReplaysAndClears) {
  ASSERT_EQ(cli({"query", R"({"dataset":"temperature","mean":[]})", "-t", "./sample.tet", "-x", "-q"}).rc, 0);
  ASSERT_EQ(cli({"query", R"({"dataset":"temperature","mean":[]})", "-t", "./sample.tet", "-x", "-q"}).rc, 0);  // dedup
  ASSERT_EQ(cli({"query", R"({"dataset":"temperature","selection":[{"step":2},{}]})", "-t", "./sample.tet"}).rc, 0);
  const auto lines = testing::read_file_text(dir_ / "hist/query_history.jsonl");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2);
  const auto first = nlohmann::json::parse(lines.substr(0, lines.find('\n')));
  EXPECT_EQ(first["query"].dump(), R"({"dataset":"temperature","mean":[]})");
  EXPECT_EQ(first["tet"], "./sample.tet");
  EXPECT_TRUE(first["execute"].get<bool>());

  auto r = cli({"qhist"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("shown: 2  keep: 50 on disk\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  1   p    temperature         -           strided   sample.tet\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  2   x    temperature         mean        full      sample.tet\n"), std::string::npos)
      << r.out;
  r = cli({"qhist", "list", "--json", "--mode", "x"});
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["shown"], 1);
  EXPECT_EQ(j["filter"], "mode=x");
  EXPECT_EQ(j["entries"][0]["mode"], "x");
  r = cli({"qhist", "run", "2", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "dataset=temperature status=ok op=mean mean=3.5 elements=6 memory_strategy=streaming_fold\n");
  r = cli({"qhist", "run", "9"});
  EXPECT_EQ(r.rc, 1);
  // The replay recorded a row of its own.
  EXPECT_EQ(r.err, "error: history entry 9 not found (have 3 matching entries)\n");
  EXPECT_EQ(cli({"qhist", "list", "--mode", "z"}).err,
            "error: unknown history mode \"z\"; expected x, execute, p, or plan\n");
  r = cli({"qhist", "--clear"});
  EXPECT_EQ(r.err, "query history cleared\n");
  EXPECT_FALSE(fs::exists(dir_ / "hist/query_history.jsonl"));
}

TEST_F(QueryCli, HistoryKeepLimitAndDisable) {
  options_.env.emplace_back("TET_QUERY_HISTORY_MAX", "2");
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(
        cli({"query", "{\"dataset\":\"temperature\",\"selection\":[{\"start\":" + std::to_string(i % 2) + "},{}]}",
             "-t", "./sample.tet"})
            .rc,
        0);
  ASSERT_EQ(cli({"query", R"({"dataset":"temperature","sum":[]})", "-t", "./sample.tet", "-x", "-q"}).rc, 0);
  auto text = testing::read_file_text(dir_ / "hist/query_history.jsonl");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_NE(text.find("\"sum\""), std::string::npos);
  options_.env.emplace_back("TET_NO_QUERY_HISTORY", "yes");
  ASSERT_EQ(cli({"query", R"({"dataset":"temperature","max":[]})", "-t", "./sample.tet", "-x", "-q"}).rc, 0);
  EXPECT_EQ(testing::read_file_text(dir_ / "hist/query_history.jsonl"), text);
}

TEST_F(QueryCli, ConcurrentQueriesKeepEveryHistoryRow) {
  // Twelve processes record twelve distinct queries at once: each row must survive (the history
  // is read, extended and replaced under one lock), and the file stays one JSON object per line.
  constexpr int kQueries = 12;
  std::vector<std::thread> threads;
  std::vector<int> rcs(kQueries, -1);
  for (int i = 0; i < kQueries; ++i) {
    threads.emplace_back([&, i] {
      static constexpr int kAxis1[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
      const std::string doc = "{\"dataset\":\"temperature\",\"selection\":[{\"start\":" + std::to_string(i % 2) +
                              "},{\"start\":" + std::to_string(kAxis1[i / 2][0]) +
                              ",\"stop\":" + std::to_string(kAxis1[i / 2][1]) + "}]}";
      rcs[i] = cli({"query", doc, "-t", "./sample.tet"}).rc;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kQueries; ++i) EXPECT_EQ(rcs[i], 0) << "query " << i;
  const auto text = testing::read_file_text(dir_ / "hist/query_history.jsonl");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), kQueries) << text;
  std::set<std::string> distinct;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) distinct.insert(nlohmann::json::parse(line).at("query").dump());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kQueries));
}

}  // namespace
}  // namespace tessera
