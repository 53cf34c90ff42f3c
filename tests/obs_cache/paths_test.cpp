// The cache root (§6.9: --cache-dir, $DELTACELLS_CACHE, $XDG_CACHE_HOME, $HOME; pathlib's
// printing), the quoted file names of columns, and the file layout under the root.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "obs_cache/obs_cache_support.hpp"
#include "tessera/cells/obs_schema.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cells {
namespace {

using obs_test::EnvGuard;

TEST(ObsCachePaths, QuotesColumnNamesLikeUrllib) {
  EXPECT_EQ(quote_column_file_name("cell type"), "cell%20type");
  EXPECT_EQ(quote_column_file_name("a/b"), "a%2Fb");
  EXPECT_EQ(quote_column_file_name("ü"), "%C3%BC");
  EXPECT_EQ(quote_column_file_name("AZaz09_.-~"), "AZaz09_.-~");
  EXPECT_EQ(quote_column_file_name("%+?#&=:;,\\\"'"), "%25%2B%3F%23%26%3D%3A%3B%2C%5C%22%27");
  if (testing::run_process({"/usr/bin/python3", "--version"}).rc != 0) GTEST_SKIP() << "no python3";
  const std::vector<std::string> names = {"cell type",      "a/b",         "ü", "日本 語", "x\ty\n",
                                          "~user.name-1_2", "(1) [2] {3}", ""};
  std::string args;
  for (const auto& n : names) {
    const auto run =
        testing::run_python("import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=''), end='')", {n});
    ASSERT_EQ(run.rc, 0) << run.err;
    EXPECT_EQ(quote_column_file_name(n), run.out) << n;
  }
}

TEST(ObsCachePaths, ResolvesTheRootInOrder) {
  EnvGuard env{{"HOME", "/home/u"}, {"DELTACELLS_CACHE", std::nullopt}, {"XDG_CACHE_HOME", std::nullopt}};
  // --cache-dir wins, `~` expanded, normalized as pathlib prints it.
  EXPECT_EQ(resolve_obs_cache_root("~/x//y/./"), "/home/u/x/y");
  EXPECT_EQ(resolve_obs_cache_root("~"), "/home/u");
  EXPECT_EQ(resolve_obs_cache_root("rel/../a/"), "rel/../a");
  EXPECT_EQ(resolve_obs_cache_root("./c"), "c");
  EXPECT_EQ(resolve_obs_cache_root("//net/x"), "//net/x");
  EXPECT_EQ(resolve_obs_cache_root("///abs//x/"), "/abs/x");
  EXPECT_EQ(resolve_obs_cache_root("x/~"), "x/~");
  // Nothing set: ~/.cache/deltacells.
  EXPECT_EQ(resolve_obs_cache_root(""), "/home/u/.cache/deltacells");
  {
    EnvGuard xdg{{"XDG_CACHE_HOME", "rel//xdg/"}};
    EXPECT_EQ(resolve_obs_cache_root(""), "rel/xdg/deltacells");  // relative, used as given
    EXPECT_EQ(resolve_obs_cache_root("/given"), "/given");
    EnvGuard dc{{"DELTACELLS_CACHE", "~/dc/"}};
    EXPECT_EQ(resolve_obs_cache_root(""), "/home/u/dc");
    EnvGuard empty{{"DELTACELLS_CACHE", ""}};
    EXPECT_EQ(resolve_obs_cache_root(""), "rel/xdg/deltacells");  // empty counts as unset
  }
  {
    EnvGuard xdg{{"XDG_CACHE_HOME", ""}};
    EXPECT_EQ(resolve_obs_cache_root(""), "/home/u/.cache/deltacells");
  }
  {
    EnvGuard root_home{{"HOME", "/"}};
    EXPECT_EQ(resolve_obs_cache_root("~/x"), "/x");
    EXPECT_EQ(resolve_obs_cache_root(""), "/.cache/deltacells");
  }
  // ~user: that user's home; an unknown user is refused (pathlib raises too).
  EXPECT_EQ(resolve_obs_cache_root("~root/x"), "/root/x");
  EXPECT_THROW(resolve_obs_cache_root("~nosuchuser_zz/x"), UsageError);
  EXPECT_EQ(std::getenv("DELTACELLS_CACHE"), nullptr);
}

// The same answers as Python's own pathlib/expanduser, for the same environment.
TEST(ObsCachePaths, MatchesPythonPathlib) {
  if (testing::run_process({"/usr/bin/python3", "--version"}).rc != 0) GTEST_SKIP() << "no python3";
  const std::string code = R"(
import os, sys
from pathlib import Path
cache_dir = sys.argv[1]
if cache_dir:
    root = Path(cache_dir).expanduser()
elif os.environ.get("DELTACELLS_CACHE"):
    root = Path(os.environ["DELTACELLS_CACHE"]).expanduser()
elif os.environ.get("XDG_CACHE_HOME"):
    root = Path(os.environ["XDG_CACHE_HOME"]) / "deltacells"
else:
    root = Path.home() / ".cache" / "deltacells"
print(root, end="")
)";
  struct Case {
    std::string home, dc, xdg, cache_dir;
  };
  const std::vector<Case> cases = {
      {"/home/u", "", "", ""}, {"/home/u/", "", "", "~/a/./b//"}, {"/h", "~/c", "", ""},     {"/h", "", "x/../y", ""},
      {"/h", "", "/abs/", ""}, {"/h", "", "", "../q/."},          {"/h", "/dc//", "/x", ""}, {"/", "", "", "~"},
      {"/h", "", "", "~/"},    {"/h", "", "", "//srv//share/"},   {"/", "", "", ""},         {"/h", "", "", "~root/x"}};
  for (const auto& c : cases) {
    EnvGuard env{{"HOME", c.home},
                 {"DELTACELLS_CACHE", c.dc.empty() ? std::nullopt : std::optional(c.dc)},
                 {"XDG_CACHE_HOME", c.xdg.empty() ? std::nullopt : std::optional(c.xdg)}};
    const auto run = testing::run_python(code, {c.cache_dir});
    ASSERT_EQ(run.rc, 0) << run.err;
    EXPECT_EQ(resolve_obs_cache_root(c.cache_dir), run.out)
        << "HOME=" << c.home << " DELTACELLS_CACHE=" << c.dc << " XDG_CACHE_HOME=" << c.xdg
        << " cache_dir=" << c.cache_dir;
  }
}

