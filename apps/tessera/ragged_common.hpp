// Shared by the `tessera ragged …` commands (spec zagg-ragged.md §8): turning STORE (a hive
// root, a leaf, a flat store or a column) into a directory store, finding a FIELD, and printing
// the JSON every command emits (two-space indentation, words as decimal strings, NaN as null).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive.hpp"

namespace tessera::cli::ragged_cli {

// A STORE argument (a local directory or an http(s):// prefix) resolved to the store the readers
// are rooted at.
struct Target {
  std::string given;                               // STORE as typed
  std::filesystem::path root;                      // the directory (or URL) the store is rooted at
  bool hive_root = false;                          // STORE holds morton_hive.json and no --shard was given
  std::optional<ragged::hive::Manifest> manifest;  // the hive's manifest (hive roots, and leaves found with --shard)
  std::optional<std::uint64_t> shard;              // the shard word a leaf names (basename or --shard)
  std::unique_ptr<io::Store> store;                // io::open_store of `root`
};

// Opens STORE; with `shard` (a decimal id) STORE must be a hive root and the leaf of that shard is
// opened. IoError when the directory does not exist; UsageError for --shard on a non-hive. Over
// HTTP nothing is listed: the hive manifest and the leaf's zarr.json are probed by name.
Target open_target(const std::string& store, const std::optional<std::string>& shard);
// The same, refusing a hive root (commands that read cells need a leaf: `--shard ID`).
Target open_leaf(const std::string& store, const std::optional<std::string>& shard);

// Where the leaf at `leaf_key` (a key of the hive walk) of a hive root lives: a path or URL that
// open_target opens as that leaf.
std::string leaf_location(const Target& hive, const std::string& leaf_key);

// The STORE positional (named `name`) and `--shard ID` every command that reads a leaf takes.
void add_store_arguments(CLI::App& cmd, std::string& store, std::optional<std::string>& shard,
                         const char* name = "STORE");
// FIELD as given (`6/h_tdigest`) and `--field NAME`.
void add_field_arguments(CLI::App& cmd, std::string& field, std::string& field_name);

// FIELD as given (`6/h_tdigest`), or `--field NAME` with the cell-order group implied: the
// manifest's cell order on a hive leaf, else the one group of the store holding NAME.
std::string resolve_field(const Target& target, const std::string& field, const std::string& field_name);

// The JSON layout of every ragged command: two-space indentation, input key order, shortest
// round-trip numbers, NaN as null.
codec::json::DumpOptions json_layout();
// Streams one JSON document to stdout followed by a newline.
void print_json(const std::function<void(codec::json::JsonWriter&)>& write);
void print_json(const codec::json::Json& tree);

// The stats sidecar zagg writes beside a leaf (spec §4.1): `{id}.zarr` → `stats.json`,
// `{id}_{window}.zarr` → `stats_{window}.json`, `{window}.pyramid.zarr` →
// `{window}.pyramid.stats.json`.
std::filesystem::path stats_sidecar_of(const std::filesystem::path& leaf);
// A whole JSON file (a local path or an http(s):// URL), parsed strictly.
codec::json::Json read_json_file(const std::filesystem::path& path);
// Whether the file or object exists (a HEAD over HTTP).
bool input_exists(const std::filesystem::path& path);
// The content hashes recorded for a leaf: those of the record at `expected` when given (which must
// then exist), else those of the leaf's stats sidecar when it exists; nullopt when there is none.
std::optional<ragged::ContentHashes> recorded_hashes(const std::filesystem::path& leaf,
                                                     const std::optional<std::string>& expected = std::nullopt);

// Words (morton, toc) are decimal strings in JSON.
std::string word_text(std::uint64_t word);

}  // namespace tessera::cli::ragged_cli
