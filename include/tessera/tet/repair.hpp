// `repair` (spec tet.md §2.4): plans derived from a verify report, and the one in-place repair,
// `footer_invalid` (truncate at the payload region end and clear the history footer flag).
// Repairs rewrite the file atomically (temp file + rename) and only ever apply codes that verify
// recommended for the file, so a valid footer is never stripped (§7.2 A4).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/tet/verify.hpp"

namespace tessera::tet {

// One planned action per recommendation of the verify report.
struct RepairAction {
  std::string code;
  bool repairable = false;
  // The fix summary (or the message); repairable codes append ` — try: {dry-run command}`.
  std::string summary;
};

struct RepairPlan {
  std::string path;
  std::vector<RepairAction> actions;
};

RepairPlan plan_repairs(const std::string& path, const VerifyReport& report);

struct RepairActionResult {
  std::string code;
  bool applied = false;
  bool dry_run = false;
  std::string message;
};

struct RepairReport {
  std::string path;
  bool dry_run = false;
  std::vector<RepairActionResult> actions;
  std::optional<bool> verify_after_ok;  // quick verify after a real apply; nullopt for dry runs
};

struct RepairOptions {
  std::vector<std::string> apply;  // codes, applied in this order
  bool dry_run = false;
};

// `repair PATH --apply CODE…`: verifies `path` (quick), then handles each code in order: a
// repairable code the plan contains is applied (or described, with dry_run); any other code is
// reported as not applied. Re-verifies after a real apply. Throws IoError when the file cannot be
// read or rewritten, FormatError when a planned repair finds the structure unreadable.
RepairReport repair_file(const std::string& path, const RepairOptions& options);

// `verify --repair`: applies every repairable action of the plan derived from `report`.
RepairReport repair_from_report(const std::string& path, const VerifyReport& report, bool dry_run = false);

// Renderings: JSON pretty without a trailing newline; text lines end with '\n'.
std::string render_plan_text(const RepairPlan& plan);
std::string render_plan_json(const RepairPlan& plan);
std::string render_repair_text(const RepairReport& report);
std::string render_repair_json(const RepairReport& report);

}  // namespace tessera::tet
