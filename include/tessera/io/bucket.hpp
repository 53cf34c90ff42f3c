// Objects in buckets: `s3://bucket/key` (Amazon S3 and S3-compatible stores) and `gs://bucket/key`
// (Google Cloud Storage through its XML API), read with the HTTP engine of io/http.hpp.
//
// Configuration comes from where the users' other tools take it (docs/remote.md):
//   S3   credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//        profile (AWS_PROFILE, default "default") of the shared credentials file
//        (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials) or config file (AWS_CONFIG_FILE,
//        ~/.aws/config); AWS_NO_SIGN_REQUEST=YES, or no credentials at all, sends requests
//        unsigned (public buckets).
//        region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1.
//        endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the profile's `endpoint_url` (an
//        S3-compatible store: path-style addressing), else AWS (virtual-hosted addressing, or
//        path-style for bucket names with dots). TESSERA_S3_ADDRESSING=path|virtual overrides.
//   GCS  endpoint: STORAGE_EMULATOR_HOST, else https://storage.googleapis.com (path-style).
//        credentials: GOOGLE_OAUTH_ACCESS_TOKEN (a bearer token), else HMAC keys
//        GS_ACCESS_KEY_ID / GS_SECRET_ACCESS_KEY (SigV4, region "auto"), else unsigned.
//
// Requests are signed with SigV4 by libcurl; secrets never appear in messages. Listing uses
// ListObjectsV2 with continuation tokens; its XML is read with expat.
//
// Writes (docs/remote.md, "Writing to buckets"): `put` is one PUT; `upload_file` is one PUT up to
// the part size and a multipart upload above it, its parts sent in parallel and the upload
// aborted on any failure, so an object appears whole or not at all; `put_if_absent` is a
// conditional create (S3 If-None-Match, GCS x-goog-if-generation-match: 0); `erase` is a DELETE.
// Every write is retried like a read (an idempotent request sent again).
//
// Thread-safety and lifetime: as for HttpStore (io/http.hpp); a BucketStore owns its settings.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/http.hpp"
#include "tessera/io/store.hpp"

namespace tessera::io {

struct BucketUri {
  std::string scheme;  // "s3" or "gs"
  std::string bucket;
  std::string key;  // object key or prefix, without leading or trailing '/' (may be empty)
};

// Splits `s3://bucket/key` / `gs://bucket/key`. UsageError naming the input when the bucket name
// is missing or is not a valid bucket name (3-63 of a-z 0-9 . - _, starting and ending with a
// letter or digit).
BucketUri parse_bucket_uri(std::string_view uri);

// Where and how requests for one bucket go.
struct BucketAccess {
  std::string bucket_url;  // objects are bucket_url + "/" + key; the bucket is listed at bucket_url + "/"
  std::string region;
  bool anonymous = false;
  HttpOptions http;  // with HttpOptions::auth filled in
};

// The settings for `uri` from the environment and the AWS profile files (see above). UsageError
// when a named profile does not exist or a setting is malformed; FormatError naming the file when
// a profile file cannot be parsed.
BucketAccess bucket_access(const BucketUri& uri, const HttpOptions& base);

// One object of a bucket as a ByteSource (IoError "not found" when it does not exist).
std::unique_ptr<ByteSource> open_bucket_source(const BucketUri& uri, const HttpOptions& base);

// How `upload_file` sends a large object.
struct UploadOptions {
  // Bytes per part of a multipart upload, and the size above which one is used (S3's minimum part
  // is 5 MiB; a file needing more than 10,000 parts gets larger ones). TESSERA_UPLOAD_PART_SIZE.
  std::uint64_t part_size = 16ull << 20;
  // Parts (and, in publish_tree, objects) in flight at once; each holds one part in memory.
  // TESSERA_UPLOAD_PARALLEL.
  int parallel = 8;
  // Called (from the uploading threads, serialized) with the bytes of each part or object sent.
  std::function<void(std::uint64_t bytes)> progress{};
};

// The defaults above, overridden by the environment variables named there (UsageError when one
// is not a positive integer or the part size is under 5 MiB).
UploadOptions upload_options_from_env();

// A multipart upload begun and not yet completed or aborted (what a killed writer leaves behind).
struct PendingUpload {
  std::string key;        // relative to the store's root
  std::string upload_id;  // as the store gave it
  std::string initiated;  // ISO 8601, as the store gave it
};

// The objects below `s3://bucket/prefix` (or gs://): reads as HttpStore, plus listing and writes.
// Thread-safety and lifetime: as every Store (io/store.hpp).
class BucketStore final : public Store {
 public:
  BucketStore(const BucketUri& root, const HttpOptions& base);
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
  std::unique_ptr<ByteSource> open_whole(const std::string& key) const override;
  bool remote() const override { return true; }

