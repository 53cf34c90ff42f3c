// `tessera ragged hashes PATH [--verify] [--expected FILE]` (spec zagg-ragged.md §8.5): the §7
// content hashes of a leaf or a column, and their verification against the leaf's stats sidecar
// or a given record. Exit 0 only when verification says `ok`.
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

}  // namespace

void register_ragged_hashes(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<HashesArgs>();
  CLI::App* cmd = ragged.add_subcommand("hashes", "Content hashes of a leaf or column (spec §7), optionally verified");
  ragged_cli::add_store_arguments(*cmd, a->path, a->shard, "PATH");
  CLI::Option* verify = cmd->add_flag("--verify", a->verify, "compare with the stats sidecar (or --expected)");
  cmd->add_option("--expected", a->expected, "a stats record or *.expected.json carrying content_hashes")
      ->needs(verify);

  cmd->callback([a, &rc] {
    const ragged_cli::Target target = ragged_cli::open_leaf(a->path, a->shard);
    const ragged::ContentHashes hashes = ragged::hash_tree(*target.store);
    if (!a->verify) {
      ragged_cli::print_json(ragged::to_json(hashes));
      rc = 0;
      return;
    }
    std::optional<ragged::ContentHashes> recorded;
    const fs::path record = a->expected ? fs::path(*a->expected) : ragged_cli::stats_sidecar_of(target.root);
    if (a->expected || ragged_cli::input_exists(record)) recorded = ragged::parse_content_hashes(ragged_cli::read_json_file(record));
    const ragged::HashVerification result = ragged::verify_hashes(hashes, recorded);
    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      w.key("outcome").value(ragged::name_of(result.outcome));
      write_names(w, "mismatch", result.mismatch);
      write_names(w, "extra", result.extra);
      write_names(w, "missing", result.missing);
      w.end_object();
    });
    rc = result.outcome == ragged::HashVerification::Outcome::Ok ? 0 : 1;
  });
}

}  // namespace tessera::cli
