// `tessera ragged verify STORE` (and `tessera verify STORE`): spec zagg-ragged.md §8.6 — every
// node's metadata, every shard index and chunk, ragged gates and companion alignment, `morton`
// placement, the stamp and coverage envelope, then the §7 hashes against the leaf's stats
// sidecar when one exists. On a hive root, every leaf the walk finds, each on its own. JSON by
// default; `--text` prints one line per failure. Exit 1 when anything fails.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tessera/io/publish.hpp"
#include "ragged_common.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/content_hash.hpp"
#include "tessera/ragged/hive_walk.hpp"
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
  const auto recorded = ragged_cli::recorded_hashes(t.root);
  if (!recorded) return std::nullopt;  // nothing recorded: verify checks the structure only
  return ragged::verify_hashes(ragged::hash_tree(*t.store), recorded);
}

// One leaf (or flat store, or column): its structure, then its hashes when the structure holds.
struct LeafOutcome {
  std::string path;  // as given, or the leaf's location below a hive root
  ragged::StoreVerifyReport report;
  bool hash_checked = false;
  std::optional<ragged::HashVerification> hashes;
};

LeafOutcome verify_leaf(const ragged_cli::Target& t, std::string path) {
  LeafOutcome o{std::move(path), ragged::verify_store(*t.store), false, std::nullopt};
  // Content hashes are computed only over a leaf whose structure verified: a damaged leaf (an
  // array whose zarr.json declares 2^62 elements) would otherwise be walked to its declared end.
  o.hash_checked = o.report.ok();
  if (o.hash_checked) o.hashes = verify_sidecar_hashes(t);
  if (o.hashes && o.hashes->outcome != ragged::HashVerification::Outcome::Ok)
    o.report.failures.push_back({"stats sidecar", "hashes",
                                 "content hashes " + std::string(ragged::name_of(o.hashes->outcome)) + " against " +
                                     ragged_cli::stats_sidecar_of(t.root).filename().string()});
  return o;
}

// Every leaf the walk finds below a hive root, each verified on its own: a leaf that cannot even
// be opened is one failure of that leaf, and the walk goes on.
std::vector<LeafOutcome> verify_hive(const ragged_cli::Target& hive) {
  std::vector<LeafOutcome> outcomes;
  for (const auto& leaf : ragged::hive::find_leaves(*hive.store)) {
    const std::string location = ragged_cli::leaf_location(hive, leaf.path);
    try {
      outcomes.push_back(verify_leaf(ragged_cli::open_target(location, std::nullopt), location));
    } catch (const Error& e) {
      LeafOutcome failed{location, {}, false, std::nullopt};
      failed.report.failures.push_back({"zarr.json", "metadata", e.what()});
      outcomes.push_back(std::move(failed));
    }
  }
  if (outcomes.empty()) throw UsageError(hive.given + ": the hive has no leaf (no *.zarr below its base cells)");
  return outcomes;
}

std::string counts_text(const ragged::StoreVerifyReport& r) {
  return std::to_string(r.arrays) + " arrays, " + std::to_string(r.objects) + " objects, " + std::to_string(r.chunks) +
         " chunks, " + std::to_string(r.failures.size()) + " failures";
}

// `FAIL {object}: {rule}: {message}` per failure; below a hive root the object is prefixed with
// the leaf's location so each line names its file.
std::string failure_lines(const LeafOutcome& o, const std::string& prefix) {
  std::string out;
  for (const auto& f : o.report.failures) out += "FAIL " + prefix + f.object + ": " + f.rule + ": " + f.message + "\n";
  return out;
}

void write_leaf(JsonWriter& w, const LeafOutcome& o) {
  const auto& report = o.report;
  w.begin_object();
  w.key("path").value(o.path);
  w.key("ok").value(report.ok());
  w.key("checked").begin_object();
  w.key("nodes").value(report.nodes);
  w.key("arrays").value(report.arrays);
  w.key("objects").value(report.objects);
  w.key("chunks").value(report.chunks);
  w.key("ragged_fields").value(report.ragged_fields);
  w.key("populated_cells").value(report.populated_cells);
  w.key("hashes");
  if (!o.hash_checked) w.value("not checked");
  else o.hashes ? w.value(ragged::name_of(o.hashes->outcome)) : w.value("unrecorded");
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
}

int print_hive(const std::string& given, const std::vector<LeafOutcome>& leaves, bool text) {
  std::size_t failed = 0;
  for (const auto& o : leaves) failed += o.report.ok() ? 0 : 1;
  if (text) {
    std::string out;
    for (const auto& o : leaves) out += failure_lines(o, o.path + "/");
    out += std::string(failed == 0 ? "ok" : "failed") + ": " + given + " (" + std::to_string(leaves.size()) +
           " leaves, " + std::to_string(failed) + " failed)\n";
    write_stream(stdout, out);
  } else {
    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      w.key("path").value(given);
      w.key("kind").value("hive");
      w.key("ok").value(failed == 0);
      w.key("failed").value(static_cast<std::uint64_t>(failed));
      w.key("leaves").begin_array();
      for (const auto& o : leaves) write_leaf(w, o);
      w.end_array();
      w.end_object();
    });
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

void register_ragged_verify(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* cmd = ragged.add_subcommand(
      "verify", "Check every node, chunk, gate, morton word and the coverage of a store (every leaf of a hive root)");
  ragged_cli::add_store_arguments(*cmd, a->store, a->shard);
  cmd->add_flag("--text", a->text, "one line per failure and a summary line instead of JSON");
  cmd->callback([a, &rc] {
    // A bucket hive with a write lock: its leaves may be mid-write or left by a killed writer.
    if (const auto note = io::interrupted_write_note(a->store)) write_stream(stderr, "warning: " + *note + "\n");
    const ragged_cli::Target t = ragged_cli::open_target(a->store, a->shard);
    if (t.hive_root) {
      rc = print_hive(a->store, verify_hive(t), a->text);
      return;
    }
    const LeafOutcome o = verify_leaf(t, a->store);
    rc = o.report.ok() ? 0 : 1;
    if (a->text) {
      write_stream(stdout, failure_lines(o, "") + (o.report.ok() ? "ok" : "failed") + ": " + a->store + " (" +
                               counts_text(o.report) + ")\n");
      return;
    }
    ragged_cli::print_json([&](JsonWriter& w) { write_leaf(w, o); });
  });
}

}  // namespace tessera::cli
