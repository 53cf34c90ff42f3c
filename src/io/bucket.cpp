// s3:// and gs:// objects and stores: configuration, addressing and listing
// (include/tessera/io/bucket.hpp). Object reads are the HTTP engine's (src/io/http.cpp).
#include "tessera/io/bucket.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "tessera/core/error.hpp"

namespace tessera::io {
namespace {

// A listing larger than this many pages (of up to 1,000 keys) is refused rather than walked
// without end.
constexpr int kMaxListPages = 100'000;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

bool env_true(const char* name) {
  const std::string v = lower(env(name));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

bool valid_bucket_name(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(b.front()) || !alnum(b.back())) return false;
  return std::all_of(b.begin(), b.end(), [&](char c) { return alnum(c) || c == '.' || c == '-' || c == '_'; });
}

// The file named by `var`, else ~/.aws/<name>; empty when there is no home either.
std::string aws_file(const char* var, const char* name) {
  if (std::string v = env(var); !v.empty()) return v;
  if (std::string home = env("HOME"); !home.empty()) return home + "/.aws/" + name;
  return {};
}

// The sections of an AWS profile file, or nothing when the file does not exist.
std::optional<IniSections> read_ini(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_aws_ini(text.str(), path);
}

// The settings of one profile: the credentials file's [name] over the config file's
// [profile name] ([default] in both for the default profile).
struct Profile {
  std::map<std::string, std::string> values;
  bool found = false;
  std::string get(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  }
};

Profile aws_profile() {
  const std::string named = !env("AWS_PROFILE").empty() ? env("AWS_PROFILE") : env("AWS_DEFAULT_PROFILE");
  const std::string name = named.empty() ? "default" : named;
  const std::string config_path = aws_file("AWS_CONFIG_FILE", "config");
  const std::string credentials_path = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
  Profile p;
  if (const auto config = read_ini(config_path)) {
    const auto it = config->find(name == "default" ? name : "profile " + name);
    if (it != config->end()) p.values = it->second, p.found = true;
  }
  if (const auto credentials = read_ini(credentials_path)) {
    if (const auto it = credentials->find(name); it != credentials->end()) {
      for (const auto& [k, v] : it->second) p.values[k] = v;
      p.found = true;
    }
  }
  if (!named.empty() && !p.found)
    throw UsageError("AWS profile '" + name + "' is not in " + credentials_path + " or " + config_path);
  return p;
}

std::string strip_trailing_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

std::string endpoint_with_scheme(std::string endpoint, const char* setting) {
  endpoint = strip_trailing_slashes(std::move(endpoint));
  if (endpoint.find("://") == std::string::npos) endpoint = "http://" + endpoint;  // "host:port", as emulators give it
  const std::string scheme = lower(endpoint.substr(0, endpoint.find("://")));
  if (scheme != "http" && scheme != "https")
    throw UsageError(std::string(setting) + " must be an http:// or https:// URL, got '" + display_url(endpoint) + "'");
  return endpoint;
}

BucketAccess s3_access(const BucketUri& uri, const HttpOptions& base) {
  BucketAccess a;
  a.http = base;
  const Profile profile = aws_profile();
  a.region = !env("AWS_REGION").empty()           ? env("AWS_REGION")
             : !env("AWS_DEFAULT_REGION").empty() ? env("AWS_DEFAULT_REGION")
             : !profile.get("region").empty()     ? profile.get("region")
                                                  : "us-east-1";
  std::string endpoint = !env("AWS_ENDPOINT_URL_S3").empty() ? env("AWS_ENDPOINT_URL_S3")
                         : !env("AWS_ENDPOINT_URL").empty()  ? env("AWS_ENDPOINT_URL")
                                                             : profile.get("endpoint_url");
  bool path_style = !endpoint.empty() || uri.bucket.find('.') != std::string::npos;
  if (const std::string style = lower(env("TESSERA_S3_ADDRESSING")); !style.empty()) {
    if (style != "path" && style != "virtual")
      throw UsageError("TESSERA_S3_ADDRESSING must be 'path' or 'virtual', got '" + style + "'");
    path_style = style == "path";
  }
  if (endpoint.empty()) endpoint = "https://s3." + a.region + ".amazonaws.com";
  endpoint = endpoint_with_scheme(endpoint, "the S3 endpoint (AWS_ENDPOINT_URL)");
  if (path_style) {
    a.bucket_url = endpoint + "/" + uri.bucket;
  } else {
    const auto host = endpoint.find("://") + 3;
    a.bucket_url = endpoint.substr(0, host) + uri.bucket + "." + endpoint.substr(host);
  }

  std::string key_id = env("AWS_ACCESS_KEY_ID"), secret = env("AWS_SECRET_ACCESS_KEY"),
              token = env("AWS_SESSION_TOKEN");
  if (key_id.empty() || secret.empty()) {
    key_id = profile.get("aws_access_key_id");
    secret = profile.get("aws_secret_access_key");
    token = profile.get("aws_session_token");
  }
  if (env_true("AWS_NO_SIGN_REQUEST")) {
    a.anonymous = true;
    a.http.auth.denied_hint = "; the request was unsigned because AWS_NO_SIGN_REQUEST is set";
  } else if (key_id.empty() || secret.empty()) {
    a.anonymous = true;
    a.http.auth.denied_hint =
        "; no AWS credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in "
        "~/.aws/credentials), so the request was unsigned, which only public buckets answer";
  } else {
    a.http.auth.sigv4 = "aws:amz:" + a.region + ":s3";
    a.http.auth.access_key_id = key_id;
    a.http.auth.secret_access_key = secret;
    if (!token.empty()) a.http.auth.headers.push_back("x-amz-security-token: " + token);
    a.http.auth.denied_hint =
        "; the request was signed with access key " + key_id.substr(0, 4) + "… in region " + a.region;
  }
  return a;
}

BucketAccess gcs_access(const BucketUri& uri, const HttpOptions& base) {
  BucketAccess a;
  a.http = base;
  a.region = "auto";
  const std::string emulator = env("STORAGE_EMULATOR_HOST");
  const std::string endpoint = emulator.empty() ? std::string("https://storage.googleapis.com")
                                                : endpoint_with_scheme(emulator, "STORAGE_EMULATOR_HOST");
  a.bucket_url = endpoint + "/" + uri.bucket;
  if (const std::string token = env("GOOGLE_OAUTH_ACCESS_TOKEN"); !token.empty()) {
    a.http.auth.headers.push_back("Authorization: Bearer " + token);
    a.http.auth.denied_hint = "; the request carried the bearer token of GOOGLE_OAUTH_ACCESS_TOKEN";
  } else if (!env("GS_ACCESS_KEY_ID").empty() && !env("GS_SECRET_ACCESS_KEY").empty()) {
    a.http.auth.sigv4 = "aws:amz:auto:s3";
    a.http.auth.access_key_id = env("GS_ACCESS_KEY_ID");
    a.http.auth.secret_access_key = env("GS_SECRET_ACCESS_KEY");
    a.http.auth.denied_hint = "; the request was signed with the HMAC key of GS_ACCESS_KEY_ID";
  } else {
    a.anonymous = true;
    a.http.auth.denied_hint =
        "; no credentials were found (GOOGLE_OAUTH_ACCESS_TOKEN, or GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY), so "
        "the request was unsigned, which only public buckets answer";
  }
  return a;
}

std::string uri_text(const BucketUri& uri) {
  return uri.scheme + "://" + uri.bucket + (uri.key.empty() ? "" : "/" + uri.key);
}

}  // namespace

BucketUri parse_bucket_uri(std::string_view uri) {
  const auto sep = uri.find("://");
  if (sep == std::string_view::npos) throw UsageError("not a bucket URI: '" + std::string(uri) + "'");
  BucketUri out;
  out.scheme = lower(std::string(uri.substr(0, sep)));
  std::string_view rest = uri.substr(sep + 3);
  const auto slash = rest.find('/');
  out.bucket = std::string(rest.substr(0, slash));
  std::string key = slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1));
  while (!key.empty() && key.front() == '/') key.erase(key.begin());
  out.key = strip_trailing_slashes(std::move(key));
  if (out.bucket.empty())
    throw UsageError(std::string(uri) + ": no bucket name (expected " + out.scheme + "://BUCKET/KEY)",
                     std::string(uri));
  if (!valid_bucket_name(out.bucket))
    throw UsageError(
        std::string(uri) + ": '" + out.bucket +
            "' is not a bucket name (3 to 63 of a-z, 0-9, '.', '-', '_', starting and ending with a letter or digit)",
        std::string(uri));
  return out;
}

