// HTTP(S) objects on libcurl: one request engine (retries, timeouts, header capture, body limit),
// the pinned-validator source and the store over a base URL. See include/tessera/io/http.hpp.
#include "tessera/io/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {
namespace {

constexpr long kMaxBackoffMs = 10'000;
constexpr std::string_view kEmptyPayloadSha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// One libcurl easy handle per thread, reused so kept-alive connections serve later requests.
class ThreadHandle {
 public:
  ThreadHandle() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle_ = curl_easy_init();
    if (!handle_) throw IoError("cannot initialise libcurl");
  }
  ~ThreadHandle() { curl_easy_cleanup(handle_); }
  ThreadHandle(const ThreadHandle&) = delete;
  ThreadHandle& operator=(const ThreadHandle&) = delete;
  CURL* get() const noexcept { return handle_; }

 private:
  CURL* handle_ = nullptr;
};

CURL* thread_handle() {
  thread_local ThreadHandle handle;
  curl_easy_reset(handle.get());
  return handle.get();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return std::string(s);
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

enum class Method { Head, Get };

struct Request {
  Method method = Method::Get;
  std::string range{};     // "a-b" or "-n"; empty: the whole object
  std::string if_match{};  // a strong ETag
  std::string if_unmodified_since{};
  std::uint64_t max_body = 0;  // the body is refused past this many bytes (0: no limit)
  std::string shown{};         // the name messages give the object (default: display_url of the URL)
};

struct Response {
  long status = 0;
  std::string etag;
  std::string last_modified;
  std::optional<std::uint64_t> content_length;
  std::optional<std::uint64_t> range_total;  // the size after '/' in Content-Range
  std::vector<std::byte> body;
  bool body_too_long = false;
  int attempt = 1;   // the try that gave this answer
  int attempts = 1;  // tries allowed
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& r = *static_cast<Response*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or a 100 Continue)
    r = Response{};
    const auto space = line.find(' ');
    if (space != std::string_view::npos) r.status = static_cast<long>(parse_u64(line.substr(space + 1, 3)).value_or(0));
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  const std::string name = lower(trim(line.substr(0, colon)));
  const std::string value = trim(line.substr(colon + 1));
  if (name == "etag") r.etag = value;
  else if (name == "last-modified") r.last_modified = value;
  else if (name == "content-length") r.content_length = parse_u64(value);
  else if (name == "content-range") {
    const auto slash = value.rfind('/');
    if (slash != std::string::npos) r.range_total = parse_u64(value.substr(slash + 1));
  }
  return size * count;
}

struct BodySink {
  Response* response;
  std::uint64_t max_body;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<BodySink*>(user);
  const std::size_t n = size * count;
  auto& body = sink.response->body;
  // Only a 2xx body carries object bytes; error pages are dropped unread.
  if (sink.response->status < 200 || sink.response->status >= 300) return n;
  if (sink.max_body != 0 && body.size() + n > sink.max_body) {
    sink.response->body_too_long = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  body.insert(body.end(), bytes, bytes + n);
  return n;
}

// libcurl's codes are an open set (each release adds some); the ones worth another attempt are
// listed, every other one is final.
bool transient_curl_error(CURLcode code) {
  constexpr CURLcode kTransient[] = {
      CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT,   CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR,
      CURLE_RECV_ERROR,           CURLE_GOT_NOTHING,       CURLE_PARTIAL_FILE,       CURLE_HTTP2,
      CURLE_HTTP2_STREAM,         CURLE_SSL_CONNECT_ERROR,
  };
  return std::find(std::begin(kTransient), std::end(kTransient), code) != std::end(kTransient);
}

bool transient_status(long status) { return status == 429 || (status >= 500 && status <= 599); }

std::string status_text(long status) {
  switch (status) {
    case 403: return "HTTP 403 Forbidden";
    case 404: return "HTTP 404 Not Found";
    case 412: return "HTTP 412 Precondition Failed";
    case 416: return "HTTP 416 Range Not Satisfiable";
    case 429: return "HTTP 429 Too Many Requests";
    default: return "HTTP " + std::to_string(status);
  }
}

std::string attempts_text(int attempt, int attempts) {
  return "attempt " + std::to_string(attempt) + " of " + std::to_string(attempts);
}

void sleep_backoff(const HttpOptions& options, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  long delay = options.backoff_ms;
  for (int i = 1; i < attempt && delay < kMaxBackoffMs; ++i) delay *= 2;
  delay = std::min(delay, kMaxBackoffMs);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(static_cast<double>(delay) * jitter(rng))));
}