TEST(ObsCachePaths, FilesLiveUnderRootFingerprintObs) {
  const auto d = obs_test::make_obs_dataset(200, 50, 2);
  const auto store = d->open();
  EXPECT_EQ(store->cache_root(), d->cache);
  EXPECT_EQ(store->cache_dir(), d->cache + "/" + d->manifest.obs_fingerprint + "/obs");
  EXPECT_TRUE(store->localized_columns().empty());
  const std::vector<std::string> cols = {"cell type", "donor/id"};
  EXPECT_EQ(store->localize(cols), cols);
  EXPECT_TRUE(std::filesystem::is_regular_file(store->cache_dir() + "/cell%20type.arrow"));
  EXPECT_TRUE(std::filesystem::is_regular_file(store->cache_dir() + "/donor%2Fid.arrow"));
  EXPECT_TRUE(std::filesystem::is_regular_file(d->cache + "/" + d->manifest.obs_fingerprint + "/.lock"));
  EXPECT_EQ(store->localized_columns(), cols);
  // With the root from the environment.
  EnvGuard env{{"DELTACELLS_CACHE", d->cache + "//"}};
  const ObsStore from_env(d->store(), d->manifest);
  EXPECT_EQ(from_env.cache_root(), d->cache);
  EXPECT_EQ(from_env.localized_columns(), cols);
}

TEST(ObsCachePaths, UnknownColumnsListTheAvailableOnes) {
  const auto d = obs_test::make_obs_dataset(100, 50, 2);
  const auto store = d->open();
  const std::vector<std::string> cols = {"age", "nope", "it's"};
  try {
    store->localize(cols);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown obs columns ['nope', \"it's\"]; available: ['cell type', 'age', 'n_genes', 'count', "
              "'is_doublet', 'donor/id']");
  }
  const std::vector<std::int64_t> cells = {0};
  EXPECT_THROW(store->take(cells, cols), UsageError);
  EXPECT_TRUE(store->localized_columns().empty());
}

TEST(ObsCachePaths, TooLongQuotedNameIsAnIoErrorNamingTheColumn) {
  std::string long_name;
  for (int i = 0; i < 50; ++i) long_name += "é";  // 100 bytes, 300 quoted
  const auto d = obs_test::make_obs_dataset(100, 50, 2, 3, {long_name});
  const auto store = d->open();
  const std::vector<std::string> cols = {long_name};
  try {
    store->localize(cols);
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(long_name), std::string::npos) << e.what();
  }
  const std::vector<std::int64_t> cells = {1};
  EXPECT_THROW(store->take(cells, cols), IoError);
  EXPECT_EQ(store->localized_columns(), std::vector<std::string>{});
  EXPECT_EQ(store->columns().back(), long_name);
}

}  // namespace
}  // namespace tessera::cells
