// `tessera ragged verify STORE` (and `tessera verify STORE`): spec zagg-ragged.md §8.6 — every
// node's metadata, every shard index and chunk, ragged gates and companion alignment, `morton`
// placement, the stamp and coverage envelope, then the §7 hashes against the leaf's stats
// sidecar when one exists. JSON by default; `--text` prints one line per failure. Exit 1 when
// anything fails.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/verify.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using codec::json::JsonWriter;

struct VerifyArgs {
  std::string store;
  std::optional<std::string> shard;
  bool text = false;
};

// The §7 hashes against the stats sidecar beside the leaf; nothing when there is none.
std::optional<ragged::HashVerification> verify_sidecar_hashes(const ragged_cli::Target& t) {
  const fs::path sidecar = ragged_cli::stats_sidecar_of(t.root);
  if (!ragged_cli::input_exists(sidecar)) return std::nullopt;
  const auto recorded = ragged::parse_content_hashes(ragged_cli::read_json_file(sidecar));
  if (!recorded) return std::nullopt;
  return ragged::verify_hashes(ragged::hash_tree(*t.store), recorded);
}

}  // namespace

void register_ragged_verify(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* cmd = ragged.add_subcommand("verify", "Check every node, chunk, gate, morton word and the coverage of a store");
  ragged_cli::add_store_arguments(*cmd, a->store, a->shard);
  cmd->add_flag("--text", a->text, "one line per failure and a summary line instead of JSON");
  cmd->callback([a, &rc] {
    const ragged_cli::Target t = ragged_cli::open_leaf(a->store, a->shard);
    ragged::StoreVerifyReport report = ragged::verify_store(*t.store);
    // Content hashes are computed only over a leaf whose structure verified: a damaged leaf (an
    // array whose zarr.json declares 2^62 elements) would otherwise be walked to its declared end.
    const bool hash_checked = report.ok();
    const auto hashes = hash_checked ? verify_sidecar_hashes(t) : std::nullopt;
    if (hashes && hashes->outcome != ragged::HashVerification::Outcome::Ok)
      report.failures.push_back({"stats sidecar", "hashes",
                                 "content hashes " + std::string(ragged::name_of(hashes->outcome)) + " against " +
                                     ragged_cli::stats_sidecar_of(t.root).filename().string()});
    rc = report.ok() ? 0 : 1;
    if (a->text) {
      std::string out;
      for (const auto& f : report.failures) out += "FAIL " + f.object + ": " + f.rule + ": " + f.message + "\n";
      out += std::string(report.ok() ? "ok" : "failed") + ": " + a->store + " (" + std::to_string(report.arrays) +
             " arrays, " + std::to_string(report.objects) + " objects, " + std::to_string(report.chunks) + " chunks, " +
             std::to_string(report.failures.size()) + " failures)\n";
      write_stream(stdout, out);
      return;
    }
    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      w.key("path").value(a->store);
      w.key("ok").value(report.ok());
      w.key("checked").begin_object();
      w.key("nodes").value(report.nodes);
      w.key("arrays").value(report.arrays);
      w.key("objects").value(report.objects);
      w.key("chunks").value(report.chunks);
      w.key("ragged_fields").value(report.ragged_fields);
      w.key("populated_cells").value(report.populated_cells);
      w.key("hashes");
      if (!hash_checked) w.value("not checked");
      else hashes ? w.value(ragged::name_of(hashes->outcome)) : w.value("unrecorded");
      w.end_object();
      w.key("failures").begin_array();
      for (const auto& f : report.failures) {
        w.begin_object();
        w.key("object").value(f.object);
        w.key("rule").value(f.rule);
        w.key("message").value(f.message);
        w.end_object();
      }
      w.end_array();
      w.end_object();
    });
  });
}

}  // namespace tessera::cli
