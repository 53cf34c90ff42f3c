// Publishing staged outputs to object stores with a lock, ranks and commit objects last, and the
// cleanup of interrupted writes (include/tessera/io/publish.hpp, docs/commit-protocols.md).
#include "tessera/io/publish.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "parallel.hpp"
#include "tessera/core/civil_date.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/temporaries.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::io {
namespace {

namespace fs = std::filesystem;
using detail::for_each_parallel;

constexpr std::string_view kJournalMagic = "tessera-write-journal 1";
constexpr std::string_view kStagingPrefix = "tessera-stage-";

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

bool under(std::string_view key, std::string_view scope) {
  return scope.empty() || key == scope ||
         (key.starts_with(scope) && key.size() > scope.size() && key[scope.size()] == '/');
}

std::string staging_base() {
  for (const char* var : {"TESSERA_STAGING_DIR", "TMPDIR"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "/tmp";
}

// A new, empty staging directory `<base>/tessera-stage-<pid>-<n>`, after sweeping those of gone
// writers.
fs::path make_staging_directory() {
  const fs::path base = staging_base();
  remove_stale_temporaries(base, kStagingPrefix);
  static std::atomic<int> counter{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    fs::path dir = base / (std::string(kStagingPrefix) + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    if (::mkdir(dir.c_str(), 0700) == 0) return dir;
    if (errno != EEXIST)
      throw IoError(dir.string() +
                        ": cannot create a staging directory for a remote output (set TESSERA_STAGING_DIR "
                        "to a directory with room for the output)",
                    dir.string());
  }
  throw IoError(base.string() + ": cannot find a free staging directory name", base.string());
}

// Every regular file below `root` as a store key, sorted. Names starting with '.' are the
// writer's local bookkeeping (lock files, temporaries), which no store lists: they stay local.
std::vector<std::string> staged_keys(const fs::path& root) {
  std::vector<std::string> keys;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::directory_entry& entry = *it;
    if (entry.path().filename().string().starts_with('.')) {
      if (entry.is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!entry.is_regular_file()) continue;
    std::string key = entry.path().lexically_relative(root).generic_string();
    if (!is_valid_key(key) || key.find_first_of("\r\n") != std::string::npos)
      throw UsageError(entry.path().string() + ": '" + key + "' cannot be an object key", entry.path().string());
    keys.push_back(std::move(key));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// "host H, process P, started T": who holds a lock, as messages and cleanup reports say it.
std::string holder_text(const WriteJournal& j) {
  return "host " + j.host + ", process " + std::to_string(j.pid) + ", started " + j.started;
}

std::string lock_holder(const BucketStore& store) {
  const auto bytes = store.get(std::string(kWriteLockKey));
  if (!bytes) return "its lock is gone now";
  try {
    const WriteJournal j = parse_journal(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                                         store.shown_of(std::string(kWriteLockKey)));
    return holder_text(j);
  } catch (const FormatError&) {
    return "its lock object cannot be read";
  }
}

std::string cleanup_advice(const BucketStore& store) {
  return "if no writer is running, 'tessera remote cleanup " + store.name() + "' finishes or removes what it left";
}

[[noreturn]] void refuse_locked(const BucketStore& store) {
  throw UsageError(store.name() + ": another write is in progress, or one was interrupted (" + lock_holder(store) +
                       "); " + cleanup_advice(store),
                   store.name());
}

// Uploads `keys` (files below `staged`) in parallel: files up to the part size on a pool of
// `options.parallel` threads, larger ones one at a time with their parts in parallel. Each key
// is added to `written` before its upload starts, so a failure can remove what may exist.
void upload_all(const fs::path& staged, BucketStore& store, const std::vector<std::string>& keys,
                const UploadOptions& options, PublishReport& report, std::vector<std::string>& written) {
  std::vector<std::string> small, large;
  for (const std::string& key : keys) {
    const auto size = fs::file_size(staged / key);
    (size > options.part_size ? large : small).push_back(key);
    report.bytes += size;
  }
  std::mutex mutex;
  UploadOptions each = options;
  if (options.progress)
    each.progress = [&](std::uint64_t n) {
      const std::scoped_lock lock(mutex);
      options.progress(n);
    };
  for_each_parallel(small.size(), options.parallel, [&](std::size_t i) {
    {
      const std::scoped_lock lock(mutex);
      written.push_back(small[i]);
    }
    store.upload_file(small[i], (staged / small[i]).string(), each);
  });
  for (const std::string& key : large) {
    written.push_back(key);
    store.upload_file(key, (staged / key).string(), each);
  }
  report.objects += keys.size();
}

}  // namespace

// ---- journal --------------------------------------------------------------------------------

std::string format_journal(const WriteJournal& j) {
  std::string out(kJournalMagic);
  out += "\nhost " + j.host + "\npid " + std::to_string(j.pid) + "\nstarted " + j.started + "\n";
  for (const auto& k : j.commit_keys) out += "commit " + k + "\n";
  for (const auto& s : j.scopes) out += "scope " + s + "\n";
  for (const auto& k : j.writes) out += "write " + k + "\n";
  for (const auto& k : j.updates) out += "update " + k + "\n";
  return out + "end\n";
}

WriteJournal parse_journal(std::string_view text, const std::string& shown) {
  WriteJournal j;
  std::size_t line_no = 0;
  bool ended = false;
  const auto bad = [&](const std::string& why) {
    return FormatError(shown + ": line " + std::to_string(line_no) + ": " + why + " (not a tessera write journal)",
                       shown);
  };
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) throw bad("the last line has no line break (the journal is cut short)");
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    ++line_no;
    if (ended) throw bad("text after 'end'");
    if (line_no == 1) {
      if (line != kJournalMagic) throw bad("expected '" + std::string(kJournalMagic) + "'");
      continue;
    }
    if (line == "end") {
      ended = true;
      continue;
    }
    const auto space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    const std::string value(space == std::string_view::npos ? std::string_view() : line.substr(space + 1));
    const auto key_value = [&]() -> const std::string& {
      if (!is_valid_key(value)) throw bad("'" + value + "' is not an object key");
      return value;
    };
    if (field == "host") j.host = value;
    else if (field == "started") j.started = value;
    else if (field == "pid") {
      if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos)
        throw bad("pid '" + value + "' is not a number");
      j.pid = std::stoull(value);
    } else if (field == "commit") j.commit_keys.push_back(key_value());
    else if (field == "write") j.writes.push_back(key_value());
    else if (field == "update") j.updates.push_back(key_value());
    else if (field == "scope") {
      if (!value.empty()) (void)key_value();
      j.scopes.push_back(value);
    } else throw bad("unknown field '" + std::string(field) + "'");
  }
  if (line_no == 0) throw bad("empty");
  if (!ended) throw bad("no 'end' line (the journal is cut short)");
  return j;
}

// ---- publishing -----------------------------------------------------------------------------

PublishReport publish_tree(const fs::path& staged, BucketStore& store, const CommitPlan& plan,
                           const UploadOptions& options) {
  const std::vector<std::string> keys = staged_keys(staged);
  const std::set<std::string> key_set(keys.begin(), keys.end());
  for (const std::string& c : plan.commit_keys)
    if (!key_set.contains(c))
      throw UsageError(staged.string() + ": the writer made no '" + c + "', the object that commits the output",
                       staged.string());
  const std::set<std::string> update_set(plan.after_commit.begin(), plan.after_commit.end());
  std::vector<std::string> writes;
  for (const std::string& k : keys)
    if (!update_set.contains(k)) writes.push_back(k);
  std::vector<std::string> updates;
  for (const std::string& k : plan.after_commit)
    if (key_set.contains(k)) updates.push_back(k);

  WriteJournal journal{host_name(),
                       static_cast<std::uint64_t>(::getpid()),
                       utc_text(std::time(nullptr), "%Y-%m-%dT%H:%M:%SZ"),
                       plan.commit_keys,
                       plan.overwrite ? plan.scopes : std::vector<std::string>{},
                       writes,
                       updates};
  const std::string journal_text = format_journal(journal);
  const std::string lock_key(kWriteLockKey);
  if (!store.put_if_absent(lock_key, std::as_bytes(std::span(journal_text)))) refuse_locked(store);

  PublishReport report;
  std::vector<std::string> written;
  bool committed_now = false;
  try {
    // Every request below is a round trip: independent ones go in parallel.
    const std::vector<std::string>& commits = plan.commit_keys;
    // An overwrite lists the scopes it replaces anyway; when they hold every commit object, that
    // listing also says whether the output is committed (one round trip instead of two).
    std::vector<std::vector<std::string>> listed;
    const bool list_first =
        plan.overwrite && std::all_of(commits.begin(), commits.end(), [&](const std::string& c) {
          return std::any_of(plan.scopes.begin(), plan.scopes.end(), [&](const std::string& s) { return under(c, s); });
        });
    const auto list_scopes = [&] {
      listed.assign(plan.scopes.size(), {});
      for_each_parallel(plan.scopes.size(), options.parallel,
                        [&](std::size_t i) { listed[i] = store.list(plan.scopes[i]); });
    };
    std::vector<char> present(commits.size());
    if (list_first) {
      list_scopes();
      std::set<std::string> listed_keys;
      for (const auto& keys_of_scope : listed) listed_keys.insert(keys_of_scope.begin(), keys_of_scope.end());
      for (std::size_t i = 0; i < commits.size(); ++i) present[i] = listed_keys.contains(commits[i]);
    } else {
      for_each_parallel(commits.size(), options.parallel,
                        [&](std::size_t i) { present[i] = store.exists(commits[i]); });
    }
    const auto existing = std::find(present.begin(), present.end(), 1);
    const bool committed = existing != present.end();
    if (committed && !plan.overwrite)
      throw UsageError(store.name() + " already exists (it has " + commits[existing - present.begin()] +
                           "); pass --overwrite to replace it",
                       store.name());
    std::vector<std::string> stale;
    if (committed) {
      // Retract the old version first: from here no reader can open it, so none sees a mix.
      for_each_parallel(commits.size(), options.parallel, [&](std::size_t i) { store.erase(commits[i]); });
      report.replaced = true;
      if (!list_first) list_scopes();
      for (std::size_t i = 0; i < listed.size(); ++i)
        for (std::string& k : listed[i])
          if (!key_set.contains(k) && k != lock_key && under(k, plan.scopes[i])) stale.push_back(std::move(k));
    }
    // The old version's extra objects are removed while the new ones go up (the two sets are
    // disjoint), and before the commit.
    auto removal = std::async(std::launch::async, [&] {
      for_each_parallel(stale.size(), std::max(1, options.parallel / 2), [&](std::size_t i) { store.erase(stale[i]); });
    });
    const std::set<std::string> commit_set(commits.begin(), commits.end());
    std::map<int, std::vector<std::string>> by_rank;
    for (const std::string& k : writes)
      if (!commit_set.contains(k)) by_rank[plan.rank ? plan.rank(k) : 0].push_back(k);
    try {
      for (const auto& [rank, rank_keys] : by_rank) upload_all(staged, store, rank_keys, options, report, written);
    } catch (...) {
      removal.wait();
      throw;
    }
    removal.get();
    report.removed = stale.size();
    // The commit objects, in the plan's order: the output is visible once the last one exists.
    for (const std::string& c : plan.commit_keys) {
      written.push_back(c);
      store.upload_file(c, (staged / c).string(), options);
      report.bytes += fs::file_size(staged / c);
      ++report.objects;
    }
    committed_now = true;
    for (const std::string& u : updates) {
      store.upload_file(u, (staged / u).string(), options);
      report.bytes += fs::file_size(staged / u);
      ++report.objects;
    }
  } catch (...) {
    // Before the commit: undo what this write put, then release the lock. After it the output
    // stands, and only the lock goes. When even that fails, the lock stays and names the write
    // for `tessera remote cleanup`.
    try {
      if (!committed_now)
        for (const std::string& k : written) store.erase(k);
      if (!committed_now && report.replaced)  // the retracted old version's remaining objects too
        for (const std::string& scope : plan.scopes)
          for (const std::string& k : store.list(scope))
            if (k != lock_key && under(k, scope)) store.erase(k);
      store.erase(lock_key);
    } catch (const Error&) {
    }
    throw;
  }
  store.erase(lock_key);
  return report;
}

CleanupReport cleanup_output(BucketStore& store, bool dry_run) {
  CleanupReport report;
  const std::string lock_key(kWriteLockKey);
  std::optional<WriteJournal> journal;
  if (const auto bytes = store.get(lock_key)) {
    report.locked = true;
    const std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    journal = parse_journal(text, store.shown_of(lock_key));
    report.lock_text = holder_text(*journal);
  }
  if (journal) {
    const std::vector<std::string> present = store.list("");
    const std::set<std::string> present_set(present.begin(), present.end());
    report.committed =
        !journal->commit_keys.empty() && std::all_of(journal->commit_keys.begin(), journal->commit_keys.end(),
                                                     [&](const std::string& k) { return present_set.contains(k); });
    const std::set<std::string> writes(journal->writes.begin(), journal->writes.end());
    for (const std::string& k : present) {
      if (k == lock_key) continue;
      // Committed: the old version's leftovers within the replaced scopes go. Not committed: the
      // objects the write put go, and for an overwrite everything in the scopes it replaces (it
      // had retracted the old version, whose remaining objects no manifest names any more).
      const bool in_scope = std::any_of(journal->scopes.begin(), journal->scopes.end(),
                                        [&](const std::string& s) { return under(k, s); });
      if (report.committed ? (in_scope && !writes.contains(k)) : (writes.contains(k) || in_scope))
        report.removed.push_back(k);
    }
  }
  report.aborted = store.pending_uploads("");
  if (dry_run) return report;
  for (const PendingUpload& u : report.aborted) store.abort_upload(u);
  for (const std::string& k : report.removed) store.erase(k);
  if (report.locked) store.erase(lock_key);
  return report;
}

PublishReport publish_directories(const fs::path& staged, const BucketUri& root, const std::vector<std::string>& dirs,
                                  const std::function<CommitPlan(const fs::path&)>& plan_of,
                                  const UploadOptions& options, bool take_over_locks) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<PublishReport> reports(dirs.size());
  std::mutex progress_mutex;  // `progress` is serialized across the directories too
  UploadOptions each = options;
  if (options.progress)
    each.progress = [&](std::uint64_t n) {
      const std::scoped_lock lock(progress_mutex);
      options.progress(n);
    };
  // A few directories at a time, each with its own requests in parallel inside.
  constexpr int kDirectoriesAtOnce = 4;
  for_each_parallel(dirs.size(), kDirectoriesAtOnce, [&](std::size_t i) {
    BucketUri uri = root;
    uri.key = root.key.empty() ? dirs[i] : root.key + "/" + dirs[i];
    BucketStore store(uri, http_options_from_env());
    if (take_over_locks && store.exists(std::string(kWriteLockKey))) (void)cleanup_output(store, false);
    const fs::path dir = staged / dirs[i];
    reports[i] = publish_tree(dir, store, plan_of(dir), each);
  });
  PublishReport total;
  for (const PublishReport& r : reports) {
    total.objects += r.objects;
    total.bytes += r.bytes;
    total.removed += r.removed;
    total.replaced = total.replaced || r.replaced;
  }
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total;
}

std::optional<std::string> interrupted_write_note(const std::string& uri) {
  if (uri_kind(uri) != UriKind::Bucket) return std::nullopt;
  const BucketStore store(parse_bucket_uri(uri), http_options_from_env());
  if (!store.exists(std::string(kWriteLockKey))) return std::nullopt;
  return store.name() + ": a write is running or was interrupted (" + lock_holder(store) + "); " +
         cleanup_advice(store);
}

// ---- OutputTarget ---------------------------------------------------------------------------

OutputTarget::OutputTarget(std::string uri, Shape shape, const UploadOptions& upload)
    : uri_(std::move(uri)), shape_(shape), upload_(upload) {
  switch (uri_kind(uri_)) {
    case UriKind::Local: local_path_ = io::local_path(uri_); return;
    case UriKind::Http:
      throw UsageError(
          "writing to " + display_url(uri_) +
              " is not supported: plain HTTP(S) has no write requests (write to a local path, s3:// or gs://)",
          display_url(uri_));
    case UriKind::Bucket: break;
  }
  BucketUri target = parse_bucket_uri(uri_);
  std::string name = target.key.substr(target.key.rfind('/') + 1);
  if (shape_ == Shape::File) {
    if (target.key.empty()) throw UsageError(uri_ + ": names a bucket, not an object", uri_);
    key_ = name;
    target.key = target.key.substr(0, target.key.size() - name.size());
    while (!target.key.empty() && target.key.back() == '/') target.key.pop_back();
  }
  store_ = std::make_unique<BucketStore>(target, http_options_from_env());
  staging_ = make_staging_directory();
  local_path_ = (staging_ / (name.empty() ? target.bucket : name)).string();
}

OutputTarget::~OutputTarget() {
  if (staging_.empty()) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void OutputTarget::check_writable(const CommitPlan& plan, std::string_view advice) const {
  if (!remote() || shape_ != Shape::Directory) return;
  if (store_->exists(std::string(kWriteLockKey))) refuse_locked(*store_);
  if (plan.overwrite) return;
  for (const std::string& c : plan.commit_keys)
    if (store_->exists(c)) throw UsageError(uri_ + " already exists (it has " + c + ")" + std::string(advice), uri_);
}

bool OutputTarget::fetch_existing(const std::string& key) const {
  if (!remote()) return false;
  const auto bytes = store_->get(key);
  if (!bytes) return false;
  const fs::path path = fs::path(local_path_) / key;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
  if (!out) throw IoError(path.string() + ": cannot write the staged copy of " + store_->shown_of(key), path.string());
  return true;
}

PublishReport OutputTarget::publish(const CommitPlan& plan) const {
  if (!remote()) return {};
  const auto start = std::chrono::steady_clock::now();
  PublishReport report;
  if (shape_ == Shape::Directory) {
    report = publish_tree(local_path_, *store_, plan, upload_);
  } else {
    store_->upload_file(key_, local_path_, upload_);
    report.objects = 1;
    report.bytes = fs::file_size(local_path_);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tessera::io
