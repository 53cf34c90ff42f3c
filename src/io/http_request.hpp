// The HTTP request engine shared by the io backends (not installed): one libcurl easy handle per
// thread, one request with retries, backoff and timeouts, and the answer's status, validators and
// body. io/http.cpp builds ranged reads on it, io/bucket_write.cpp object writes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/http.hpp"

namespace tessera::io::detail {

enum class Method { Head, Get, Put, Post, Delete };

struct Request {
  Method method = Method::Get;
  std::string range{};     // "a-b" or "-n"; empty: the whole object
  std::string if_match{};  // a strong ETag
  std::string if_unmodified_since{};
  std::uint64_t max_body = 0;  // the body is refused past this many bytes (0: no limit)
  std::string shown{};         // the name messages give the object (default: display_url of the URL)
  // What a PUT or POST sends (it must outlive the request), and its SHA-256 in hex, which SigV4
  // signs as x-amz-content-sha256 (empty: the hash of no bytes).
  std::span<const std::byte> body{};
  std::string body_sha256{};
  std::vector<std::string> headers{};  // further request headers ("Name: value")
  // Keep up to 64 KiB of a non-2xx answer's body (S3 error documents name the reason).
  bool keep_error_body = false;
  // Where a 2xx body goes, from its first byte, instead of Response::body: a ranged read lands in
  // its destination without a growing buffer and a second copy. A body longer than this is
  // refused as one past max_body is.
  std::span<std::byte> into{};
};

struct Response {
  long status = 0;
  std::string etag;
  std::string last_modified;
  std::optional<std::uint64_t> content_length;
  std::optional<std::uint64_t> range_total;  // the size after '/' in Content-Range
  std::vector<std::byte> body;               // empty for a 2xx answer received into Request::into
  std::uint64_t received = 0;                // bytes of a 2xx body, wherever they went
  bool body_too_long = false;
  int attempt = 1;   // the try that gave this answer
  int attempts = 1;  // tries allowed
};

std::optional<std::uint64_t> parse_u64(std::string_view s);
// The environment variable `name` as a whole number in [1, max], or `fallback` when it is unset or
// empty; UsageError "NAME must be a positive integer, got '…'" otherwise.
std::uint64_t env_positive(const char* name, std::uint64_t fallback, std::uint64_t max);
std::string status_text(long status);
std::string attempts_text(int attempt, int attempts);

// One try of `request`. Throws IoError only for errors that no retry can fix (bad URL, TLS
// verification); returns curl's code (as an int) and fills `response` otherwise.
int perform_once(const std::string& url, const Request& request, const HttpOptions& options, Response& response,
                 std::string& curl_error);

// `request` with retries. Returns the final response for every status that is an answer (2xx,
// 3xx, 4xx other than 429); throws IoError when the attempts run out or the error is permanent.
// `short_body(response)` says a 2xx body is incomplete (retried like a dropped connection).
// A request with a body is retried the same way: object writes are idempotent (a PUT of the same
// bytes, a part upload, a DELETE), and so is a multipart completion with the same part list.
using ShortBody = std::function<bool(const Response&)>;
Response perform(const std::string& url, const Request& request, const HttpOptions& options,
                 const ShortBody& short_body = {});

// IoError for an answer that is not what the caller needed: "not found" for 404, "access denied"
// with the credentials hint for 403, the status otherwise (with the S3 error code and message
// when the answer carried them).
[[noreturn]] void fail_status(const std::string& shown, const Response& r, const HttpOptions& options);

// The <Code> and <Message> of an S3/GCS error document ("" when the body is not one).
struct ErrorDocument {
  std::string code;
  std::string message;
};
ErrorDocument error_document(std::span<const std::byte> body);

}  // namespace tessera::io::detail