BucketAccess bucket_access(const BucketUri& uri, const HttpOptions& base) {
  return uri.scheme == "gs" ? gcs_access(uri, base) : s3_access(uri, base);
}

std::unique_ptr<ByteSource> open_bucket_source(const BucketUri& uri, const HttpOptions& base) {
  if (uri.key.empty()) throw UsageError(uri_text(uri) + ": names a bucket, not an object", uri_text(uri));
  const BucketAccess access = bucket_access(uri, base);
  return open_http_source(access.bucket_url + "/" + percent_encode(uri.key, true), access.http, uri_text(uri));
}

BucketStore::BucketStore(const BucketUri& root, const HttpOptions& base)
    : root_(root), access_(bucket_access(root, base)), name_(uri_text(root)) {
  objects_ = std::make_unique<HttpStore>(
      access_.bucket_url + (root_.key.empty() ? "" : "/" + percent_encode(root_.key, true)), access_.http, name_);
}

std::string BucketStore::full_key(const std::string& key) const {
  if (key.empty()) return root_.key;
  return root_.key.empty() ? key : root_.key + "/" + key;
}

std::unique_ptr<ByteSource> BucketStore::open(const std::string& key) const { return objects_->open(key); }
bool BucketStore::exists(const std::string& key) const { return objects_->exists(key); }
std::optional<std::vector<std::byte>> BucketStore::get(const std::string& key) const { return objects_->get(key); }
std::optional<RangeRead> BucketStore::get_range(const std::string& key, std::uint64_t offset,
                                                std::uint64_t length) const {
  return objects_->get_range(key, offset, length);
}
std::optional<RangeRead> BucketStore::get_suffix(const std::string& key, std::uint64_t length) const {
  return objects_->get_suffix(key, length);
}
std::optional<std::uint64_t> BucketStore::size(const std::string& key) const { return objects_->size(key); }
std::unique_ptr<ByteSource> BucketStore::open_whole(const std::string& key) const { return objects_->open_whole(key); }

