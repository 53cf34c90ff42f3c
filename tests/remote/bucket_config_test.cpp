// s3:// and gs:// without a server: URI parsing, where requests go (endpoints, addressing), which
// credentials sign them (environment, profile files, anonymous), and the two parsers (ListObjectsV2
// XML, AWS INI files) on good and hostile input. The requests themselves are tested against an S3
// emulator in tests/python/test_buckets.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"
#include "support/testing.hpp"

namespace tessera::io {
namespace {

// Sets environment variables for one test and restores what was there before.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : kManaged) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      unsetenv(name);
    }
    for (const auto& [name, value] : vars) setenv(name, value, 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }

 private:
  static constexpr const char* kManaged[] = {"AWS_ACCESS_KEY_ID",           "AWS_SECRET_ACCESS_KEY",
                                             "AWS_SESSION_TOKEN",           "AWS_PROFILE",
                                             "AWS_DEFAULT_PROFILE",         "AWS_REGION",
                                             "AWS_DEFAULT_REGION",          "AWS_ENDPOINT_URL",
                                             "AWS_ENDPOINT_URL_S3",         "AWS_CONFIG_FILE",
                                             "AWS_SHARED_CREDENTIALS_FILE", "AWS_NO_SIGN_REQUEST",
                                             "TESSERA_S3_ADDRESSING",       "STORAGE_EMULATOR_HOST",
                                             "GOOGLE_OAUTH_ACCESS_TOKEN",   "GS_ACCESS_KEY_ID",
                                             "GS_SECRET_ACCESS_KEY",        "HOME"};
  std::map<std::string, std::optional<std::string>> saved_;
};

BucketAccess access_of(const std::string& uri) { return bucket_access(parse_bucket_uri(uri), HttpOptions{}); }

TEST(BucketUri, SplitsBucketAndKey) {
  const BucketUri u = parse_bucket_uri("s3://my-bucket/a/b/c.tet");
  EXPECT_EQ(u.scheme, "s3");
  EXPECT_EQ(u.bucket, "my-bucket");
  EXPECT_EQ(u.key, "a/b/c.tet");
  EXPECT_EQ(parse_bucket_uri("gs://b12/prefix/").key, "prefix");
  EXPECT_EQ(parse_bucket_uri("s3://b12").key, "");
  EXPECT_THROW(parse_bucket_uri("s3:///key"), UsageError);
  EXPECT_THROW(parse_bucket_uri("s3://ab/key"), UsageError);  // too short
  EXPECT_THROW(parse_bucket_uri("s3://Upper/key"), UsageError);
  try {
    parse_bucket_uri("s3://-bad/key");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'-bad' is not a bucket name"), std::string::npos) << e.what();
  }
}

TEST(BucketAccess, AwsDefaultsAreVirtualHostedAndUnsignedWithoutCredentials) {
  tessera::testing::TempDir home;
  const ScopedEnv env{{"HOME", home.path().c_str()}};
  const BucketAccess a = access_of("s3://bucket1/x");
  EXPECT_EQ(a.bucket_url, "https://bucket1.s3.us-east-1.amazonaws.com");
  EXPECT_TRUE(a.anonymous);
  EXPECT_TRUE(a.http.auth.sigv4.empty());
  EXPECT_NE(a.http.auth.denied_hint.find("no AWS credentials were found"), std::string::npos);
  // A dotted bucket name cannot be a TLS host label: path-style.
  EXPECT_EQ(access_of("s3://my.bucket/x").bucket_url, "https://s3.us-east-1.amazonaws.com/my.bucket");
}

