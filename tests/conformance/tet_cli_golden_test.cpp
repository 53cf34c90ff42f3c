// Golden outputs of the reference CLI for `info`, `verify` and `repair` (spec tet.md §8.1–§8.3):
// every such record of tetration/expected/reference_cli_outputs.json runs through `tessera tet`
// in a scratch copy of the conformance folder and must match rc, stdout and stderr byte for
// byte after the §8.2 normalization, except the documented §8.3 divergences (TD-12).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::RunOptions;
using testing::TempDir;

struct GoldenCase {
  std::string id;
  std::vector<std::string> argv;  // argv[0] is "tet"
  int rc = 0;
  std::string out;
  std::string err;
};

fs::path tetration_dir() { return testing::conformance_dir() / "tetration"; }

std::vector<GoldenCase> load_cases() {
  std::vector<GoldenCase> cases;
  const auto text = testing::read_file_text(tetration_dir() / "expected/reference_cli_outputs.json");
  for (const auto& r : nlohmann::json::parse(text)) {
    const auto argv = r.at("argv").get<std::vector<std::string>>();
    if (argv.size() < 2 || (argv[1] != "info" && argv[1] != "verify" && argv[1] != "repair")) continue;
    cases.push_back({r.at("id").get<std::string>(), argv, r.at("rc").get<int>(), r.at("stdout").get<std::string>(),
                     r.at("stderr").get<std::string>()});
  }
  return cases;
}

// §8.2 rule 1: tessera names itself `tessera tet` where the reference says `tet`.
std::string normalize(std::string s) {
  const std::string from = "tessera tet ", to = "tet ";
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Replaces the one line of `actual` that starts (after indentation) with `key_prefix` by the
// matching line of `expected`, so the rest of the document still compares byte for byte.
std::string substitute_line(const std::string& actual, const std::string& expected, const std::string& key_prefix) {
  auto find_line = [&](const std::string& doc) -> std::pair<std::size_t, std::size_t> {
    const auto at = doc.find(key_prefix);
    if (at == std::string::npos) return {std::string::npos, 0};
    const auto begin = doc.rfind('\n', at) + 1;
    const auto end = doc.find('\n', at);
    return {begin, (end == std::string::npos ? doc.size() : end) - begin};
  };
  const auto [a_begin, a_len] = find_line(actual);
  const auto [e_begin, e_len] = find_line(expected);
  if (a_begin == std::string::npos || e_begin == std::string::npos) return actual;
  std::string out = actual;
  out.replace(a_begin, a_len, expected.substr(e_begin, e_len));
  return out;
}

class TetCliGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(TetCliGolden, MatchesTheReference) {
  const GoldenCase& c = GetParam();
  // Repairs may modify files, so every case gets its own writable copy of the folder (without
  // sources/, the convert inputs, which no info/verify/repair case reads).
  TempDir scratch("tet-golden");
  const fs::path work = scratch / "tetration";
  fs::create_directory(work);
  for (const auto& entry : fs::directory_iterator(tetration_dir()))
    if (entry.path().filename() != "sources")
      fs::copy(entry.path(), work / entry.path().filename(), fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(work))
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);

  RunOptions options;
  options.cwd = work;
  options.env = {{"TET_NO_QUERY_HISTORY", "1"}, {"XDG_CACHE_HOME", (scratch / "cache").string()}};
  std::vector<std::string> args = {"tet"};
  args.insert(args.end(), c.argv.begin() + 1, c.argv.end());
  const auto result = testing::run_cli(args, options);
  const std::string out = normalize(result.out);
  const std::string err = normalize(result.err);

  // §8.3: the reference's footer error text is replaced by the §1.8 texts (TD-12).
  const std::string footer_error = "history footer JSON is invalid: ";
  if (c.id == "info_json_plan" || c.id == "info_quiet_plan") {
    EXPECT_EQ(result.rc, 1);
    EXPECT_EQ(out, "");
    EXPECT_TRUE(starts_with(err, "error: " + footer_error)) << err;
    return;
  }
  if (c.id == "verify_json_plan") {
    EXPECT_EQ(result.rc, c.rc);
    EXPECT_EQ(err, c.err);
    const auto report = nlohmann::json::parse(out);
    const auto detail = report.at("findings").at(0).at("detail").get<std::string>();
    EXPECT_TRUE(starts_with(detail, footer_error)) << detail;
    EXPECT_EQ(substitute_line(out, c.out, "\"detail\": "), c.out);
    return;
  }
  EXPECT_EQ(result.rc, c.rc);
  EXPECT_EQ(out, c.out);
  EXPECT_EQ(err, c.err);
}

TEST(TetCliGoldenSet, CoversEveryInfoVerifyRepairRecord) {
  // 12 info, 14 verify and 3 repair records in the v0.1.9 capture.
  EXPECT_EQ(load_cases().size(), 29u);
}

INSTANTIATE_TEST_SUITE_P(Reference, TetCliGolden, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.id; });

}  // namespace
}  // namespace tessera