// One try of `request`. Throws IoError only for errors that no retry can fix (bad URL, TLS
// verification); returns curl's code and the response otherwise.
CURLcode perform_once(const std::string& url, const Request& request, const HttpOptions& options, Response& response,
                      std::string& curl_error) {
  CURL* h = thread_handle();
  char errbuf[CURL_ERROR_SIZE] = {0};
  BodySink sink{&response, request.max_body};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, options.low_speed_time_s);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "tessera");
  // Bodies are compared byte for byte with Content-Range: no transparent decoding.
  curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  if (request.method == Method::Head) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (!request.range.empty()) curl_easy_setopt(h, CURLOPT_RANGE, request.range.c_str());
  curl_slist* headers = nullptr;
  if (!request.if_match.empty()) headers = curl_slist_append(headers, ("If-Match: " + request.if_match).c_str());
  if (!request.if_unmodified_since.empty())
    headers = curl_slist_append(headers, ("If-Unmodified-Since: " + request.if_unmodified_since).c_str());
  const HttpAuth& auth = options.auth;
  if (!auth.sigv4.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, auth.sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, auth.access_key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, auth.secret_access_key.c_str());
    // S3 wants the payload's hash as a header; requests here have no body, so it is the hash of
    // nothing (the value libcurl signs with, whichever of its versions computes it).
    headers = curl_slist_append(headers, ("x-amz-content-sha256: " + std::string(kEmptyPayloadSha256)).c_str());
  }
  for (const std::string& line : auth.headers) headers = curl_slist_append(headers, line.c_str());
  if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  const CURLcode code = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  curl_error = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(code));
  // The handle outlives this call: leave it no pointer into this frame.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, nullptr);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  curl_slist_free_all(headers);
  return code;
}

// `request` with retries. Returns the final response for every status that is an answer (2xx,
// 3xx, 4xx other than 429); throws IoError when the attempts run out or the error is permanent.
// `short_body(response)` says a 2xx body is incomplete (retried like a dropped connection).
template <typename ShortBody>
Response perform(const std::string& url, const Request& request, const HttpOptions& options, ShortBody short_body) {
  const int attempts = std::max(1, options.attempts);
  const std::string shown = request.shown.empty() ? display_url(url) : request.shown;
  std::string last_problem;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) sleep_backoff(options, attempt - 1);
    Response response;
    std::string curl_error;
    const CURLcode code = perform_once(url, request, options, response, curl_error);
    if (response.body_too_long)
      throw IoError(shown + ": the server sent more bytes than requested (" + std::to_string(request.max_body) +
                        "); does it honour Range requests? (" + status_text(response.status) + ", " +
                        attempts_text(attempt, attempts) + ")",
                    shown);
    if (code != CURLE_OK) {
      last_problem = curl_error;
      if (transient_curl_error(code)) continue;
      throw IoError(shown + ": " + curl_error + " (" + attempts_text(attempt, attempts) + ")", shown);
    }
    if (transient_status(response.status)) {
      last_problem = status_text(response.status);
      continue;
    }
    if (response.status >= 200 && response.status < 300 && short_body(response)) {
      last_problem =
          "short body (" + std::to_string(response.body.size()) + " bytes, " + status_text(response.status) + ")";
      continue;
    }
    response.attempt = attempt;
    response.attempts = attempts;
    return response;
  }
  throw IoError(shown + ": " + last_problem + " (" + attempts_text(attempts, attempts) + ", giving up)", shown);
}