BucketStore::Listing BucketStore::list_objects(const std::string& full_prefix, bool delimited) const {
  Listing out;
  std::string token;
  std::set<std::string> tokens_seen;
  for (int page = 0;; ++page) {
    if (page == kMaxListPages)
      throw IoError(name_ + ": listing '" + full_prefix + "' has more than " + std::to_string(kMaxListPages) + " pages",
                    name_);
    // Query parameters in the order SigV4 canonicalises them (sorted by name), values encoded.
    std::string query = "?";
    if (!token.empty()) query += "continuation-token=" + percent_encode(token, false) + "&";
    if (delimited) query += "delimiter=%2F&";
    query += "list-type=2&prefix=" + percent_encode(full_prefix, false);
    const std::string url = access_.bucket_url + "/" + query;
    const auto body = http_get(url, access_.http, name_ + " (listing '" + full_prefix + "')");
    if (!body) throw IoError(name_ + ": no such bucket '" + root_.bucket + "' (HTTP 404 on listing)", name_);
    const ListObjectsPage p = parse_list_objects_page(
        std::string_view(reinterpret_cast<const char*>(body->data()), body->size()), name_ + " (listing)");
    out.keys.insert(out.keys.end(), p.keys.begin(), p.keys.end());
    out.prefixes.insert(out.prefixes.end(), p.common_prefixes.begin(), p.common_prefixes.end());
    if (!p.truncated) break;
    if (!tokens_seen.insert(p.next_token).second)
      throw IoError(name_ + ": the listing repeats a continuation token (the server's pages do not advance)", name_);
    token = p.next_token;
  }
  return out;
}

std::vector<std::string> BucketStore::list(const std::string& prefix) const {
  const std::string root = root_.key.empty() ? std::string() : root_.key + "/";
  const std::string want = full_key(prefix);
  const Listing l = list_objects(want.empty() ? std::string() : want + "/", false);
  std::vector<std::string> keys;
  for (const std::string& k : l.keys) {
    if (!k.starts_with(root)) continue;
    std::string rel = k.substr(root.size());
    if (is_valid_key(rel)) keys.push_back(std::move(rel));  // "dir/" markers and odd keys are not objects here
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

DirListing BucketStore::list_dir(const std::string& prefix) const {
  const std::string want = full_key(prefix);
  const std::string full_prefix = want.empty() ? std::string() : want + "/";
  const Listing l = list_objects(full_prefix, true);
  DirListing out;
  for (const std::string& k : l.keys) {
    const std::string name = k.substr(std::min(k.size(), full_prefix.size()));
    if (!name.empty() && name.front() != '.' && name.find('/') == std::string::npos) out.objects.push_back(name);
  }
  for (const std::string& p : l.prefixes) {
    std::string name = p.substr(std::min(p.size(), full_prefix.size()));
    if (!name.empty() && name.back() == '/') name.pop_back();
    if (!name.empty() && name.front() != '.' && name.find('/') == std::string::npos) out.prefixes.push_back(name);
  }
  std::sort(out.objects.begin(), out.objects.end());
  std::sort(out.prefixes.begin(), out.prefixes.end());
  return out;
}

}  // namespace tessera::io
