// `tessera tet synth OUT.tet --dataset SPEC [--dataset SPEC …] [--seed N] [--budget-bps B]
// [--budget-bytes N]` (spec tet.md §6.9): writes a seeded synthetic file through the library
// writer and prints one summary line. Malformed specs and duplicate names are usage errors
// (exit 2), detected before anything is written.
#include <fmt/core.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "remote_output.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/synth.hpp"

namespace tessera::cli {
namespace {

struct SynthArgs {
  std::string out;
  std::vector<std::string> specs;
  std::uint64_t seed = 0;
  std::uint16_t budget_bps = 0;
  std::uint32_t budget_bytes = 0;
};

std::string plural(std::uint64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

void register_tet_synth(CLI::App& tet, int& rc) {
  auto args = std::make_shared<SynthArgs>();
  CLI::App* cmd = tet.add_subcommand("synth", "Write a seeded synthetic .tet file");
  cmd->add_option("OUT", args->out, "Output .tet file (written atomically)")->required();
  const CLI::Validator spec_check(
      [](std::string& value) -> std::string {
        try {
          (void)tet::parse_synth_spec(value);
          return {};
        } catch (const Error& e) {
          return e.what();
        }
      },
      "SPEC");
  cmd->add_option("--dataset", args->specs,
                  "NAME:DTYPE:SHAPE:CHUNKS[:CODEC[:LEVEL]], e.g. temp:f32:512x1024x1024:16x256x256:zstd:3 "
                  "(repeatable)")
      ->required()
      ->allow_extra_args(false)
      ->check(spec_check);
  cmd->add_option("--seed", args->seed, "Seed of the generators (default 0)");
  cmd->add_option("--budget-bps", args->budget_bps, "File memory budget in basis points of RAM (TIDX; 0 = default)")
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--budget-bytes", args->budget_bytes, "File memory budget in bytes (TIDX; 0 = use --budget-bps)");

  cmd->callback([args, &rc] {
    tet::SynthOptions options;
    std::set<std::string> names;
    for (const std::string& text : args->specs) {
      tet::DatasetSpec spec = tet::parse_synth_spec(text);
      if (!names.insert(spec.name).second)
        throw CLI::ValidationError("--dataset", "duplicate dataset name \"" + spec.name + "\"");
      options.datasets.push_back(std::move(spec));
    }
    options.seed = args->seed;
    options.memory_budget_percent_bps = args->budget_bps;
    options.memory_budget_bytes = args->budget_bytes;
    io::OutputTarget target(args->out, io::OutputTarget::Shape::File);
    const tet::SynthSummary summary = tet::synth_write(target.local_path(), std::move(options));
    publish_output(target);
    fmt::print("wrote {}: {}, {}, {}\n", args->out, plural(summary.datasets, "dataset"),
               plural(summary.chunks, "chunk"), plural(summary.bytes, "byte"));
    rc = 0;
  });
}

}  // namespace tessera::cli
