// Remote outputs of the writer commands (docs/remote.md, "Writing to buckets"): each writer
// writes to `RemoteOutput::local_path()` and calls `publish`, which uploads a staged output to
// its s3:// or gs:// target (nothing for a local one). Progress goes to stderr on a terminal.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/io/publish.hpp"

namespace tessera::cli {

// The commit plan of a staged Zarr hierarchy (a `tet export` store, a ragged hive or flat
// store): chunk and shard objects first, then the zarr.json files from the deepest up, and last
// the zarr.json at the root of each hierarchy (a leaf group, or the store's root); after the
// commit, a hive's root coverage.moc and (new) morton_hive.json. `staged` is the local directory the writer made.
io::CommitPlan zarr_commit_plan(const std::string& staged, bool overwrite);

// A remote hive's morton_hive.json copied into the staging directory (so the writer checks the
// new leaves against it and adds to the hive), with its text, and its root coverage.moc (which
// the writer merges with the new shards); nullopt when the hive is new or the output is local.
std::optional<std::string> stage_existing_hive_manifest(const io::OutputTarget& target);
// Removes the staged `key` when it still holds `fetched` (an existing object the writer only
// read), so publishing neither rewrites nor commits with it.
void drop_unchanged(const io::OutputTarget& target, const std::string& key, const std::optional<std::string>& fetched);

// Uploads `target`'s staged output with `plan` (a no-op for local outputs), drawing progress on
// stderr when it is a terminal, then one line on stderr: `uploaded URI: N object(s), B bytes in
// S s (R MB/s)`.
io::PublishReport publish_output(io::OutputTarget& target, const io::CommitPlan& plan = {});

// Publishes the staged leaf directories `leaf_dirs` of a `ragged build --leaves-only` task (each
// holds one shard's leaf and its stats.json: the hive's leaf path without the leaf's name) each on
// its own, as an output below `target` with its lock in that directory, so the tasks of one
// distributed build write their leaves side by side. A lock an earlier attempt of the same task left (a killed
// worker, whose task the scheduler runs again) is cleaned up first: within a distributed build
// each shard has one task, and it runs again only after its earlier attempt is gone. Prints one
// `uploaded` line for all of them.
io::PublishReport publish_leaves(io::OutputTarget& target, const std::vector<std::string>& leaf_dirs, bool overwrite);

}  // namespace tessera::cli
