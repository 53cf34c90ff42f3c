// The URI resolver and the HTTP layer's pieces that need no server: scheme parsing, which inputs
// choose which backend, refusals (s3://, gs://, writes, listing), URL display without secrets,
// the retry setting, and retries giving up on a closed loopback port.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tessera/core/error.hpp"
#include "tessera/io/http.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::io {
namespace {

TEST(Uri, SchemeAndKind) {
  EXPECT_EQ(uri_scheme("data/x.tet"), "");
  EXPECT_EQ(uri_scheme("/abs/x.tet"), "");
  EXPECT_EQ(uri_scheme("file:///abs/x.tet"), "file");
  EXPECT_EQ(uri_scheme("HTTPS://h/x"), "https");
  EXPECT_EQ(uri_scheme("weird dir://x"), "");  // not a scheme: a path
  EXPECT_EQ(uri_kind("x.tet"), UriKind::Local);
  EXPECT_EQ(uri_kind("file:///x.tet"), UriKind::Local);
  EXPECT_EQ(uri_kind("http://127.0.0.1/x"), UriKind::Http);
  EXPECT_EQ(uri_kind("https://127.0.0.1/x"), UriKind::Http);
  EXPECT_TRUE(is_remote_uri("http://127.0.0.1/x"));
  EXPECT_FALSE(is_remote_uri("file:///x"));
  EXPECT_EQ(local_path("file:///abs/x.tet"), "/abs/x.tet");
  EXPECT_EQ(local_path("rel/x.tet"), "rel/x.tet");
}

TEST(Uri, UnknownSchemesAreRefusedAndBucketsAreNotLocal) {
  for (const std::string uri : {"ftp://host/x", "hdfs://host/x"}) {
    EXPECT_THROW(open_source(uri), UnsupportedError) << uri;
    EXPECT_THROW(open_store(uri), UnsupportedError) << uri;
    EXPECT_THROW(local_path(uri), UnsupportedError) << uri;
  }
  for (const std::string uri : {"s3://bucket/x.tet", "gs://bucket/x.tet"}) {
    EXPECT_EQ(uri_kind(uri), UriKind::Bucket) << uri;
    EXPECT_TRUE(is_remote_uri(uri)) << uri;
    EXPECT_THROW(local_path(uri), UnsupportedError) << uri;
  }
  try {
    open_store("ftp://host/prefix");
    FAIL();
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unsupported URI scheme ftp:// (supported: local paths, file://, http://, https://, s3://, gs://)");
  }
}

TEST(Uri, WritesStayLocal) {
  EXPECT_EQ(local_output_path("out/x.tet"), "out/x.tet");
  EXPECT_EQ(local_output_path("file:///tmp/x.tet"), "/tmp/x.tet");
  try {
    local_output_path("https://user:secret@127.0.0.1/x.tet?token=abc");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "writing to https://127.0.0.1/x.tet is not supported yet (write to a local path)");
  }
  HttpStore store("http://127.0.0.1:1/base");
  const std::byte b{1};
  EXPECT_THROW(store.put("k", std::span(&b, 1)), UsageError);
  EXPECT_THROW(store.erase("k"), UsageError);
  EXPECT_THROW(store.list(""), UnsupportedError);
  EXPECT_THROW(store.list_dir(""), UnsupportedError);
  EXPECT_THROW(store.open("../escape"), UsageError);
}

TEST(Uri, DisplayUrlDropsQueryAndCredentials) {
  EXPECT_EQ(display_url("https://h.example/a/b.tet?X-Amz-Signature=s#frag"), "https://h.example/a/b.tet");
  EXPECT_EQ(display_url("http://user:pw@127.0.0.1:8080/x?y"), "http://127.0.0.1:8080/x");
  EXPECT_EQ(display_url("http://127.0.0.1/a@b"), "http://127.0.0.1/a@b");
  EXPECT_EQ(HttpStore("http://u:p@127.0.0.1:9/base/?sig=1").name(), "http://127.0.0.1:9/base");
}

TEST(Uri, RetriesFromEnvironment) {
  ::setenv("TESSERA_HTTP_RETRIES", "7", 1);
  EXPECT_EQ(http_options_from_env().attempts, 7);
  ::setenv("TESSERA_HTTP_RETRIES", "zero", 1);
  EXPECT_THROW(http_options_from_env(), UsageError);
  ::setenv("TESSERA_HTTP_RETRIES", "0", 1);
  EXPECT_THROW(http_options_from_env(), UsageError);
  ::unsetenv("TESSERA_HTTP_RETRIES");
  EXPECT_EQ(http_options_from_env().attempts, 4);
}

// Nothing listens on the port: every attempt is a connection error, retried, then reported with
// the URL (no query string) and the attempt count.
TEST(Uri, ConnectionErrorsAreRetriedThenReported) {
  const int port = 1;  // a privileged loopback port nothing in the tests listens on: refused at once
  HttpOptions options;
  options.attempts = 3;
  options.backoff_ms = 1;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x.tet?token=secret";
  try {
    open_http_source(url, options);
    FAIL();
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("http://127.0.0.1:1/x.tet"), std::string::npos) << what;
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
    EXPECT_NE(what.find("attempt 3 of 3"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera::io
