// HTTP(S) objects: the pinned-validator source and the store over a base URL, on the request
// engine of http_request.cpp. See include/tessera/io/http.hpp.
#include "tessera/io/http.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "http_request.hpp"

namespace tessera::io {
namespace {

// Retries and timeouts above this are typos, not settings.
constexpr std::uint64_t kMaxEnvSetting = 1'000'000;

using detail::fail_status;
using detail::Method;
using detail::perform;
using detail::Request;
using detail::Response;
using detail::status_text;

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
    Request request{.range = std::to_string(offset) + "-" + std::to_string(*end - 1),
                    .max_body = dst.size(),
                    .shown = name_,
                    .into = dst};
    if (strong_etag(info_.etag)) request.if_match = info_.etag;
    else if (!info_.last_modified.empty()) request.if_unmodified_since = info_.last_modified;
    const Response r = perform(url_, request, options_,
                               [&](const Response& resp) { return resp.status == 206 && resp.received < dst.size(); });
    if (r.status == 412) throw IoError(changed_text(name_), name_);
    if (r.status == 200)
      throw IoError(name_ + ": the server ignored the Range request (HTTP 200); ranged reads are required", name_);
    if (r.status != 206) fail_status(name_, r, options_);
    // The precondition header is the guard; the answer's own validator (when it carries one) and
    // its Content-Range total are checked too, for servers that ignore preconditions.
    if ((!r.etag.empty() && r.etag != info_.etag) || (r.range_total && *r.range_total != info_.size) ||
        (info_.etag.empty() && !r.last_modified.empty() && r.last_modified != info_.last_modified))
      throw IoError(changed_text(name_), name_);
    if (r.received != dst.size())
      throw IoError(
          name_ + ": short body (" + std::to_string(r.received) + " of " + std::to_string(dst.size()) + " bytes)",
          name_);
  }

 private:
  std::string url_;
  std::string name_;
  ObjectInfo info_;
  HttpOptions options_;
};

}  // namespace

HttpOptions http_options_from_env() {
  HttpOptions o;
  o.attempts = static_cast<int>(detail::env_positive("TESSERA_HTTP_RETRIES", o.attempts, kMaxEnvSetting));
  o.connect_timeout_s =
      static_cast<long>(detail::env_positive("TESSERA_HTTP_CONNECT_TIMEOUT", o.connect_timeout_s, kMaxEnvSetting));
  o.low_speed_time_s =
      static_cast<long>(detail::env_positive("TESSERA_HTTP_LOW_SPEED_TIME", o.low_speed_time_s, kMaxEnvSetting));
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
