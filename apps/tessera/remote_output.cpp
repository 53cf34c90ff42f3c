// Remote outputs of the writer commands, and `tessera remote cleanup URI [--dry-run] [--json]`
// (docs/cli/remote.md), which finishes or undoes an interrupted remote write.
#include "remote_output.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <memory>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kZarrJson = "zarr.json";

int depth_of(std::string_view key) { return static_cast<int>(std::count(key.begin(), key.end(), '/')); }

bool is_zarr_json(std::string_view key) { return key == kZarrJson || key.ends_with("/zarr.json"); }

// The directory part of a key ("" at the root).
std::string_view parent_of(std::string_view key) {
  const auto slash = key.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
}

}  // namespace

io::CommitPlan zarr_commit_plan(const std::string& staged, bool overwrite) {
  std::vector<std::string> metadata;
  for (const auto& entry : fs::recursive_directory_iterator(staged))
    if (entry.is_regular_file()) {
      std::string key = entry.path().lexically_relative(staged).generic_string();
      if (is_zarr_json(key)) metadata.push_back(std::move(key));
    }
  std::set<std::string, std::less<>> dirs_with_metadata;
  for (const auto& k : metadata) dirs_with_metadata.emplace(parent_of(k));
  // A hierarchy's root is a zarr.json with none in any directory above its own.
  const auto has_metadata_above = [&](std::string_view key) {
    for (std::string_view dir = parent_of(key); !dir.empty();) {
      dir = parent_of(dir);
      if (dirs_with_metadata.contains(dir)) return true;
    }
    return false;
  };
  io::CommitPlan plan;
  plan.overwrite = overwrite;
  plan.scopes.clear();
  for (const std::string& k : metadata) {
    if (has_metadata_above(k)) continue;
    plan.commit_keys.push_back(k);
    plan.scopes.emplace_back(parent_of(k));
  }
  // A hive's root coverage and (new) manifest describe its leaves: written once they are in.
  for (const char* hive_object : {"coverage.moc", "morton_hive.json"})
    if (fs::exists(fs::path(staged) / hive_object)) plan.after_commit.emplace_back(hive_object);
  int deepest = 0;
  for (const auto& k : metadata) deepest = std::max(deepest, depth_of(k));
  plan.rank = [deepest](std::string_view key) { return is_zarr_json(key) ? 1 + deepest - depth_of(key) : 0; };
  return plan;
}

