// `tessera ragged hashes PATH [--verify] [--expected FILE]` (spec zagg-ragged.md §8.5): the §7
// content hashes of a leaf or a column, and their verification against the leaf's stats sidecar
// or a given record; on a hive root, of every leaf the walk finds. Exit 0 only when verification
// says `ok`.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive_walk.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using codec::json::JsonWriter;

struct HashesArgs {
  std::string path;
  std::optional<std::string> shard, expected;
  bool verify = false;
};

void write_names(JsonWriter& w, const char* key, const std::vector<std::string>& names) {
  w.key(key).begin_array();
  for (const auto& n : names) w.value(n);
  w.end_array();
}

void write_verification(JsonWriter& w, const ragged::HashVerification& result) {
  w.key("outcome").value(ragged::name_of(result.outcome));
  write_names(w, "mismatch", result.mismatch);
  write_names(w, "extra", result.extra);
  write_names(w, "missing", result.missing);
}

// The hashes of one leaf checked against `record` (the sidecar beside it when not given).
ragged::HashVerification verify_leaf(const ragged_cli::Target& leaf, const std::optional<std::string>& expected) {
  return ragged::verify_hashes(ragged::hash_tree(*leaf.store), ragged_cli::recorded_hashes(leaf.root, expected));
}

// Every leaf of a hive root, each against its own sidecar; a leaf that cannot be hashed is
// reported with its error and the others still are. Exit 1 unless every leaf is `ok` (without
// --verify: unless every leaf could be hashed).
int hash_hive(const ragged_cli::Target& hive, bool verify) {
  const auto leaves = ragged::hive::find_leaves(*hive.store);
  if (leaves.empty()) throw UsageError(hive.given + ": the hive has no leaf (no *.zarr below its base cells)");
  bool all_ok = true;
  ragged_cli::print_json([&](JsonWriter& w) {
    w.begin_object();
    w.key("path").value(hive.given);
    w.key("leaves").begin_array();
    for (const auto& leaf : leaves) {
      const std::string location = ragged_cli::leaf_location(hive, leaf.path);
      w.begin_object();
      w.key("path").value(location);
      try {
        const ragged_cli::Target target = ragged_cli::open_target(location, std::nullopt);
        if (verify) {
          const auto result = verify_leaf(target, std::nullopt);
          all_ok = all_ok && result.outcome == ragged::HashVerification::Outcome::Ok;
          write_verification(w, result);
        } else {
          const auto hashes = ragged::to_json(ragged::hash_tree(*target.store));
          w.key("arrays").value(hashes.at("arrays"));
          w.key("combined").value(hashes.at("combined"));
        }
      } catch (const Error& e) {
        all_ok = false;
        if (verify) w.key("outcome").value("error");
        w.key("error").value(std::string(e.what()));
      }
      w.end_object();
    }
    w.end_array();
    if (verify) w.key("outcome").value(all_ok ? "ok" : "failed");
    w.end_object();
  });
  return all_ok ? 0 : 1;
}

}  // namespace

void register_ragged_hashes(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<HashesArgs>();
  CLI::App* cmd = ragged.add_subcommand(
      "hashes", "Content hashes of a leaf or column (spec §7), or of every leaf of a hive root, optionally verified");
  ragged_cli::add_store_arguments(*cmd, a->path, a->shard, "PATH");
  CLI::Option* verify = cmd->add_flag("--verify", a->verify, "compare with the stats sidecar (or --expected)");
  cmd->add_option("--expected", a->expected, "a stats record or *.expected.json carrying content_hashes")
      ->needs(verify);

  cmd->callback([a, &rc] {
    const ragged_cli::Target target = ragged_cli::open_target(a->path, a->shard);
    if (target.hive_root) {
      if (a->expected)
        throw CLI::ValidationError(
            "--expected",
            a->path + " is a hive root; a record holds one leaf's hashes, so give the leaf (or --shard ID)");
      rc = hash_hive(target, a->verify);
      return;
    }
    if (!a->verify) {
      ragged_cli::print_json(ragged::to_json(ragged::hash_tree(*target.store)));
      rc = 0;
      return;
    }
    const ragged::HashVerification result = verify_leaf(target, a->expected);
    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      write_verification(w, result);
      w.end_object();
    });
    rc = result.outcome == ragged::HashVerification::Outcome::Ok ? 0 : 1;
  });
}

}  // namespace tessera::cli