TEST(BucketAccess, EnvironmentCredentialsRegionAndEndpoint) {
  tessera::testing::TempDir home;
  const ScopedEnv env{{"HOME", home.path().c_str()},
                      {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"},
                      {"AWS_SECRET_ACCESS_KEY", "secret-value"},
                      {"AWS_SESSION_TOKEN", "token-value"},
                      {"AWS_REGION", "eu-west-3"},
                      {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"}};
  const BucketAccess a = access_of("s3://bucket1/x");
  EXPECT_EQ(a.bucket_url, "http://127.0.0.1:9000/bucket1");  // an endpoint override: path-style
  EXPECT_FALSE(a.anonymous);
  EXPECT_EQ(a.http.auth.sigv4, "aws:amz:eu-west-3:s3");
  EXPECT_EQ(a.http.auth.access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(a.http.auth.secret_access_key, "secret-value");
  ASSERT_EQ(a.http.auth.headers.size(), 1u);
  EXPECT_EQ(a.http.auth.headers[0], "x-amz-security-token: token-value");
  // The hint names the key's first characters, never the secret.
  EXPECT_EQ(a.http.auth.denied_hint.find("secret-value"), std::string::npos);
}

TEST(BucketAccess, ProfilesFromSharedFiles) {
  tessera::testing::TempDir home;
  std::filesystem::create_directories(home.path() / ".aws");
  std::ofstream(home.path() / ".aws" / "credentials") << "[default]\naws_access_key_id = DEFKEY\n"
                                                         "aws_secret_access_key = defsecret\n\n"
                                                         "# a comment\n[science]\naws_access_key_id=SCIKEY\n"
                                                         "aws_secret_access_key=scisecret\n";
  std::ofstream(home.path() / ".aws" / "config") << "[default]\nregion = us-west-2\n"
                                                    "[profile science]\nregion = ap-south-1\n"
                                                    "endpoint_url = https://objects.example.org\n"
                                                    "s3 =\n  addressing_style = path\n";
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}};
    const BucketAccess a = access_of("s3://bucket1/x");
    EXPECT_EQ(a.http.auth.access_key_id, "DEFKEY");
    EXPECT_EQ(a.http.auth.sigv4, "aws:amz:us-west-2:s3");
    EXPECT_EQ(a.bucket_url, "https://bucket1.s3.us-west-2.amazonaws.com");
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}, {"AWS_PROFILE", "science"}};
    const BucketAccess a = access_of("s3://bucket1/x");
    EXPECT_EQ(a.http.auth.access_key_id, "SCIKEY");
    EXPECT_EQ(a.http.auth.secret_access_key, "scisecret");
    EXPECT_EQ(a.region, "ap-south-1");
    EXPECT_EQ(a.bucket_url, "https://objects.example.org/bucket1");
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}, {"AWS_PROFILE", "nobody"}};
    EXPECT_THROW(access_of("s3://bucket1/x"), UsageError);
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}, {"AWS_NO_SIGN_REQUEST", "YES"}};
    const BucketAccess a = access_of("s3://bucket1/x");
    EXPECT_TRUE(a.anonymous);
    EXPECT_TRUE(a.http.auth.sigv4.empty());
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}, {"TESSERA_S3_ADDRESSING", "path"}};
    EXPECT_EQ(access_of("s3://bucket1/x").bucket_url, "https://s3.us-west-2.amazonaws.com/bucket1");
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}, {"TESSERA_S3_ADDRESSING", "sideways"}};
    EXPECT_THROW(access_of("s3://bucket1/x"), UsageError);
  }
}

TEST(BucketAccess, BrokenProfileFileNamesFileAndLine) {
  tessera::testing::TempDir home;
  std::filesystem::create_directories(home.path() / ".aws");
  std::ofstream(home.path() / ".aws" / "credentials") << "[default]\naws_access_key_id = K\nthis line is wrong\n";
  const ScopedEnv env{{"HOME", home.path().c_str()}};
  try {
    access_of("s3://bucket1/x");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("credentials:3: expected 'name = value'"), std::string::npos) << e.what();
  }
}

