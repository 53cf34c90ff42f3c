// HTTP answers that are not plain bytes: a missing object, an object replaced between two reads,
// operations that need listing, and the Store contract (clipped ranges, suffixes, HEAD sizes)
// checked against a local directory holding the same files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "nginx_server.hpp"
#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/http.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_NGINX()                       \
  NginxServer* server = conformance_server(); \
  if (!server) {                              \
    GTEST_SKIP() << kNoNginx;                 \
  }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return std::string("IoError: ") + e.what();
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();
  }
  return "no error";
}

TEST(HttpErrors, MissingObjectIsAClearIoError) {
  REQUIRE_NGINX();
  const std::string url = server->url("tetration/no_such_file.tet");
  const std::string what = error_of([&] { io::open_source(url + "?sig=secret"); });
  EXPECT_EQ(what, "IoError: " + url + ": not found (HTTP 404 Not Found, attempt 1 of 4)");
  const auto cli = run_cli({"tet", "info", url});
  EXPECT_EQ(cli.rc, 1);
  EXPECT_NE(cli.err.find(url + ": not found (HTTP 404 Not Found, attempt 1 of 4)"), std::string::npos) << cli.err;
  const auto cells = run_cli({"cells", "info", server->url("deltacells/no_such_dataset")});
  EXPECT_EQ(cells.rc, 1);
  EXPECT_NE(cells.err.find("manifest.json is missing"), std::string::npos) << cells.err;
}

// 5xx and 429 are retried up to the attempt bound (with backoff), 403 is answered at once; the
// server's access log counts the requests.
TEST(HttpErrors, RetriesFollowTheStatus) {
  REQUIRE_NGINX();
  io::HttpOptions options;
  options.attempts = 3;
  options.backoff_ms = 1;
  for (const std::string status : {"503", "429"}) {
    const std::string path = "status/" + status;
    const std::string what = error_of([&] { io::open_http_source(server->url(path) + "?token=secret", options); });
    EXPECT_EQ(what, "IoError: " + server->url(path) + ": HTTP " + status +
                        (status == "429" ? " Too Many Requests" : "") + " (attempt 3 of 3, giving up)");
    EXPECT_EQ(server->requests_for(path + "?token=secret"), 3u) << status;
  }
  const std::string what = error_of([&] { io::open_http_source(server->url("status/403"), options); });
  EXPECT_EQ(what, "IoError: " + server->url("status/403") + ": access denied (HTTP 403 Forbidden, attempt 1 of 3)");
  EXPECT_EQ(server->requests_for("status/403"), 1u);
  const auto cli = run_cli({"tet", "info", server->url("status/503")}, {.env = {{"TESSERA_HTTP_RETRIES", "2"}}});
  EXPECT_EQ(cli.rc, 1);
  EXPECT_NE(cli.err.find("HTTP 503 (attempt 2 of 2, giving up)"), std::string::npos) << cli.err;
}

// HTTPS verifies the server: a self-signed certificate is refused (and not retried) until its CA
// is given, after which the object reads as over HTTP.
TEST(HttpErrors, HttpsVerifiesTheServer) {
  if (NginxServer::binary().empty()) GTEST_SKIP() << kNoNginx;
  NginxServer server(conformance_dir(), /*tls=*/true);
  const std::string url = server.url("tetration/sample.tet");
  ASSERT_EQ(url.substr(0, 8), "https://");
  io::HttpOptions options;
  options.backoff_ms = 1;
  const std::string what = error_of([&] { io::open_http_source(url, options); });
  EXPECT_NE(what.find("IoError: " + url + ": "), std::string::npos) << what;
  EXPECT_NE(what.find("certificate"), std::string::npos) << what;
  EXPECT_NE(what.find("attempt 1 of 4"), std::string::npos) << what;
  options.ca_file = server.ca_file().string();
  const auto source = io::open_http_source(url, options);
  EXPECT_EQ(source->read_vector(0, source->size()), read_file_bytes(tet_fixture("sample.tet")));
  const auto cli =
      run_cli({"tet", "info", "--json", url}, {.env = {{"TESSERA_HTTP_CA_BUNDLE", server.ca_file().string()}}});
  EXPECT_EQ(cli.rc, 0) << cli.err;
}

TEST(HttpErrors, ObjectReplacedBetweenReadsIsRefused) {
  if (NginxServer::binary().empty()) GTEST_SKIP() << kNoNginx;
  TempDir root;
  const auto original = read_file_bytes(tet_fixture("large.tet"));
  write_file_bytes(root / "x.tet", original);
  NginxServer server(root.path());
  const auto source = io::open_source(server.url("x.tet"));
  ASSERT_EQ(source->size(), original.size());
  EXPECT_EQ(source->read_vector(0, 64), std::vector<std::byte>(original.begin(), original.begin() + 64));
  // A new version, same size, different bytes and modification time: the pinned ETag no longer
  // matches, so the next range must fail rather than return bytes of the new version.
  auto changed = original;
  for (auto& b : changed) b = static_cast<std::byte>(~std::to_integer<unsigned>(b));
  write_file_bytes(root / "x.tet.new", changed);
  fs::last_write_time(root / "x.tet.new", fs::last_write_time(root / "x.tet") + std::chrono::seconds(100));
  fs::rename(root / "x.tet.new", root / "x.tet");
  const std::string what = error_of([&] { (void)source->read_vector(100, 64); });
  EXPECT_NE(what.find("IoError: " + server.url("x.tet") + ": object changed while reading"), std::string::npos) << what;
  // Opened again, the new version reads whole.
  EXPECT_EQ(io::open_source(server.url("x.tet"))->read_vector(100, 64),
            std::vector<std::byte>(changed.begin() + 100, changed.begin() + 164));
}