Response perform(const std::string& url, const Request& request, const HttpOptions& options) {
  return perform(url, request, options, [](const Response&) { return false; });
}

[[noreturn]] void fail_status(const std::string& shown, const Response& r, const HttpOptions& options) {
  const std::string where = status_text(r.status) + ", " + attempts_text(r.attempt, r.attempts);
  if (r.status == 404) throw IoError(shown + ": not found (" + where + ")", shown);
  if (r.status == 403) throw IoError(shown + ": access denied (" + where + ")" + options.auth.denied_hint, shown);
  throw IoError(shown + ": unexpected answer (" + where + ")", shown);
}

std::string changed_text(const std::string& shown) {
  return shown +
         ": object changed while reading (its ETag, Last-Modified or size differs from the first request; open it "
         "again to read the new version)";
}

// A strong ETag can be sent in If-Match; a weak one (W/"…") never matches there.
bool strong_etag(const std::string& etag) { return !etag.empty() && !etag.starts_with("W/"); }

struct ObjectInfo {
  std::uint64_t size = 0;
  std::string etag;
  std::string last_modified;
};

// HEAD of `url`: nullopt on 404; IoError on other failures. A server that answers HEAD without a
// length is asked for the first byte instead (Content-Range then carries the size).
std::optional<ObjectInfo> head_object(const std::string& url, const std::string& shown, const HttpOptions& options,
                                      bool missing_is_error = false) {
  Response r = perform(url, Request{.method = Method::Head, .shown = shown}, options);
  if (r.status == 404 && !missing_is_error) return std::nullopt;
  if (r.status < 200 || r.status >= 300) fail_status(shown, r, options);
  if (r.content_length) return ObjectInfo{*r.content_length, r.etag, r.last_modified};
  r = perform(url, Request{.range = "0-0", .max_body = 1, .shown = shown}, options);
  if (r.status == 404) {
    if (missing_is_error) fail_status(shown, r, options);
    return std::nullopt;
  }
  if (r.status == 416 && r.range_total) return ObjectInfo{*r.range_total, r.etag, r.last_modified};  // empty object
  if (r.status != 206 || !r.range_total)
    throw IoError(shown + ": the server reports no object size (" + status_text(r.status) + ")", shown);
  return ObjectInfo{*r.range_total, r.etag, r.last_modified};
}

class HttpSource final : public ByteSource {
 public:
  HttpSource(std::string url, std::string shown, ObjectInfo info, HttpOptions options)
      : url_(std::move(url)), name_(std::move(shown)), info_(std::move(info)), options_(std::move(options)) {}
  std::uint64_t size() const override { return info_.size; }
  const std::string& name() const override { return name_; }

  void read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    const auto end = add_u64(offset, dst.size());
    if (!end || *end > info_.size)
      throw IoError("read of " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) +
                        " is past the end (" + std::to_string(info_.size) + " bytes)",
                    name_);
    if (dst.empty()) return;
    Request request{
        .range = std::to_string(offset) + "-" + std::to_string(*end - 1), .max_body = dst.size(), .shown = name_};
    if (strong_etag(info_.etag)) request.if_match = info_.etag;
    else if (!info_.last_modified.empty()) request.if_unmodified_since = info_.last_modified;
    const Response r = perform(url_, request, options_, [&](const Response& resp) {
      return resp.status == 206 && resp.body.size() < dst.size();
    });
    if (r.status == 412) throw IoError(changed_text(name_), name_);
    if (r.status == 200)
      throw IoError(name_ + ": the server ignored the Range request (HTTP 200); ranged reads are required", name_);
    if (r.status != 206) fail_status(name_, r, options_);
    // The precondition header is the guard; the answer's own validator (when it carries one) and
    // its Content-Range total are checked too, for servers that ignore preconditions.
    if ((!r.etag.empty() && r.etag != info_.etag) || (r.range_total && *r.range_total != info_.size) ||
        (info_.etag.empty() && !r.last_modified.empty() && r.last_modified != info_.last_modified))
      throw IoError(changed_text(name_), name_);
    if (r.body.size() != dst.size())
      throw IoError(
          name_ + ": short body (" + std::to_string(r.body.size()) + " of " + std::to_string(dst.size()) + " bytes)",
          name_);
    std::copy(r.body.begin(), r.body.end(), dst.begin());
  }

 private:
  std::string url_;
  std::string name_;
  ObjectInfo info_;
  HttpOptions options_;
};

