// Outputs on object stores: a writer writes locally, as always; an output the user names with
// s3:// or gs:// is written into a local staging directory first and then published object by
// object in an order that makes it visible last (docs/commit-protocols.md):
//
//  1. a write lock: the object `.tessera-write` below the output, created only if absent (a
//     conditional PUT), holding the write's journal (who, when, what it will write and commit);
//     a second writer is refused while it exists;
//  2. when the output is already committed (a commit object exists): refused without overwrite;
//     with overwrite its commit objects are removed first, so no reader opens a mix of versions;
//  3. every object but the commit objects, rank by rank (zarr data before metadata), in parallel
//     within a rank; files above the part size as multipart uploads;
//  4. on overwrite, the objects the new version does not have are removed (within its scopes);
//  5. the commit objects (a deltacells manifest.json, a leaf's zarr.json, …), then the objects
//     updated after the commit (a hive's coverage.moc), then the lock is removed.
// A write that fails removes what it wrote and its lock; a killed one leaves the lock, which names
// what `cleanup_output` (the `tessera remote cleanup` command) removes. A single-file output (a
// `.tet`) is one PUT or one multipart upload: it appears whole when the upload completes.
//
// Thread-safety: an OutputTarget belongs to one writer; the functions are reentrant.
// Lifetime: an OutputTarget removes its staging directory when destroyed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/bucket.hpp"

namespace tessera::io {

// The key of the write lock and journal below a remote output.
inline constexpr std::string_view kWriteLockKey = ".tessera-write";

// What a published directory commits with (see above).
struct CommitPlan {
  // Objects written after every other one; the output is committed when all of them exist.
  std::vector<std::string> commit_keys;
  // Objects written after the commit, in order, which may replace objects that existed before
  // (a hive's root coverage.moc and morton_hive.json): not part of the commit, and never removed
  // when a write is undone.
  std::vector<std::string> after_commit{};
  // The rank of a key (commit keys excepted): lower ranks are written completely before higher
  // ones start. Default: every key rank 0.
  std::function<int(std::string_view key)> rank{};
  // Objects already committed under `commit_keys` may be replaced.
  bool overwrite = false;
  // Prefixes (relative to the output; "" for all of it) the new version replaces wholly: on
  // overwrite, objects under them that it does not have are removed before the commit.
  std::vector<std::string> scopes{""};
};

struct PublishReport {
  std::uint64_t objects = 0;  // objects written
  std::uint64_t bytes = 0;    // bytes written
  std::uint64_t removed = 0;  // objects of the old version removed
  bool replaced = false;      // an earlier committed version was replaced
  double seconds = 0;         // wall time of the publication (OutputTarget::publish)
};

// A writer's output as the user named it.
class OutputTarget {
 public:
  enum class Shape { File, Directory };
  // `uri`: a local path, file://, s3:// or gs:// (http(s):// is refused: plain HTTP cannot write).
  // A remote output is staged in a fresh directory below TESSERA_STAGING_DIR (default: TMPDIR,
  // else /tmp); staging directories of writers that are gone are removed on the way.
  OutputTarget(std::string uri, Shape shape, const UploadOptions& upload = upload_options_from_env());
  ~OutputTarget();
  OutputTarget(const OutputTarget&) = delete;
  OutputTarget& operator=(const OutputTarget&) = delete;

  bool remote() const { return store_ != nullptr; }
  const std::string& uri() const { return uri_; }
  // Where the writer writes: the output's own path, or its place in the staging directory.
  const std::string& local_path() const { return local_path_; }
  // The store of a remote output: rooted at the output (Directory) or at its parent prefix (File).
  BucketStore& store() const { return *store_; }
  // The output's object key in store() (File) or "" (Directory).
  const std::string& key() const { return key_; }

  // Remote directory outputs: UsageError naming the output when it is committed (one of `plan`'s
  // commit keys exists) and the plan does not overwrite (the message ends with `advice`), or
  // when a write lock is present. Local outputs: nothing (their writers check). Writers call this
  // before their expensive work.
  void check_writable(const CommitPlan& plan, std::string_view advice = "; pass --overwrite to replace it") const;
  // Copies the remote object `key` (relative to the output) into the staging directory, so a
  // writer that extends an existing output (a hive's manifest) finds it; false when it does not
  // exist. Local outputs: false.
  bool fetch_existing(const std::string& key) const;
  // Publishes what the writer wrote (a file, or the directory with `plan`); nothing for local
  // outputs. `progress` is called with the bytes of each object or part sent.
  PublishReport publish(const CommitPlan& plan = {}) const;

  UploadOptions& upload_options() { return upload_; }

 private:
  std::string uri_;
  Shape shape_;
  UploadOptions upload_;
  std::unique_ptr<BucketStore> store_;
  std::string key_;
  std::filesystem::path staging_;  // empty for local outputs
  std::string local_path_;
};

// Publishes the directory `staged` into `store` following `plan` (steps 1-5 above).
PublishReport publish_tree(const std::filesystem::path& staged, BucketStore& store, const CommitPlan& plan,
                           const UploadOptions& options);

// Publishes each directory `dirs[i]` of `staged` (relative paths) as an output of its own at
// `root`/dirs[i], with `plan_of(staged / dirs[i])` and its lock in that directory, several
// directories at a time: how the tasks of a distributed build publish their leaves side by side.
// With `take_over_locks`, a lock found in a directory is taken to be an earlier attempt's of the
// same task, which is gone: it is cleaned up (as `cleanup_output`) before the directory is written.
PublishReport publish_directories(const std::filesystem::path& staged, const BucketUri& root,
                                  const std::vector<std::string>& dirs,
                                  const std::function<CommitPlan(const std::filesystem::path&)>& plan_of,
                                  const UploadOptions& options, bool take_over_locks);

// For a bucket output `uri` with a write lock: "URI: a write is running or was interrupted (host
// H, process P, started T); if no writer is running, 'tessera remote cleanup URI' removes what it
// left". nullopt when there is no lock, and for local paths and plain HTTP(S). Verify commands
// print it, so a user who finds no dataset learns why.
std::optional<std::string> interrupted_write_note(const std::string& uri);

// What an interrupted remote write left below `store`'s root, and what cleanup does about it.
struct CleanupReport {
  bool locked = false;                   // a write lock was found
  std::string lock_text{};               // its journal's first lines (who and when)
  bool committed = false;                // the locked write's commit objects all exist
  std::vector<std::string> removed{};    // objects removed (or, dry run, to remove)
  std::vector<PendingUpload> aborted{};  // unfinished multipart uploads aborted (or to abort)
};

// Finishes or undoes an interrupted write (docs/commit-protocols.md, "Cleanup"): a committed
// write gets its old objects removed, an uncommitted one the objects it wrote; unfinished
// multipart uploads below the root are aborted; the lock is removed last. `dry_run` reports
// without changing anything. Must not run while a writer is still writing.
CleanupReport cleanup_output(BucketStore& store, bool dry_run);

// The journal a lock holds, and its parser (FormatError naming `shown` on anything malformed),
// exposed for tests and fuzzing.
struct WriteJournal {
  std::string host;
  std::uint64_t pid = 0;
  std::string started;                   // ISO 8601 UTC
  std::vector<std::string> commit_keys;  // as in the plan
  std::vector<std::string> scopes;       // as in the plan, when it overwrites; empty otherwise
  std::vector<std::string> writes;       // every key the write puts, commit keys included
  std::vector<std::string> updates;      // the plan's after_commit keys
};
std::string format_journal(const WriteJournal& journal);
WriteJournal parse_journal(std::string_view text, const std::string& shown);

}  // namespace tessera::io
