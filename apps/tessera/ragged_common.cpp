#include "ragged_common.hpp"

#include <cstdio>
#include <vector>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::cli::ragged_cli {

namespace fs = std::filesystem;
using codec::json::JsonWriter;

namespace {

Target open_remote_target(const std::string& store, const std::optional<std::string>& shard) {
  std::string base = store;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const auto root_store = io::open_store(base);
  const bool has_manifest = root_store->exists(std::string(ragged::hive::kManifestKey));
  Target target;
  target.given = store;
  if (has_manifest) target.manifest = ragged::hive::Manifest::read(*root_store);
  if (shard) {
    if (!has_manifest) throw UsageError(store + ": --shard needs a hive root (a prefix holding morton_hive.json)");
    const std::string leaf = ragged::hive::leaf_path(*shard, target.manifest->path_grouping);
    if (!root_store->exists(leaf + "/zarr.json"))
      throw IoError(store + ": the hive has no leaf for shard " + *shard + " (expected " + leaf + ")", store);
    target.root = base + "/" + leaf;
    target.shard = ragged::morton::parse_decimal(*shard);
  } else {
    target.root = base;
    target.hive_root = has_manifest;
    target.shard = ragged::hive::shard_of_basename(fs::path(base).filename().string());
  }
  target.store = io::open_store(target.root.string());
  return target;
}

}  // namespace

Target open_target(const std::string& store, const std::optional<std::string>& shard) {
  if (io::is_remote_uri(store)) return open_remote_target(store, shard);
  const fs::path path(store);
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw IoError(store + ": not a directory (a ragged STORE is a hive root, a leaf or a flat store)", store);
  const bool has_manifest = fs::exists(path / ragged::hive::kManifestKey, ec);

  Target target;
  target.given = store;
  if (has_manifest) {
    const io::DirectoryStore root_store(store);
    target.manifest = ragged::hive::Manifest::read(root_store);
  }
  if (shard) {
    if (!has_manifest) throw UsageError(store + ": --shard needs a hive root (a directory holding morton_hive.json)");
    const std::string leaf = ragged::hive::leaf_path(*shard, target.manifest->path_grouping);
    target.root = path / leaf;
    if (!fs::is_directory(target.root, ec))
      throw IoError(store + ": the hive has no leaf for shard " + *shard + " (expected " + leaf + ")", store);
    target.shard = ragged::morton::parse_decimal(*shard);
  } else {
    target.root = path;
    target.hive_root = has_manifest;
    target.shard = ragged::hive::shard_of_basename(path.filename().string());
  }
  target.store = std::make_unique<io::DirectoryStore>(target.root.string());
  return target;
}

Target open_leaf(const std::string& store, const std::optional<std::string>& shard) {
  Target target = open_target(store, shard);
  if (target.hive_root)
    throw UsageError(store + ": is a hive root; choose a leaf with --shard ID (see `tessera ragged info " + store +
                     " --list-leaves`)");
  return target;
}

std::string leaf_location(const Target& hive, const std::string& leaf_key) {
  std::string root = hive.root.string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root + "/" + leaf_key;
}

namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

std::string resolve_field(const Target& target, const std::string& field, const std::string& field_name) {
  if (!field.empty() && !field_name.empty()) throw UsageError("give FIELD or --field NAME, not both");
  if (!field.empty()) return field;
  if (field_name.empty()) throw UsageError("missing FIELD (e.g. 6/h_tdigest) or --field NAME");
  if (target.manifest) return std::to_string(target.manifest->cell_order) + "/" + field_name;
  std::vector<std::string> found;
  for (const auto& group : target.store->list_dir("").prefixes)
    if (all_digits(group) && target.store->exists(group + "/" + field_name + "/zarr.json")) found.push_back(group);
  if (found.size() != 1)
    throw UsageError(
        target.given + ": --field " + field_name + " names " +
        (found.empty() ? std::string("no array") : "arrays in " + std::to_string(found.size()) + " groups") +
        "; give FIELD as GROUP/NAME");
  return found[0] + "/" + field_name;
}

void add_store_arguments(CLI::App& cmd, std::string& store, std::optional<std::string>& shard, const char* name) {
  cmd.add_option(name, store, "hive root (with --shard), leaf, flat store or column")->required();
  cmd.add_option("--shard", shard, "shard decimal id: use that shard's leaf of the hive root");
}

void add_field_arguments(CLI::App& cmd, std::string& field, std::string& field_name) {
  cmd.add_option("FIELD", field, "array path inside the store, e.g. 6/h_tdigest");
  cmd.add_option("--field", field_name, "field name; the cell-order group is implied");
}

codec::json::DumpOptions json_layout() { return codec::json::DumpOptions::tet_pretty(); }

void print_json(const std::function<void(JsonWriter&)>& write) {
  std::string out;
  JsonWriter writer(out, json_layout());
  write(writer);
  out += '\n';
  write_stream(stdout, out);
}

void print_json(const codec::json::Json& tree) {
  print_json([&](JsonWriter& w) { w.value(tree); });
}

fs::path stats_sidecar_of(const fs::path& leaf) {
  std::string base = leaf.filename().string();
  if (base.size() > 5 && base.ends_with(".zarr")) base.resize(base.size() - 5);
  if (base.ends_with(".pyramid")) return leaf.parent_path() / (base + ".stats.json");
  const auto underscore = base.find('_');
  if (underscore != std::string::npos) return leaf.parent_path() / ("stats_" + base.substr(underscore + 1) + ".json");
  return leaf.parent_path() / "stats.json";
}

bool input_exists(const fs::path& path) {
  if (io::is_remote_uri(path.string())) {
    const auto slash = path.string().rfind('/');
    return io::open_store(path.string().substr(0, slash))->exists(path.string().substr(slash + 1));
  }
  std::error_code ec;
  return fs::exists(path, ec);
}

codec::json::Json read_json_file(const fs::path& path) {
  const auto src = io::open_source(path.string(), {.mode = io::OpenMode::Pread});
  std::string text(src->size(), '\0');
  src->read_at(0, std::as_writable_bytes(std::span(text)));
  return codec::json::parse_strict(text, path.string());
}

std::optional<ragged::ContentHashes> recorded_hashes(const fs::path& leaf, const std::optional<std::string>& expected) {
  const fs::path record = expected ? fs::path(*expected) : stats_sidecar_of(leaf);
  if (!expected && !input_exists(record)) return std::nullopt;
  return ragged::parse_content_hashes(read_json_file(record));
}

std::string word_text(std::uint64_t word) { return std::to_string(word); }

}  // namespace tessera::cli::ragged_cli
