// The one place a storage backend is chosen: a user-given input (a path or a URI) becomes a
// ByteSource (single-file formats such as `.tet`) or a Store (directory formats: deltacells
// datasets, Zarr stores, hive leaves).
//
// Accepted: plain local paths, `file://PATH`, `http://…`, `https://…`, `s3://bucket/key` and
// `gs://bucket/key` (docs/remote.md); any other scheme is refused with UnsupportedError. A scheme is
// `[A-Za-z][A-Za-z0-9+.-]*` followed by `://`; anything else is a path.
//
// Thread-safety: the functions are reentrant; what they return follows the contract of its type
// (ByteSource and Store reads may be called concurrently). Lifetime: the returned objects own
// everything they need and do not refer to `options`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tessera/io/byte_source.hpp"
#include "tessera/io/http.hpp"
#include "tessera/io/store.hpp"

namespace tessera::io {

struct OpenOptions {
  OpenMode mode = OpenMode::Mmap;  // local files
  HttpOptions http = http_options_from_env();
};

enum class UriKind { Local, Http, Bucket };

// The scheme of `uri` in lower case ("" for a plain path, "file", "http", …).
std::string uri_scheme(std::string_view uri);

// Local for paths and file://, Http for http(s)://, Bucket for s3:// and gs://; UnsupportedError
// naming the scheme otherwise.
UriKind uri_kind(std::string_view uri);

// True for http://, https://, s3:// and gs:// inputs (no backend is contacted).
bool is_remote_uri(std::string_view uri);

// The filesystem path of a plain path or `file://` URI. UnsupportedError for any other scheme
// (remote inputs included: callers that need a local file say so before calling this).
std::string local_path(std::string_view uri);

// The message of the UnsupportedError for an input whose scheme no backend handles.
std::string unsupported_scheme_text(std::string_view scheme);

// A source over the object `uri` names: open_file for local inputs, open_http_source for HTTP(S),
// open_bucket_source for buckets.
std::unique_ptr<ByteSource> open_source(const std::string& uri, const OpenOptions& options = {});

// A store rooted at `uri`: DirectoryStore for local inputs, HttpStore for HTTP(S), BucketStore
// for buckets.
std::unique_ptr<Store> open_store(const std::string& uri, const OpenOptions& options = {});

// UsageError "writing to URI is not supported yet (write to a local path)" when `uri` is not a
// local path or file:// URI; otherwise its local path. Writers call this on their outputs.
std::string local_output_path(std::string_view uri);

}  // namespace tessera::io
