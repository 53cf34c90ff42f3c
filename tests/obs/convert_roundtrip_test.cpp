// Obs tables built in pandas come back exactly: two h5ad files (tests/obs/pandas_obs_fixture.py)
// converted by the CLI, read back with `cells get --obs` (JSON and text) and compared with the
// values pandas printed; `cells verify` checks the sidecar, `cells obs localize` reports reuse.
#include <gtest/gtest.h>

#include "cells/anndata_support.hpp"
#include "support/testing.hpp"
#include "tessera/codec/json.hpp"

namespace tessera::cells {
namespace {

using testing::run_cli;

const char* kColumns = "tissue,big,age,n_genes,count_nullable,flag_nullable,is_qc,small_u8,obs_names";

TEST(ObsConvertRoundTrip, PandasObsComesBackExactly) {
  if (!test::have_anndata()) GTEST_SKIP() << "anndata unavailable";
  testing::TempDir tmp;
  const auto fixture = testing::run_process(
      {"/usr/bin/python3", (testing::source_dir() / "tests/obs/pandas_obs_fixture.py").string(), tmp.path().string()});
  ASSERT_EQ(fixture.rc, 0) << fixture.err;
  const nlohmann::json want = nlohmann::json::parse(fixture.out);
  const auto ds = (tmp / "ds").string();
  const auto conv = run_cli({"cells", "convert", "--h5ad-glob", (tmp / "*.h5ad").string(), "--output", ds,
                             "--tile-size", "8", "--obs-tiles-per-file", "2", "--max-categories", "4"});
  ASSERT_EQ(conv.rc, 0) << conv.err;
  EXPECT_NE(conv.out.find("obs: 9 columns (1 categorical, strings: ['big', 'obs_names'])"), std::string::npos)
      << conv.out;
  EXPECT_NE(conv.out.find("parquet shard(s)"), std::string::npos) << conv.out;
  const auto verify = run_cli({"cells", "verify", ds});
  ASSERT_EQ(verify.rc, 0) << verify.err;
  EXPECT_NE(verify.out.find("verified obs (3 shard(s))"), std::string::npos) << verify.out;

  const std::string cache = (tmp / "cache").string();
  const std::size_t n = want["obs_names"].size();
  const auto get =
      run_cli({"cells", "get", ds, "0:" + std::to_string(n), "--json", "--obs", kColumns, "--cache-dir", cache});
  ASSERT_EQ(get.rc, 0) << get.err;
  EXPECT_NE(get.err.find("warning: obs columns"), std::string::npos) << get.err;  // localized on the way
  const nlohmann::json got = nlohmann::json::parse(get.out)["obs"];
  for (const auto& [name, values] : want.items()) {
    ASSERT_TRUE(got.contains(name)) << name;
    EXPECT_EQ(got[name], values) << name;
  }
  // Now local: no warning, and the text form prints the same values.
  const auto text =
      run_cli({"cells", "get", ds, "0,35", "--obs", "tissue,age,flag_nullable,is_qc", "--cache-dir", cache});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_EQ(text.err, "");
  const std::string first_line = text.out.substr(0, text.out.find('\n'));
  EXPECT_EQ(first_line.rfind("0\t", 0), 0u) << first_line;
  EXPECT_NE(first_line.find("\ttissue=\tage=\tflag_nullable=\tis_qc=True\t"), std::string::npos) << first_line;
  const auto local = run_cli({"cells", "obs", "localize", ds, "--all", "--cache-dir", cache});
  ASSERT_EQ(local.rc, 0) << local.err;
  EXPECT_EQ(local.out.rfind("already local in ", 0), 0u) << local.out;
  const auto unknown = run_cli({"cells", "obs", "localize", ds, "--columns", "tissue,nope", "--cache-dir", cache});
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.err.find("error: unknown obs columns ['nope']; available: ['tissue', 'big',"), std::string::npos)
      << unknown.err;
  const auto neither = run_cli({"cells", "obs", "localize", ds, "--cache-dir", cache});
  EXPECT_EQ(neither.rc, 2);
  EXPECT_EQ(neither.err, "give exactly one of --columns a,b,c or --all\n");
}

TEST(ObsConvertRoundTrip, NoObsAndNoVarStoreNeither) {
  if (!test::have_anndata()) GTEST_SKIP() << "anndata unavailable";
  testing::TempDir tmp;
  const auto fixture = testing::run_process(
      {"/usr/bin/python3", (testing::source_dir() / "tests/obs/pandas_obs_fixture.py").string(), tmp.path().string()});
  ASSERT_EQ(fixture.rc, 0) << fixture.err;
  const auto ds = (tmp / "ds").string();
  ASSERT_EQ(run_cli({"cells", "convert", "--h5ad-glob", (tmp / "a.h5ad").string(), "--output", ds, "--no-obs",
                     "--no-var", "--quiet"})
                .rc,
            0);
  const auto info = run_cli({"cells", "info", ds});
  EXPECT_NE(info.out.find("obs:            none\n"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("var table:      no\n"), std::string::npos) << info.out;
  const auto obs = run_cli({"cells", "obs", "info", ds});
  EXPECT_EQ(obs.rc, 1);
  EXPECT_EQ(obs.out, "this dataset has no obs\n");
  // --obs-exclude leaves columns out; obs_names can be dropped too.
  const auto ds2 = (tmp / "ds2").string();
  ASSERT_EQ(run_cli({"cells", "convert", "--h5ad-glob", (tmp / "a.h5ad").string(), "--output", ds2, "--obs-exclude",
                     "age,big", "--no-obs-names", "--quiet"})
                .rc,
            0);
  const auto info2 = run_cli({"cells", "obs", "info", ds2, "--cache-dir", (tmp / "c").string()});
  EXPECT_EQ(info2.out.find("age "), std::string::npos) << info2.out;
  EXPECT_EQ(info2.out.find("obs_names"), std::string::npos) << info2.out;
  EXPECT_NE(info2.out.find("tissue "), std::string::npos) << info2.out;
}

}  // namespace
}  // namespace tessera::cells
