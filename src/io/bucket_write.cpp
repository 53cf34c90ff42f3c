// Writes to s3:// and gs:// stores: PUT, conditional create, multipart upload with parallel parts
// and abort on failure, DELETE, and the listing of unfinished multipart uploads
// (include/tessera/io/bucket.hpp).
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "http_request.hpp"
#include "parallel.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"

namespace tessera::io {
namespace {

using detail::fail_status;
using detail::Method;
using detail::perform;
using detail::Request;
using detail::Response;

constexpr std::uint64_t kMinPartSize = 5ull << 20;  // S3's smallest part (all but the last)
constexpr std::uint64_t kMaxParts = 10'000;         // S3's most parts per upload
constexpr int kMaxUploadPages = 10'000;

std::string sha256_hex(std::span<const std::byte> data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw IoError("cannot compute SHA-256 (OpenSSL)");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string_view as_text(const std::vector<std::byte>& body) {
  return {reinterpret_cast<const char*>(body.data()), body.size()};
}

// The part size for a file of `size` bytes: the configured one, grown so that 10,000 parts hold it.
std::uint64_t part_size_for(std::uint64_t size, std::uint64_t configured) {
  const std::uint64_t needed = (size + kMaxParts - 1) / kMaxParts;
  return std::max(configured, needed);
}

// Reads exactly `dst.size()` bytes at `offset` of `fd`.
void pread_exact(int fd, std::uint64_t offset, std::span<std::byte> dst, const std::string& path) {
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n = ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError(path + ": cannot read " + std::to_string(dst.size()) + " bytes at offset " +
                        std::to_string(offset) + " to upload",
                    path);
    done += static_cast<std::size_t>(n);
  }
}

class FileHandle {
 public:
  explicit FileHandle(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw IoError(path + ": cannot open to upload", path);
  }
  ~FileHandle() { ::close(fd_); }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A PUT of `bytes` with their SHA-256, keeping S3's error document for messages.
Request put_request(std::string shown, std::span<const std::byte> bytes) {
  return Request{.method = Method::Put,
                 .shown = std::move(shown),
                 .body = bytes,
                 .body_sha256 = sha256_hex(bytes),
                 .keep_error_body = true};
}

}  // namespace

UploadOptions upload_options_from_env() {
  UploadOptions o;
  o.part_size = detail::env_positive("TESSERA_UPLOAD_PART_SIZE", o.part_size, UINT64_MAX);
  if (o.part_size < kMinPartSize)
    throw UsageError("TESSERA_UPLOAD_PART_SIZE must be at least 5 MiB (5242880), the smallest part S3 accepts");
  o.parallel = static_cast<int>(detail::env_positive("TESSERA_UPLOAD_PARALLEL", 8, 64));
  return o;
}

std::string BucketStore::object_url(const std::string& key, const std::string& query) const {
  return objects_->url_of(key) + (query.empty() ? "" : "?" + query);
}

void BucketStore::put(const std::string& key, std::span<const std::byte> bytes) {
  const Response r = perform(object_url(key, {}), put_request(shown_of(key), bytes), access_.http);
  if (r.status < 200 || r.status >= 300) fail_status(shown_of(key), r, access_.http);
}

bool BucketStore::put_if_absent(const std::string& key, std::span<const std::byte> bytes) {
  Request request = put_request(shown_of(key), bytes);
  // S3 takes If-None-Match; GCS's XML API takes "generation 0" (no live version).
  request.headers.push_back(root_.scheme == "gs" ? "x-goog-if-generation-match: 0" : "If-None-Match: *");
  // S3 answers 409 while another conditional write of the key is in flight: ask again.
  for (int attempt = 1;; ++attempt) {
    const Response r = perform(object_url(key, {}), request, access_.http);
    if (r.status == 412) return false;
    if (r.status == 409 && attempt < access_.http.attempts) continue;
    if (r.status < 200 || r.status >= 300) fail_status(shown_of(key), r, access_.http);
    return true;
  }
}

void BucketStore::erase(const std::string& key) {
  const Response r =
      perform(object_url(key, {}), Request{.method = Method::Delete, .shown = shown_of(key), .keep_error_body = true},
              access_.http);
  // 404: already gone (a retried DELETE, or a store that reports it), which is what was asked.
  if ((r.status < 200 || r.status >= 300) && r.status != 404) fail_status(shown_of(key), r, access_.http);
}

void BucketStore::erase_prefix(const std::string& prefix) {
  const std::vector<std::string> keys = list(prefix);
  for (const std::string& key : keys) erase(key);
  if (!prefix.empty() && exists(prefix)) erase(prefix);
}

void BucketStore::upload_file(const std::string& key, const std::string& path, const UploadOptions& options) {
  FileHandle file(path);
  const off_t end = ::lseek(file.fd(), 0, SEEK_END);
  if (end < 0) throw IoError(path + ": cannot find its size to upload", path);
  const auto size = static_cast<std::uint64_t>(end);
  if (size <= options.part_size) {
    std::vector<std::byte> bytes(size);
    pread_exact(file.fd(), 0, bytes, path);
    put(key, bytes);
    if (options.progress) options.progress(size);
    return;
  }
  upload_parts(key, path, size, options);
}

void BucketStore::upload_parts(const std::string& key, const std::string& path, std::uint64_t size,
                               const UploadOptions& options) {
  const std::string shown = shown_of(key);
  const Response begun =
      perform(object_url(key, "uploads="), Request{.method = Method::Post, .shown = shown, .keep_error_body = true},
              access_.http);
  if (begun.status != 200) fail_status(shown, begun, access_.http);
  const std::string upload_id = parse_initiate_multipart(as_text(begun.body), shown + " (multipart upload)");
  const std::string id_query = "uploadId=" + percent_encode(upload_id, false);

  const std::uint64_t part_size = part_size_for(size, options.part_size);
  const std::uint64_t n_parts = (size + part_size - 1) / part_size;
  std::vector<std::string> etags(n_parts);
  std::mutex progress_mutex;
  FileHandle file(path);
  const auto abort_and_rethrow = [&](std::exception_ptr error) {
    try {
      abort_upload(PendingUpload{key, upload_id, {}});
    } catch (const Error&) {
      // The original failure is the one to report; the unfinished upload is what
      // `tessera remote cleanup` lists and removes.
    }
    std::rethrow_exception(error);
  };
  try {
    detail::for_each_parallel(n_parts, options.parallel, [&](std::uint64_t i) {
      const std::uint64_t offset = i * part_size;
      std::vector<std::byte> buffer(std::min(part_size, size - offset));
      pread_exact(file.fd(), offset, buffer, path);
      const std::string query = "partNumber=" + std::to_string(i + 1) + "&" + id_query;
      const Request request{.method = Method::Put,
                            .shown = shown + " (part " + std::to_string(i + 1) + " of " + std::to_string(n_parts) + ")",
                            .body = buffer,
                            .body_sha256 = sha256_hex(buffer),
                            .keep_error_body = true};
      const Response r = perform(object_url(key, query), request, access_.http);
      if (r.status != 200) fail_status(request.shown, r, access_.http);
      if (r.etag.empty()) throw IoError(request.shown + ": the store gave the part no ETag", shown);
      etags[i] = r.etag;
      if (options.progress) {
        const std::scoped_lock lock(progress_mutex);
        options.progress(buffer.size());
      }
    });
  } catch (...) {
    abort_and_rethrow(std::current_exception());
  }

  std::string document = "<CompleteMultipartUpload>";
  for (std::uint64_t i = 0; i < n_parts; ++i)
    document +=
        "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + xml_escape(etags[i]) + "</ETag></Part>";
  document += "</CompleteMultipartUpload>";
  const auto body = std::as_bytes(std::span(document));
  try {
    const Request request{
        .method = Method::Post, .shown = shown, .body = body, .body_sha256 = sha256_hex(body), .keep_error_body = true};
    for (int attempt = 1;; ++attempt) {
      const Response r = perform(object_url(key, id_query), request, access_.http);
      if (r.status != 200) fail_status(shown, r, access_.http);
      // S3 may answer 200 and still report an error in the body (then the request is retried).
      const CompleteAnswer answer = parse_complete_multipart(as_text(r.body), shown + " (completing the upload)");
      if (answer.error_code.empty()) break;
      if (answer.error_code != "InternalError" || attempt >= access_.http.attempts)
        throw IoError(shown + ": the store refused to complete the upload (" + answer.error_code +
                          (answer.error_message.empty() ? "" : ": " + answer.error_message) + ")",
                      shown);
    }
  } catch (const Error&) {
    abort_and_rethrow(std::current_exception());
  }
}

std::vector<PendingUpload> BucketStore::pending_uploads(const std::string& prefix) const {
  const std::string root = root_.key.empty() ? std::string() : root_.key + "/";
  const std::string want = prefix.empty() ? root : full_key(prefix);
  std::vector<PendingUpload> out;
  std::string key_marker, id_marker;
  for (int page = 0;; ++page) {
    if (page == kMaxUploadPages)
      throw IoError(
          name_ + ": the list of unfinished uploads has more than " + std::to_string(kMaxUploadPages) + " pages",
          name_);
    // Query parameters sorted by name, as SigV4 canonicalises them.
    std::string query = "?";
    if (!key_marker.empty()) query += "key-marker=" + percent_encode(key_marker, false) + "&";
    query += "prefix=" + percent_encode(want, false) + "&";
    if (!id_marker.empty()) query += "upload-id-marker=" + percent_encode(id_marker, false) + "&";
    query += "uploads=";
    const auto body = http_get(access_.bucket_url + "/" + query, access_.http, name_ + " (unfinished uploads)");
    if (!body) throw IoError(name_ + ": no such bucket '" + root_.bucket + "' (HTTP 404 listing uploads)", name_);
    ListUploadsPage p = parse_list_uploads_page(as_text(*body), name_ + " (unfinished uploads)");
    for (PendingUpload& u : p.uploads) {
      if (!u.key.starts_with(root)) continue;
      u.key = u.key.substr(root.size());
      out.push_back(std::move(u));
    }
    if (!p.truncated) break;
    if (p.next_key_marker == key_marker && p.next_upload_id_marker == id_marker)
      throw IoError(name_ + ": the list of unfinished uploads does not advance", name_);
    key_marker = p.next_key_marker;
    id_marker = p.next_upload_id_marker;
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

void BucketStore::abort_upload(const PendingUpload& upload) {
  const std::string shown = shown_of(upload.key) + " (unfinished upload " + upload.upload_id + ")";
  const Response r = perform(object_url(upload.key, "uploadId=" + percent_encode(upload.upload_id, false)),
                             Request{.method = Method::Delete, .shown = shown, .keep_error_body = true}, access_.http);
  if ((r.status < 200 || r.status >= 300) && r.status != 404) fail_status(shown, r, access_.http);
}

}  // namespace tessera::io
