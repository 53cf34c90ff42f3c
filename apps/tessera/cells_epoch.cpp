// `tessera cells epoch PATH --batch-size N [...]`: runs the training-loader path (spec
// deltacells.md §8.6) over a dataset and reports its throughput, so a user can check that the
// storage and CPU feed a training job fast enough before starting one. Batches are gathered and
// dropped; nothing is printed per batch.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/core.h>

#include "cells_commands.hpp"
#include "commands.hpp"
#include "tessera/cells/dataset.hpp"
#include "tessera/cells/epoch.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

struct EpochArgs {
  std::string path;
  std::uint64_t batch_size = 5000;
  std::uint64_t batches = 0;  // 0 = the whole epoch
  std::int64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t rank = 0, world_size = 1;
  std::string values = "float32";
  bool no_shuffle = false;
  bool drop_last = false;
  bool json = false;
};

void run_epoch(const EpochArgs& a) {
  if (a.values != "float32" && a.values != "int32")
    throw UsageError("--values must be float32 or int32, got \"" + a.values + "\"");
  auto ds = cells::Dataset::open(a.path);
  cells::EpochOptions o;
  o.shuffle = !a.no_shuffle;
  o.seed = a.seed;
  o.drop_last = a.drop_last;
  o.rank = a.rank;
  o.world_size = a.world_size;
  o.values = a.values == "int32" ? cells::Values::Int32 : cells::Values::Float32;
  cells::EpochIterator it(*ds, a.batch_size, o);
  it.set_epoch(a.epoch);
  cells::EpochBatch batch;
  std::uint64_t n_batches = 0, n_cells = 0, nnz = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while ((a.batches == 0 || n_batches < a.batches) && it.next(batch)) {
    ++n_batches;
    n_cells += batch.cells.size();
    nnz += batch.batch.nnz();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = seconds > 0 ? static_cast<double>(n_cells) / seconds : 0.0;
  if (a.json) {
    write_stream(stdout,
                 fmt::format("{{\"batches\":{},\"cells\":{},\"nnz\":{},\"seconds\":{},\"cells_per_second\":{}}}\n",
                             n_batches, n_cells, nnz, seconds, rate));
  } else {
    write_stream(stdout, fmt::format("{} {}, {} cells, {} nonzeros in {:.3f} s: {:.0f} cells/s\n", n_batches,
                                     n_batches == 1 ? "batch" : "batches", n_cells, nnz, seconds, rate));
  }
}

}  // namespace

void register_cells_epoch(CLI::App& cells, int& rc) {
  auto a = std::make_shared<EpochArgs>();
  CLI::App* cmd = cells.add_subcommand("epoch", "Run the epoch batch loader over a dataset and report its throughput");
  cmd->add_option("PATH", a->path, "dataset directory (local path, file://, http(s)://, s3:// or gs:// URI)")
      ->required();
  cmd->add_option("--batch-size", a->batch_size, "cells per batch (default 5000)")->check(integer_at_least(1));
  cmd->add_option("--batches", a->batches, "stop after this many batches (default: the whole epoch)");
  cmd->add_option("--seed", a->seed, "shuffle seed (default 0)");
  cmd->add_option("--epoch", a->epoch, "epoch number (default 0)");
  cmd->add_option("--rank", a->rank, "this rank (default 0)");
  cmd->add_option("--world-size", a->world_size, "ranks (default 1)");
  cmd->add_option("--values", a->values, "float32 (default) or int32");
  cmd->add_flag("--no-shuffle", a->no_shuffle, "visit tiles and cells in order");
  cmd->add_flag("--drop-last", a->drop_last, "drop a final short batch");
  cmd->add_flag("--json", a->json, "one JSON object instead of text");
  cmd->callback([a, &rc] {
    run_epoch(*a);
    rc = 0;
  });
}

}  // namespace tessera::cli