  // One PUT that creates `key` only if no object has that name; false when one already does.
  bool put_if_absent(const std::string& key, std::span<const std::byte> bytes);
  // The local file `path` as object `key` (see above). IoError naming the object on failure,
  // after the multipart upload, if any, was aborted.
  void upload_file(const std::string& key, const std::string& path, const UploadOptions& options);
  // Multipart uploads in progress below `prefix` (empty: the store's root), oldest first per key.
  std::vector<PendingUpload> pending_uploads(const std::string& prefix) const;
  // Aborts one; an upload already gone is not an error.
  void abort_upload(const PendingUpload& upload);
  // s3://bucket/prefix/key: how messages name an object of this store.
  std::string shown_of(const std::string& key) const { return key.empty() ? name_ : name_ + "/" + key; }

 private:
  struct Listing {
    std::vector<std::string> keys;      // full object keys
    std::vector<std::string> prefixes;  // full common prefixes (ending with '/')
  };
  // Every page of ListObjectsV2 for the full key prefix `full_prefix`, with '/' as delimiter when
  // `delimited`.
  Listing list_objects(const std::string& full_prefix, bool delimited) const;
  std::string full_key(const std::string& key) const;  // root prefix + key
  // The object's URL with `query` (already sorted and encoded as SigV4 canonicalises it).
  std::string object_url(const std::string& key, const std::string& query) const;
  void upload_parts(const std::string& key, const std::string& path, std::uint64_t size, const UploadOptions& options);

  BucketUri root_;
  BucketAccess access_;
  std::unique_ptr<HttpStore> objects_;  // over bucket_url/root prefix
  std::string name_;                    // scheme://bucket/prefix
};

// ---- parsers, exposed for tests and fuzzing -------------------------------------------------

// One page of a ListObjectsV2 answer.
struct ListObjectsPage {
  std::vector<std::string> keys;             // <Contents><Key>
  std::vector<std::string> common_prefixes;  // <CommonPrefixes><Prefix>
  bool truncated = false;                    // <IsTruncated>true
  std::string next_token;                    // <NextContinuationToken>
};

// FormatError naming `shown` when `xml` is not well-formed XML, is not a ListBucketResult,
// declares entities or a DTD, or nests deeper than 32 elements. The parsers below refuse the same.
ListObjectsPage parse_list_objects_page(std::string_view xml, const std::string& shown);

// The UploadId of a CreateMultipartUpload answer.
std::string parse_initiate_multipart(std::string_view xml, const std::string& shown);

// One page of a ListMultipartUploads answer (keys as the bucket gives them, not relative).
struct ListUploadsPage {
  std::vector<PendingUpload> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
ListUploadsPage parse_list_uploads_page(std::string_view xml, const std::string& shown);

// A CompleteMultipartUpload answer: the object's ETag, or the error S3 may send with status 200.
struct CompleteAnswer {
  std::string etag;
  std::string error_code;  // non-empty: the upload did not complete
  std::string error_message;
};
CompleteAnswer parse_complete_multipart(std::string_view xml, const std::string& shown);

// An AWS shared config or credentials file: section name (as written: "default",
// "profile name") → key → value. Comments (# ;), blank lines and indented continuation lines
// (nested settings such as `s3 =`) are accepted; FormatError naming `shown` and the line for
// anything else.
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
IniSections parse_aws_ini(std::string_view text, const std::string& shown);

}  // namespace tessera::io