int env_positive(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return static_cast<int>(fallback);
  const auto n = parse_u64(v);
  if (!n || *n == 0 || *n > 1'000'000)
    throw UsageError(std::string(name) + " must be a positive integer, got '" + v + "'");
  return static_cast<int>(*n);
}

}  // namespace

HttpOptions http_options_from_env() {
  HttpOptions o;
  o.attempts = env_positive("TESSERA_HTTP_RETRIES", o.attempts);
  o.connect_timeout_s = env_positive("TESSERA_HTTP_CONNECT_TIMEOUT", o.connect_timeout_s);
  o.low_speed_time_s = env_positive("TESSERA_HTTP_LOW_SPEED_TIME", o.low_speed_time_s);
  if (const char* ca = std::getenv("TESSERA_HTTP_CA_BUNDLE"); ca && *ca) o.ca_file = ca;
  return o;
}

std::string display_url(std::string_view url) {
  std::string_view s = url.substr(0, url.find_first_of("?#"));
  const auto scheme_end = s.find("://");
  if (scheme_end == std::string_view::npos) return std::string(s);
  const auto host_begin = scheme_end + 3;
  const auto path_begin = s.find('/', host_begin);
  const auto at = s.substr(0, path_begin).rfind('@');
  if (at != std::string_view::npos && at >= host_begin)
    return std::string(s.substr(0, host_begin)) + std::string(s.substr(at + 1));
  return std::string(s);
}

void refuse_remote_write(const std::string& target) {
  throw UsageError("writing to " + target + " is not supported yet (write to a local path)", target);
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' ||
                            u == '.' || u == '_' || u == '~' || (keep_slash && u == '/');
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

std::optional<std::vector<std::byte>> http_get(const std::string& url, const HttpOptions& options,
                                               const std::string& shown) {
  const std::string name = shown.empty() ? display_url(url) : shown;
  const Response r = perform(url, Request{.shown = name}, options, [](const Response& resp) {
    return resp.content_length && resp.body.size() < *resp.content_length;
  });
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) fail_status(name, r, options);
  return r.body;
}

std::unique_ptr<ByteSource> open_http_source(const std::string& url, const HttpOptions& options,
                                             const std::string& shown) {
  const std::string name = shown.empty() ? display_url(url) : shown;
  return std::make_unique<HttpSource>(url, name, std::move(*head_object(url, name, options, true)), options);
}

// ---- HttpStore ------------------------------------------------------------------------------

HttpStore::HttpStore(std::string base_url, HttpOptions options, std::string display_name)
    : base_(std::move(base_url)), options_(std::move(options)) {
  // A query string (e.g. an access token) is sent with every object; keys go before it.
  if (const auto q = base_.find_first_of("?#"); q != std::string::npos) {
    if (base_[q] == '?') query_ = base_.substr(q, base_.find('#', q) - q);
    base_.resize(q);
  }
  while (base_.size() > 1 && base_.back() == '/') base_.pop_back();
  name_ = display_name.empty() ? display_url(base_) : std::move(display_name);
  base_ += '/';
}

std::string HttpStore::url_of(const std::string& key) const {
  if (!is_valid_key(key)) throw UsageError(name_ + ": invalid object key '" + key + "'", name_);
  return base_ + percent_encode(key, true) + query_;
}

std::string HttpStore::shown_of(const std::string& key) const { return name_ + "/" + key; }

std::unique_ptr<ByteSource> HttpStore::open(const std::string& key) const {
  const std::string url = url_of(key);
  auto info = head_object(url, shown_of(key), options_);
  if (!info) return nullptr;
  return std::make_unique<HttpSource>(url, shown_of(key), std::move(*info), options_);
}

