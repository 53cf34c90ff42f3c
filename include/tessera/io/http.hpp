// Objects read over HTTP(S) with ranged GETs (libcurl).
//
// `open_http_source(url)` is one object: the first contact (a HEAD; a one-byte ranged GET when the
// server gives no length) learns the size and pins the object's validator (its strong ETag, else
// its Last-Modified). Every later `read_at` is one `GET` with `Range: bytes=a-b` and `If-Match`
// (or `If-Unmodified-Since`); a 412 answer, a different validator, or a different total size in
// Content-Range is IoError "object changed while reading", so a reader never mixes bytes of two
// versions of an object.
//
// `HttpStore` is a Store over the objects below a base URL: `open(key)` is an HttpSource of
// base/key (nullptr on 404), `exists` and `size` are HEADs, `get`/`get_range`/`get_suffix` are
// one GET each (a 404 is std::nullopt). Plain HTTP cannot list, so `list` and `list_dir` throw
// UnsupportedError; writes throw UsageError.
//
// Requests: TLS peer and host verification stay on; connect and low-speed timeouts; connection
// errors, timeouts, 429, 5xx and short bodies are retried with exponential backoff and jitter up
// to `HttpOptions::attempts` tries in total; 403 and 404 are answered at once. Error messages name
// the URL without its query string or user information, the HTTP status and the attempt count,
// never credentials.
//
// Thread-safety: sources and stores are immutable after construction and every method may be
// called from several threads at once; each thread reuses its own libcurl handle (and so its own
// kept-alive connections). Lifetime: a source or store owns nothing but its URL and options, and
// stays usable as long as it exists; objects `open` returned do not refer to their store.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/store.hpp"

namespace tessera::io {

// How requests authenticate. Plain HTTP(S) leaves it empty; the bucket backends (io/bucket.hpp)
// fill it from the user's credentials. None of these values ever appears in a message.
struct HttpAuth {
  // libcurl's CURLOPT_AWS_SIGV4 provider, "aws:amz:REGION:s3"; empty: requests are not signed.
  std::string sigv4{};
  std::string access_key_id{};
  std::string secret_access_key{};
  // Extra request headers, e.g. "x-amz-security-token: …" or "Authorization: Bearer …".
  std::vector<std::string> headers{};
  // Added to the message of a 403, e.g. that no credentials were found so the request was unsigned.
  std::string denied_hint{};
};

struct HttpOptions {
  // Tries per request in total (the first one included), at least 1. TESSERA_HTTP_RETRIES.
  int attempts = 4;
  // Seconds to establish a connection. TESSERA_HTTP_CONNECT_TIMEOUT.
  long connect_timeout_s = 10;
  // A transfer slower than 1 byte/s for this many seconds is abandoned (and retried).
  // TESSERA_HTTP_LOW_SPEED_TIME.
  long low_speed_time_s = 30;
  // First backoff delay; each retry doubles it (with ±50 % jitter), capped at 10 s.
  long backoff_ms = 100;
  // A PEM file of CA certificates to verify servers with instead of the system's (private
  // endpoints); empty: the system store. Verification itself is never turned off.
  // TESSERA_HTTP_CA_BUNDLE.
  std::string ca_file{};
  HttpAuth auth{};
};

// The defaults above, overridden by the environment variables named there (UsageError when one
// is set but is not a positive integer).
HttpOptions http_options_from_env();

// `s` percent-encoded as RFC 3986 asks of a URL path (`keep_slash`) or a query value: every byte
// other than A-Z a-z 0-9 - . _ ~ (and '/' in a path) becomes %XX. SigV4 signs exactly this form.
std::string percent_encode(std::string_view s, bool keep_slash);

// One GET of a whole URL (listings and other documents that are not objects of a store): the body,
// std::nullopt on 404, IoError on any other failure (with the retries of `options`).
// `shown` names the document in messages (default: display_url(url)).
std::optional<std::vector<std::byte>> http_get(const std::string& url, const HttpOptions& options,
                                               const std::string& shown = {});

// UsageError "writing to TARGET is not supported yet (write to a local path)": every remote store
// and output refuses writes with it.
[[noreturn]] void refuse_remote_write(const std::string& target);

// The URL as error messages show it: without `?query`, `#fragment` or `user:password@`.
std::string display_url(std::string_view url);

// Opens one object (see above). IoError when it does not exist (404), cannot be read, or the
// server does not answer ranged reads.
// `shown` is the source's name() and names it in messages (default: display_url(url)); the bucket
// backends pass the s3:// or gs:// URI the user gave.
std::unique_ptr<ByteSource> open_http_source(const std::string& url,
                                             const HttpOptions& options = http_options_from_env(),
                                             const std::string& shown = {});

// Thread-safety and lifetime: as every Store (io/store.hpp).
class HttpStore final : public Store {
 public:
  // `base_url` is the prefix the keys are appended to (a trailing '/' is optional).
  // `display_name` is the store's name() (default: display_url of the base); objects are named
  // name() + "/" + key in messages.
  explicit HttpStore(std::string base_url, HttpOptions options = http_options_from_env(),
                     std::string display_name = {});
  std::unique_ptr<ByteSource> open(const std::string& key) const override;
  bool exists(const std::string& key) const override;
  std::vector<std::string> list(const std::string& prefix) const override;
  void put(const std::string& key, std::span<const std::byte> bytes) override;
  void erase(const std::string& key) override;
  const std::string& name() const override { return name_; }

  std::optional<std::vector<std::byte>> get(const std::string& key) const override;
  std::optional<RangeRead> get_range(const std::string& key, std::uint64_t offset, std::uint64_t length) const override;
  std::optional<RangeRead> get_suffix(const std::string& key, std::uint64_t length) const override;
  std::optional<std::uint64_t> size(const std::string& key) const override;
  DirListing list_dir(const std::string& prefix) const override;
  void erase_prefix(const std::string& prefix) override;
  // One GET of the whole object, held in memory.
  std::unique_ptr<ByteSource> open_whole(const std::string& key) const override;
  bool remote() const override { return true; }

  // base/key (percent-encoded) plus the base's query string (keys are checked with is_valid_key).
  std::string url_of(const std::string& key) const;

 private:
  std::string shown_of(const std::string& key) const;
  std::string base_;   // ends with '/'
  std::string query_;  // "?…" of the base URL, appended to every object URL (or empty)
  std::string name_;   // display_url of the base, without the trailing '/'
  HttpOptions options_;
};

}  // namespace tessera::io
