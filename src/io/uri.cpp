// The URI resolver: the only place an input chooses its backend (include/tessera/io/uri.hpp).
#include "tessera/io/uri.hpp"

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"

namespace tessera::io {
namespace {

bool scheme_char(char c, bool first) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-';
}

}  // namespace

std::string uri_scheme(std::string_view uri) {
  const auto sep = uri.find("://");
  if (sep == std::string_view::npos || sep == 0) return {};
  for (std::size_t i = 0; i < sep; ++i)
    if (!scheme_char(uri[i], i == 0)) return {};
  std::string out(uri.substr(0, sep));
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string unsupported_scheme_text(std::string_view scheme) {
  return "unsupported URI scheme " + std::string(scheme) +
         ":// (supported: local paths, file://, http://, https://, s3://, gs://)";
}

UriKind uri_kind(std::string_view uri) {
  const std::string scheme = uri_scheme(uri);
  if (scheme.empty() || scheme == "file") return UriKind::Local;
  if (scheme == "http" || scheme == "https") return UriKind::Http;
  if (scheme == "s3" || scheme == "gs") return UriKind::Bucket;
  throw UnsupportedError(unsupported_scheme_text(scheme), std::string(uri));
}

bool is_remote_uri(std::string_view uri) {
  const std::string scheme = uri_scheme(uri);
  return scheme == "http" || scheme == "https" || scheme == "s3" || scheme == "gs";
}

std::string local_path(std::string_view uri) {
  const std::string scheme = uri_scheme(uri);
  if (scheme.empty()) return std::string(uri);
  if (scheme == "file") return std::string(uri.substr(7));
  throw UnsupportedError(unsupported_scheme_text(scheme), std::string(uri));
}

std::unique_ptr<ByteSource> open_source(const std::string& uri, const OpenOptions& options) {
  switch (uri_kind(uri)) {
    case UriKind::Http: return open_http_source(uri, options.http);
    case UriKind::Bucket: return open_bucket_source(parse_bucket_uri(uri), options.http);
    case UriKind::Local: break;
  }
  return open_file(local_path(uri), options.mode);
}

std::unique_ptr<Store> open_store(const std::string& uri, const OpenOptions& options) {
  switch (uri_kind(uri)) {
    case UriKind::Http: return std::make_unique<HttpStore>(uri, options.http);
    case UriKind::Bucket: return std::make_unique<BucketStore>(parse_bucket_uri(uri), options.http);
    case UriKind::Local: break;
  }
  return std::make_unique<DirectoryStore>(local_path(uri), options.mode);
}

std::string local_output_path(std::string_view uri) {
  const std::string scheme = uri_scheme(uri);
  if (!scheme.empty() && scheme != "file") refuse_remote_write(display_url(uri));
  return local_path(uri);
}

}  // namespace tessera::io