bool HttpStore::exists(const std::string& key) const { return size(key).has_value(); }

std::optional<std::uint64_t> HttpStore::size(const std::string& key) const {
  const std::string url = url_of(key);
  const Response r = perform(url, Request{.method = Method::Head, .shown = shown_of(key)}, options_);
  if (r.status == 404) return std::nullopt;
  if (r.status < 200 || r.status >= 300) fail_status(shown_of(key), r, options_);
  if (r.content_length) return r.content_length;
  const auto info = head_object(url, shown_of(key), options_);
  return info ? std::optional<std::uint64_t>(info->size) : std::nullopt;
}

std::unique_ptr<ByteSource> HttpStore::open_whole(const std::string& key) const {
  auto bytes = get(key);
  if (!bytes) return nullptr;
  return owned_memory_source(std::move(*bytes), shown_of(key));
}

std::optional<std::vector<std::byte>> HttpStore::get(const std::string& key) const {
  return http_get(url_of(key), options_, shown_of(key));
}

namespace {

// A ranged GET answered: 206 with the bytes, 416 (nothing at that offset) with none.
std::optional<RangeRead> ranged_answer(const std::string& shown, const Response& r, const HttpOptions& options) {
  if (r.status == 404) return std::nullopt;
  if (r.status == 416 && r.range_total) return RangeRead{{}, *r.range_total};
  if (r.status == 206 && r.range_total) return RangeRead{r.body, *r.range_total};
  if (r.status == 200) {
    // The server sent the whole object (allowed when the range covers it, e.g. a suffix longer
    // than the object): its size is the body's.
    return RangeRead{r.body, r.body.size()};
  }
  fail_status(shown, r, options);
}

}  // namespace

std::optional<RangeRead> HttpStore::get_range(const std::string& key, std::uint64_t offset,
                                              std::uint64_t length) const {
  const std::string url = url_of(key);
  if (length == 0) {
    const auto n = size(key);
    if (!n) return std::nullopt;
    return RangeRead{{}, *n};
  }
  const std::uint64_t last = add_u64(offset, length - 1).value_or(UINT64_MAX - 1);
  Request request{
      .range = std::to_string(offset) + "-" + std::to_string(last), .max_body = length, .shown = shown_of(key)};
  const Response r = perform(url, request, options_, [&](const Response& resp) {
    return resp.status == 206 && resp.content_length && resp.body.size() < *resp.content_length;
  });
  if (r.status == 200 && offset != 0)
    throw IoError(shown_of(key) + ": the server ignored the Range request (HTTP 200); ranged reads are required",
                  shown_of(key));
  auto out = ranged_answer(shown_of(key), r, options_);
  if (out && r.status == 200 && out->bytes.size() > length) out->bytes.resize(length);
  return out;
}

std::optional<RangeRead> HttpStore::get_suffix(const std::string& key, std::uint64_t length) const {
  const std::string url = url_of(key);
  if (length == 0) return get_range(key, 0, 0);
  Request request{.range = "-" + std::to_string(length), .max_body = length, .shown = shown_of(key)};
  const Response r = perform(url, request, options_, [&](const Response& resp) {
    return resp.status == 206 && resp.content_length && resp.body.size() < *resp.content_length;
  });
  return ranged_answer(shown_of(key), r, options_);
}

std::vector<std::string> HttpStore::list(const std::string& prefix) const {
  throw UnsupportedError(name_ + ": listing objects is not supported over plain HTTP (prefix '" + prefix + "')", name_);
}

DirListing HttpStore::list_dir(const std::string& prefix) const {
  throw UnsupportedError(name_ + ": listing objects is not supported over plain HTTP (prefix '" + prefix + "')", name_);
}

void HttpStore::put(const std::string& key, std::span<const std::byte>) { refuse_remote_write(name_ + "/" + key); }

void HttpStore::erase(const std::string& key) { refuse_remote_write(name_ + "/" + key); }

void HttpStore::erase_prefix(const std::string& prefix) { refuse_remote_write(name_ + "/" + prefix); }

}  // namespace tessera::io
