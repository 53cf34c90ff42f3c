// The HTTP request engine (src/io/http_request.hpp): one libcurl handle per thread, retries with
// backoff and jitter, header capture, body limits, request bodies and SigV4 signing.
#include "http_request.hpp"

#include "curl_api.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "tessera/core/error.hpp"

namespace tessera::io::detail {
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
  bool keep_error_body;
  std::span<std::byte> into;
};

constexpr std::size_t kMaxErrorBody = std::size_t{64} << 10;

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<BodySink*>(user);
  const std::size_t n = size * count;
  auto& body = sink.response->body;
  // Only a 2xx body carries object bytes; error pages are dropped unread, or kept up to a bound
  // when the caller reads S3's error documents.
  if (sink.response->status < 200 || sink.response->status >= 300) {
    if (sink.keep_error_body && body.size() < kMaxErrorBody) {
      const auto* bytes = reinterpret_cast<const std::byte*>(data);
      body.insert(body.end(), bytes, bytes + std::min(n, kMaxErrorBody - body.size()));
    }
    return n;
  }
  std::uint64_t& received = sink.response->received;
  if ((sink.max_body != 0 && received + n > sink.max_body) || (!sink.into.empty() && received + n > sink.into.size())) {
    sink.response->body_too_long = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  if (!sink.into.empty()) {
    std::memcpy(sink.into.data() + received, bytes, n);
  } else {
    // The body's size is known from its header: one allocation instead of a doubling series of
    // copies (bounded, so that a lying Content-Length cannot reserve memory the body never uses).
    constexpr std::uint64_t kMaxReserve = std::uint64_t{256} << 20;
    if (body.empty() && sink.response->content_length)
      body.reserve(static_cast<std::size_t>(std::min(*sink.response->content_length, kMaxReserve)));
    body.insert(body.end(), bytes, bytes + n);
  }
  received += n;
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

void sleep_backoff(const HttpOptions& options, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  long delay = options.backoff_ms;
  for (int i = 1; i < attempt && delay < kMaxBackoffMs; ++i) delay *= 2;
  delay = std::min(delay, kMaxBackoffMs);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(static_cast<double>(delay) * jitter(rng))));
}

}  // namespace

int perform_once(const std::string& url, const Request& request, const HttpOptions& options, Response& response,
                 std::string& curl_error) {
  CURL* h = thread_handle();
  char errbuf[CURL_ERROR_SIZE] = {0};
  BodySink sink{&response, request.max_body, request.keep_error_body, request.into};
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
  switch (request.method) {
    case Method::Head: curl_easy_setopt(h, CURLOPT_NOBODY, 1L); break;
    case Method::Get: break;
    case Method::Delete: curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE"); break;
    case Method::Put:
    case Method::Post:
      // The body goes as POSTFIELDS (not copied, not read through a callback), so libcurl knows
      // its length and, whichever version it is, signs the same payload hash as the header below.
      curl_easy_setopt(h, CURLOPT_POSTFIELDS,
                       request.body.empty() ? "" : reinterpret_cast<const char*>(request.body.data()));
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      if (request.method == Method::Put) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
      break;
  }
  if (!request.range.empty()) curl_easy_setopt(h, CURLOPT_RANGE, request.range.c_str());
  curl_slist* headers = nullptr;
  if (request.method == Method::Put || request.method == Method::Post) {
    // No form content type. (An empty "Expect:" to suppress 100-continue would be signed wrongly
    // by libcurl 7.88; the wait for the interim answer is turned off below instead.)
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  }
  for (const std::string& line : request.headers) headers = curl_slist_append(headers, line.c_str());
  if (!request.if_match.empty()) headers = curl_slist_append(headers, ("If-Match: " + request.if_match).c_str());
  if (!request.if_unmodified_since.empty())
    headers = curl_slist_append(headers, ("If-Unmodified-Since: " + request.if_unmodified_since).c_str());
  const HttpAuth& auth = options.auth;
  if (!auth.sigv4.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, auth.sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, auth.access_key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, auth.secret_access_key.c_str());
    // S3 wants the payload's hash as a header: the body's, or the hash of nothing (the value
    // libcurl signs with, whichever of its versions computes it).
    const std::string_view hash = request.body_sha256.empty() ? kEmptyPayloadSha256 : request.body_sha256;
    headers = curl_slist_append(headers, ("x-amz-content-sha256: " + std::string(hash)).c_str());
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
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  curl_slist_free_all(headers);
  return static_cast<int>(code);
}

Response perform(const std::string& url, const Request& request, const HttpOptions& options,
                 const ShortBody& short_body) {
  const int attempts = std::max(1, options.attempts);
  const std::string shown = request.shown.empty() ? display_url(url) : request.shown;
  std::string last_problem;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) sleep_backoff(options, attempt - 1);
    Response response;
    std::string curl_error;
    const auto code = static_cast<CURLcode>(perform_once(url, request, options, response, curl_error));
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
    if (response.status >= 200 && response.status < 300 && short_body && short_body(response)) {
      last_problem =
          "short body (" + std::to_string(response.received) + " bytes, " + status_text(response.status) + ")";
      continue;
    }
    response.attempt = attempt;
    response.attempts = attempts;
    return response;
  }
  throw IoError(shown + ": " + last_problem + " (" + attempts_text(attempts, attempts) + ", giving up)", shown);
}

[[noreturn]] void fail_status(const std::string& shown, const Response& r, const HttpOptions& options) {
  std::string where = status_text(r.status) + ", " + attempts_text(r.attempt, r.attempts);
  if (const ErrorDocument doc = error_document(r.body); !doc.code.empty())
    where += ", " + doc.code + (doc.message.empty() ? "" : ": " + doc.message);
  if (r.status == 404) throw IoError(shown + ": not found (" + where + ")", shown);
  if (r.status == 403) throw IoError(shown + ": access denied (" + where + ")" + options.auth.denied_hint, shown);
  throw IoError(shown + ": unexpected answer (" + where + ")", shown);
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

std::uint64_t env_positive(const char* name, std::uint64_t fallback, std::uint64_t max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const auto n = parse_u64(v);
  if (!n || *n == 0 || *n > max) throw UsageError(std::string(name) + " must be a positive integer, got '" + v + "'");
  return *n;
}

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

}  // namespace tessera::io::detail