std::optional<std::string> stage_existing_hive_manifest(const io::OutputTarget& target) {
  if (!target.remote() || !target.fetch_existing("morton_hive.json")) return std::nullopt;
  (void)target.fetch_existing("coverage.moc");  // merged with the new leaves' shards, as locally
  std::ifstream in(fs::path(target.local_path()) / "morton_hive.json", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void drop_unchanged(const io::OutputTarget& target, const std::string& key, const std::optional<std::string>& fetched) {
  if (!target.remote() || !fetched) return;
  const fs::path path = fs::path(target.local_path()) / key;
  std::ifstream in(path, std::ios::binary);
  if (std::string(std::istreambuf_iterator<char>(in), {}) == *fetched) fs::remove(path);
}

namespace {

// Runs `publish` with a progress line on stderr when it is a terminal, then prints the
// `uploaded URI: …` line.
io::PublishReport publish_with_progress(io::OutputTarget& target, const std::function<io::PublishReport()>& publish) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  std::uint64_t sent = 0;
  if (tty)
    target.upload_options().progress = [&sent](std::uint64_t n) {
      sent += n;
      write_stream(stderr, fmt::format("\r\033[Kuploading: {:.1f} MB sent", static_cast<double>(sent) / 1e6));
    };
  try {
    const io::PublishReport report = publish();
    const double seconds = report.seconds;
    if (tty) write_stream(stderr, "\r\033[K");
    write_stream(
        stderr,
        fmt::format(
            "uploaded {}: {} object(s), {} bytes in {:.3f} s ({:.1f} MB/s){}\n", target.uri(), report.objects,
            report.bytes, seconds, seconds > 0 ? static_cast<double>(report.bytes) / seconds / 1e6 : 0.0,
            report.replaced ? fmt::format(", replacing the old version ({} object(s) removed)", report.removed) : ""));
    return report;
  } catch (...) {
    if (tty) write_stream(stderr, "\r\033[K");
    throw;
  }
}

}  // namespace

io::PublishReport publish_output(io::OutputTarget& target, const io::CommitPlan& plan) {
  if (!target.remote()) return {};
  return publish_with_progress(target, [&] { return target.publish(plan); });
}

io::PublishReport publish_leaves(io::OutputTarget& target, const std::vector<std::string>& leaf_dirs, bool overwrite) {
  if (!target.remote()) return {};
  return publish_with_progress(target, [&] {
    return io::publish_directories(
        target.local_path(), io::parse_bucket_uri(target.uri()), leaf_dirs,
        [overwrite](const fs::path& dir) { return zarr_commit_plan(dir.string(), overwrite); }, target.upload_options(),
        true);
  });
}

void register_remote(CLI::App& app, int& rc) {
  CLI::App* remote = app.add_subcommand("remote", "Object-store outputs: finish or undo interrupted writes");
  remote->require_subcommand(1);
  struct CleanupArgs {
    std::string uri;
    bool dry_run = false;
    bool json = false;
  };
  auto a = std::make_shared<CleanupArgs>();
  CLI::App* cmd = remote->add_subcommand(
      "cleanup", "Finish or undo an interrupted write to s3:// or gs:// and abort its unfinished uploads");
  cmd->add_option("URI", a->uri, "the output the write was making (s3://bucket/prefix or gs://…)")->required();
  cmd->add_flag("--dry-run", a->dry_run, "report what would be removed, change nothing");
  cmd->add_flag("--json", a->json, "print the report as JSON");
  cmd->callback([a, &rc] {
    if (io::uri_kind(a->uri) != io::UriKind::Bucket)
      throw UsageError(a->uri + ": remote cleanup takes an s3:// or gs:// output", a->uri);
    io::BucketStore store(io::parse_bucket_uri(a->uri), io::http_options_from_env());
    const io::CleanupReport r = io::cleanup_output(store, a->dry_run);
    if (a->json) {
      ragged_cli::print_json([&](codec::json::JsonWriter& w) {
        w.begin_object();
        w.key("output").value(a->uri);
        w.key("dry_run").value(a->dry_run);
        w.key("locked").value(r.locked);
        if (r.locked) w.key("lock").value(r.lock_text);
        w.key("committed").value(r.committed);
        w.key("removed").begin_array();
        for (const auto& k : r.removed) w.value(k);
        w.end_array();
        w.key("aborted_uploads").begin_array();
        for (const auto& u : r.aborted) w.value(u.key);
        w.end_array();
        w.end_object();
      });
    } else {
      const std::string verb = a->dry_run ? "would remove" : "removed";
      if (!r.locked) fmt::print("{}: no interrupted write (no lock)\n", a->uri);
      else
        fmt::print("{}: interrupted write ({}), {}\n", a->uri, r.lock_text,
                   r.committed ? "committed: its old objects go" : "not committed: the objects it wrote go");
      for (const auto& k : r.removed) fmt::print("{} {}\n", verb, k);
      for (const auto& u : r.aborted)
        fmt::print("{} unfinished upload of {} ({})\n", a->dry_run ? "would abort" : "aborted", u.key, u.upload_id);
      fmt::print("{} {} object(s), {} {} upload(s){}\n", verb, r.removed.size(), a->dry_run ? "would abort" : "aborted",
                 r.aborted.size(), r.locked ? (a->dry_run ? ", would release the lock" : ", released the lock") : "");
    }
    rc = 0;
  });
}

}  // namespace tessera::cli
