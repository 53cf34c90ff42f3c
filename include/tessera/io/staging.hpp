// Staging a new version of a directory-shaped object set (a hive leaf, a deltacells dataset) and
// making it visible at once, so that a reader of its path sees the old version or the new one,
// never a mix (docs/reliability.md). The operating-system side (unsynced writes, one filesystem
// sync, atomic directory exchange) lives here so the format writers only name keys.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tessera/io/store.hpp"

namespace tessera::io {

// Moves the finished directory `staged` to `target` (same filesystem). When `target` exists the
// two are exchanged atomically (renameat2 RENAME_EXCHANGE) and the old version, then at `staged`,
// is removed. On a filesystem that cannot exchange, the old version is first renamed aside to
// `target.old-<pid>` (removed after the new one is in; a killed writer's is swept by the next
// writer). `after_swap`, when given, runs once the new version is visible and before the old one
// is removed. IoError naming `target` when a rename fails; nothing is removed then.
void replace_directory(const std::string& staged, const std::string& target,
                       const std::function<void()>& after_swap = {});

// Flushes the filesystem holding `path` (syncfs): one call makes durable a whole tree of files
// written without an fsync each. A path that cannot be opened is skipped.
void sync_filesystem(const std::string& path);

// A store for writing a staged version below a key of `store`: on a local directory, a store
// whose puts write plain files without an fsync each (sync_staged then makes them durable in one
// call); nullptr for any other store, which is written directly. The returned store refers to
// `store`, which must outlive it; thread-safety as every Store.
[[nodiscard]] std::unique_ptr<Store> staging_store(Store& store);

// Makes what was written below `staged` durable: one filesystem sync on a local directory,
// nothing elsewhere.
void sync_staged(const Store& store, const std::string& staged);

// Replaces the objects below `target` with those below `staged`, then removes `staged`. On a local
// directory by replace_directory (atomic for readers); on other stores object by object (not
// atomic; in-memory stores).
void replace_prefix(Store& store, const std::string& staged, const std::string& target);

}  // namespace tessera::io
