// `tessera tet verify PATH` and `tessera tet repair PATH` (spec tet.md §2, §6.3). A failed
// verification prints its report on stdout and `verification failed` on stderr (exit 1); a
// repair whose re-verification fails says so on stderr (exit 1). Neither message has the
// `error:` prefix of runtime errors.
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tessera/core/text.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"
#include "tessera/tet/repair.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/verify.hpp"

namespace tessera::cli {
namespace {

struct VerifyArgs {
  std::string path;
  bool json = false;
  bool quiet = false;
  bool deep = false;
  bool repair = false;
};

struct RepairArgs {
  std::string path;
  bool json = false;
  bool dry_run = false;
  std::vector<std::string> apply;
};

tet::VerifyReport verify_path(const std::string& path, bool deep) {
  tet::VerifyOptions options;
  options.deep_decode = deep;
  // Prefetching the structure and fetching the chunks ahead matter for a remote file.
  const auto source = tet::with_metadata_prefetched(io::open_source(path));
  return tet::verify(*source, options);
}

void register_repair(CLI::App& tet, int& rc) {
  auto a = std::make_shared<RepairArgs>();
  CLI::App* cmd = tet.add_subcommand("repair", "Plan or apply in-place repairs of a .tet file");
  cmd->add_option("PATH", a->path, ".tet file")->required();
  cmd->add_flag("--json", a->json, "Pretty JSON");
  // An unknown code is a malformed command line (exit 2), not a repair that did nothing.
  const CLI::Validator known_code(
      [](std::string& code) -> std::string {
        if (tet::is_recommendation_code(code)) return {};
        return "unknown repair code '" + printable_text(code) + "' (verify's codes: " + tet::recommendation_codes() +
               ")";
      },
      "CODE");
  cmd->add_option("--apply", a->apply, "Repair code to apply (repeatable); without it, print the plan")
      ->allow_extra_args(false)
      ->check(known_code);
  cmd->add_flag("--dry-run", a->dry_run,
                "With --apply: describe the repair without writing (a plan alone never writes)");

  cmd->callback([a, &rc] {
    rc = 0;
    (void)io::local_output_path(a->path);  // repairs write in place: local files only
    if (a->apply.empty()) {
      const tet::RepairPlan plan = tet::plan_repairs(a->path, verify_path(a->path, false));
      write_stream(stdout, a->json ? tet::render_plan_json(plan) : tet::render_plan_text(plan));
      return;
    }
    tet::RepairOptions options;
    options.apply = a->apply;
    options.dry_run = a->dry_run;
    const tet::RepairReport report = tet::repair_file(a->path, options);
    write_stream(stdout, a->json ? tet::render_repair_json(report) : tet::render_repair_text(report));
    if (report.verify_after_ok == false) {
      write_stream(stderr, "repair finished but verification still failed\n");
      rc = 1;
    }
  });
}

}  // namespace

void add_tet_verify_command(CLI::App& cmd, int& rc) {
  auto a = std::make_shared<VerifyArgs>();
  cmd.add_option("PATH", a->path, ".tet file")->required();
  CLI::Option* json = cmd.add_flag("--json", a->json, "Pretty JSON report");
  cmd.add_flag("-q,--quiet", a->quiet, "One summary line")->excludes(json);
  cmd.add_flag("--deep", a->deep, "Decode-check every chunk (default: the first 128)");
  cmd.add_flag("--repair", a->repair, "On failure, apply the repairable fixes and verify again");

  cmd.callback([a, &rc] {
    tet::VerifyReport report = verify_path(a->path, a->deep);
    if (a->repair && !report.ok) {
      (void)io::local_output_path(a->path);
      const tet::RepairReport repaired = tet::repair_from_report(a->path, report);
      // The reference prints the repair text with one more newline (eprintln!); kept.
      if (!a->quiet && !a->json) write_stream(stderr, tet::render_repair_text(repaired) + "\n");
      report = verify_path(a->path, a->deep);
    }
    write_stream(stdout, a->json    ? tet::render_verify_json(report)
                         : a->quiet ? tet::render_verify_quiet(report)
                                    : tet::render_verify_text(report));
    rc = report.ok ? 0 : 1;
    if (!report.ok) write_stream(stderr, "verification failed\n");
  });
}

void register_tet_verify_repair(CLI::App& tet, int& rc) {
  CLI::App* cmd = tet.add_subcommand("verify", "Check a .tet file and recommend fixes");
  add_tet_verify_command(*cmd, rc);
  register_repair(tet, rc);
}

}  // namespace tessera::cli