TEST(BucketAccess, GcsEndpointsAndCredentials) {
  tessera::testing::TempDir home;
  {
    const ScopedEnv env{{"HOME", home.path().c_str()}};
    const BucketAccess a = access_of("gs://bucket1/x");
    EXPECT_EQ(a.bucket_url, "https://storage.googleapis.com/bucket1");
    EXPECT_TRUE(a.anonymous);
  }
  {
    const ScopedEnv env{{"HOME", home.path().c_str()},
                        {"STORAGE_EMULATOR_HOST", "127.0.0.1:4443"},
                        {"GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.token"}};
    const BucketAccess a = access_of("gs://bucket1/x");
    EXPECT_EQ(a.bucket_url, "http://127.0.0.1:4443/bucket1");
    ASSERT_EQ(a.http.auth.headers.size(), 1u);
    EXPECT_EQ(a.http.auth.headers[0], "Authorization: Bearer ya29.token");
  }
  {
    const ScopedEnv env{
        {"HOME", home.path().c_str()}, {"GS_ACCESS_KEY_ID", "GOOGKEY"}, {"GS_SECRET_ACCESS_KEY", "gsecret"}};
    const BucketAccess a = access_of("gs://bucket1/x");
    EXPECT_EQ(a.http.auth.sigv4, "aws:amz:auto:s3");
    EXPECT_EQ(a.http.auth.access_key_id, "GOOGKEY");
  }
}

constexpr const char* kPage1 =
    R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>ds/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>ds/manifest.json</Key><Size>10</Size></Contents>
<Contents><Key>ds/a &amp; b.txt</Key><Size>3</Size></Contents>
<CommonPrefixes><Prefix>ds/tiles/</Prefix></CommonPrefixes>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken></ListBucketResult>)";

TEST(ListObjectsPage, ReadsKeysPrefixesAndContinuation) {
  const ListObjectsPage p = parse_list_objects_page(kPage1, "s3://b");
  EXPECT_EQ(p.keys, (std::vector<std::string>{"ds/manifest.json", "ds/a & b.txt"}));
  EXPECT_EQ(p.common_prefixes, (std::vector<std::string>{"ds/tiles/"}));
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  const ListObjectsPage last =
      parse_list_objects_page("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", "s3://b");
  EXPECT_FALSE(last.truncated);
  EXPECT_TRUE(last.keys.empty());
}

TEST(ListObjectsPage, HostileDocumentsAreFormatErrors) {
  const std::string deep = std::string(100, '<') + "x";
  std::string nested = "<ListBucketResult>";
  for (int i = 0; i < 40; ++i) nested += "<a>";
  for (int i = 0; i < 40; ++i) nested += "</a>";
  nested += "</ListBucketResult>";
  const std::string bomb = R"(<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>
<ListBucketResult><Contents><Key>&lol2;</Key></Contents></ListBucketResult>)";
  for (const std::string& doc :
       {std::string(), std::string(kPage1).substr(0, 200), std::string("<Error><Code>AccessDenied</Code></Error>"),
        nested, bomb, deep, std::string("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
        std::string("<ListResult/>"), nested.substr(0, 18) + "<a>" + std::string(40, 'x') + "<b/></a>" + deep}) {
    try {
      parse_list_objects_page(doc, "s3://b (listing)");
      ADD_FAILURE() << "accepted: " << doc;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("s3://b (listing): not a ListObjectsV2 answer"), std::string::npos)
          << e.what();
    }
  }
  // Every bit flip of a valid page parses or is refused cleanly.
  std::string flipped(kPage1);
  for (std::size_t i = 0; i < flipped.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      try {
        (void)parse_list_objects_page(flipped, "s3://b");
      } catch (const FormatError&) {
      }
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
    }
  }
}

TEST(AwsIni, SectionsSettingsAndErrors) {
  const IniSections s = parse_aws_ini("# top\n[default]\nregion = eu-north-1\n; c\n[profile x]\nk=v = w\n\n", "cfg");
  EXPECT_EQ(s.at("default").at("region"), "eu-north-1");
  EXPECT_EQ(s.at("profile x").at("k"), "v = w");
  for (const std::string bad : {"k = v\n", "[unclosed\n", "[]\n", "[a]\njust words\n", "[a]\n= v\n", "  indented\n"}) {
    EXPECT_THROW(parse_aws_ini(bad, "cfg"), FormatError) << bad;
  }
}

}  // namespace
}  // namespace tessera::io