TEST(HttpErrors, StoreAnswersLikeADirectory) {
  REQUIRE_NGINX();
  const fs::path dir = conformance_dir() / "deltacells/dataset_small";
  const auto local = io::open_store(dir.string());
  const auto remote = io::open_store(server->url("deltacells/dataset_small/"));
  EXPECT_EQ(remote->name(), server->url("deltacells/dataset_small"));
  const std::string key = "manifest.json";
  const auto size = local->size(key);
  ASSERT_TRUE(size);
  EXPECT_EQ(remote->size(key), size);
  EXPECT_TRUE(remote->exists(key));
  EXPECT_FALSE(remote->exists("no_such_object.json"));
  EXPECT_EQ(remote->get("no_such_object.json"), std::nullopt);
  EXPECT_EQ(remote->open("no_such_object.json"), nullptr);
  EXPECT_EQ(remote->get(key), local->get(key));
  for (const auto& [offset, length] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {0, 10}, {5, 3}, {*size - 4, 100}, {*size, 10}, {*size + 50, 10}, {0, *size + 10}}) {
    SCOPED_TRACE(std::to_string(offset) + "+" + std::to_string(length));
    const auto a = local->get_range(key, offset, length);
    const auto b = remote->get_range(key, offset, length);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(b->bytes, a->bytes);
    EXPECT_EQ(b->object_size, a->object_size);
  }
  for (const std::uint64_t length : {std::uint64_t{1}, std::uint64_t{16}, *size, *size + 100}) {
    const auto a = local->get_suffix(key, length);
    const auto b = remote->get_suffix(key, length);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(b->bytes, a->bytes) << length;
    EXPECT_EQ(b->object_size, a->object_size) << length;
  }
  const auto source = remote->open(key);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->read_vector(3, 7), local->open(key)->read_vector(3, 7));
  EXPECT_THROW(source->read_vector(*size - 2, 3), IoError);
}

TEST(HttpErrors, OperationsThatListAreUnsupported) {
  REQUIRE_NGINX();
  const std::string leaf = server->url("zagg/tests/data/spec/minimal/1/1/2/1/3/11213.zarr");
  for (const char* command : {"verify", "hashes"}) {
    const auto r = run_cli({"ragged", command, leaf});
    EXPECT_EQ(r.rc, 1) << command;
    EXPECT_NE(r.err.find("listing objects is not supported over plain HTTP"), std::string::npos)
        << command << ": " << r.err;
  }
}

// The request counts docs/remote.md states, read from the server's access log.
TEST(HttpErrors, RequestCountsMatchTheDocs) {
  REQUIRE_NGINX();
  const auto tet_before = server->requests_for("tetration/sample.tet");
  ASSERT_EQ(run_cli({"tet", "info", server->url("tetration/sample.tet")}).rc, 0);
  // 1 HEAD + 1 GET: a file under about 1 MiB is read whole when it is opened.
  EXPECT_EQ(server->requests_for("tetration/sample.tet") - tet_before, 2u);
  const auto manifest_before = server->requests_for("deltacells/dataset_small/manifest.json");
  ASSERT_EQ(run_cli({"cells", "info", server->url("deltacells/dataset_small")}).rc, 0);
  EXPECT_EQ(server->requests_for("deltacells/dataset_small/manifest.json") - manifest_before, 1u);
  // A tile is read whole: one GET, no HEAD to learn its size first.
  std::size_t tiles_before = 0;
  for (int t = 0; t < 3; ++t)
    tiles_before += server->requests_for("deltacells/dataset_small/tiles/tile_00000" + std::to_string(t) + ".dct");
  ASSERT_EQ(run_cli({"cells", "get", server->url("deltacells/dataset_small"), "0:10"}).rc, 0);
  std::size_t tiles_after = 0;
  for (int t = 0; t < 3; ++t)
    tiles_after += server->requests_for("deltacells/dataset_small/tiles/tile_00000" + std::to_string(t) + ".dct");
  EXPECT_EQ(tiles_after - tiles_before, 3u);
}

TEST(HttpErrors, WritersRefuseUrls) {
  REQUIRE_NGINX();
  const std::string url = server->url("tetration/sample.tet");
  const auto r = run_cli({"tet", "repair", url});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: writing to " + url + " is not supported yet (write to a local path)\n");
}

}  // namespace
}  // namespace tessera::testing
