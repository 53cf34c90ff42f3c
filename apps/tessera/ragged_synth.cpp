// `tessera ragged synth DIR [options]` (tessera addition, like `tet synth`): writes a synthetic
// morton-hive store with one zagg-ragged leaf of t-digests, for demos and benchmarks. Prints a
// JSON report (leaf path, shard, cells, populated cells, centroids).
#include <filesystem>
#include <memory>
#include <string>

#include "commands.hpp"
#include "remote_output.hpp"
#include "ragged_common.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/synth.hpp"

namespace tessera::cli {

void register_ragged_synth(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<ragged::SynthLeafOptions>();
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd =
      ragged.add_subcommand("synth", "Write a synthetic hive store with one leaf of t-digests (demos, benchmarks)");
  cmd->add_option("DIR", *dir, "hive root to create (or add the leaf to)")->required();
  cmd->add_option("--cell-order", a->cell_order, "order of the cells (default 19)");
  cmd->add_option("--shard-order", a->shard_order, "order of the shard (default 9)");
  cmd->add_option("--chunk-order", a->chunk_order, "order of the inner chunks (default 13: 4096 cells)");
  cmd->add_option("--shard", a->shard_decimal, "shard decimal id (default 4331421321)");
  cmd->add_option("--populated", a->populated_fraction, "mean fraction of cells with a digest (default 0.2)");
  cmd->add_option("--min-centroids", a->min_centroids, "fewest centroids per digest (default 10)");
  cmd->add_option("--max-centroids", a->max_centroids, "most centroids per digest (default 500)");
  cmd->add_option("--field", a->field, "field name (default h_tdigest)");
  cmd->add_option("--seed", a->seed, "generator seed (default 1)");
  cmd->callback([a, dir, &rc] {
    io::OutputTarget target(*dir, io::OutputTarget::Shape::Directory);
    target.check_writable({});
    const std::optional<std::string> hive_manifest = stage_existing_hive_manifest(target);
    std::filesystem::create_directories(target.local_path());
    io::DirectoryStore store(target.local_path());
    const ragged::SynthLeafReport report = ragged::synth_hive(store, *a);
    drop_unchanged(target, "morton_hive.json", hive_manifest);
    publish_output(target, zarr_commit_plan(target.local_path(), true));
    ragged_cli::print_json([&](codec::json::JsonWriter& w) {
      w.begin_object();
      w.key("hive").value(*dir);
      w.key("leaf").value(report.leaf_key);
      w.key("shard").value(ragged::morton::to_decimal(report.shard));
      w.key("field").value(std::to_string(a->cell_order) + "/" + a->field);
      w.key("cells").value(report.cells);
      w.key("populated").value(report.populated);
      w.key("centroids").value(report.centroids);
      w.end_object();
    });
    rc = 0;
  });
}

}  // namespace tessera::cli
