// Repair plans, the `footer_invalid` repair and the repair reports (spec tet.md §2.4).
#include "tessera/tet/repair.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>

#include "tessera/codec/json.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/layout.hpp"

namespace tessera::tet {
namespace {

constexpr std::size_t kCopyBlock = std::size_t{1} << 20;
constexpr std::size_t kFlagsOffset = 12;  // superblock `flags`

// Where `footer_invalid` truncates. The index is parsed with the footer ignored first, so a file
// whose chunk structure is unreadable is never touched. With the flag set, the payload region
// end comes from the tail (§1.8); a tail that is missing, unusable, or would cut into the chunk
// payloads gives way to the end of the last payload span (or of the index).
std::uint64_t footer_repair_end(const io::ByteSource& src, const Layout& partial) {
  if (!partial.superblock.has_footer()) return src.size();
  const std::uint64_t index_end = payload_end_from_index(partial);
  const auto tail_end = payload_end_from_tail(src);
  const std::uint64_t end = tail_end && *tail_end >= index_end ? *tail_end : index_end;
  return std::max<std::uint64_t>(end, Superblock::kSize);
}

// Copies [0, end) of `src` to `path` atomically with flag bit 0 cleared, keeping the file mode.
void rewrite_without_footer(const io::ByteSource& src, const std::string& path, std::uint64_t end,
                            std::uint32_t flags) {
  struct stat st {};
  const bool have_mode = ::stat(path.c_str(), &st) == 0;
  io::AtomicFileSink sink(path);
  std::vector<std::byte> block;
  for (std::uint64_t pos = 0; pos < end;) {
    const std::uint64_t n = std::min<std::uint64_t>(kCopyBlock, end - pos);
    if (const std::byte* p = src.view(pos, n)) {
      sink.write({p, static_cast<std::size_t>(n)});
    } else {
      block.resize(static_cast<std::size_t>(n));
      src.read_at(pos, block);
      sink.write(block);
    }
    pos += n;
  }
  std::array<std::byte, 4> patched{};
  store_le<std::uint32_t>(patched.data(), flags & ~Superblock::kHistoryFooterFlag);
  sink.write_at(kFlagsOffset, patched);
  sink.commit();
  if (have_mode) ::chmod(path.c_str(), st.st_mode & 07777);
}

RepairActionResult strip_invalid_footer(const std::string& path, bool dry_run) {
  const auto src = io::open_file(path);
  const Layout partial = parse_layout(*src, /*read_footer=*/false);
  const std::uint64_t end = footer_repair_end(*src, partial);
  const std::string target = std::to_string(end) + " bytes";
  if (dry_run)
    return {"footer_invalid", false, true,
            "would truncate to " + target + " and clear history footer flag (from " + std::to_string(src->size()) +
                " bytes)"};
  rewrite_without_footer(*src, path, end, partial.superblock.flags);
  return {"footer_invalid", true, false, "truncated to " + target + " and cleared history footer flag"};
}

// The only repairable code today; the dispatch keeps the plan/apply logic code-agnostic.
RepairActionResult apply_code(const std::string& path, const std::string& code, bool dry_run) {
  if (code == "footer_invalid") return strip_invalid_footer(path, dry_run);
  return {code, false, dry_run, "no in-place repair for this code; re-convert or rewrite required"};
}

bool verify_ok(const std::string& path) { return verify(*io::open_file(path)).ok; }

}  // namespace

RepairPlan plan_repairs(const std::string& path, const VerifyReport& report) {
  RepairPlan plan{path, {}};
  for (const auto& rec : report.recommendations) {
    RepairAction action{rec.code, is_repairable_code(rec.code), rec.fix ? rec.fix->summary : rec.message};
    if (action.repairable) action.summary += " \u2014 try: " + repair_dry_run_command(path, rec.code);
    plan.actions.push_back(std::move(action));
  }
  return plan;
}

RepairReport repair_file(const std::string& path, const RepairOptions& options) {
  const RepairPlan plan = plan_repairs(path, verify(*io::open_file(path)));
  RepairReport report{path, options.dry_run, {}, std::nullopt};
  for (const auto& code : options.apply) {
    const bool planned =
        std::any_of(plan.actions.begin(), plan.actions.end(), [&](const RepairAction& a) { return a.code == code; });
    if (is_repairable_code(code) && !planned)
      report.actions.push_back(
          {code, false, options.dry_run, "not recommended by verify for this file; nothing to repair"});
    else report.actions.push_back(apply_code(path, code, options.dry_run));
  }
  if (!options.dry_run) report.verify_after_ok = verify_ok(path);
  return report;
}

RepairReport repair_from_report(const std::string& path, const VerifyReport& verify_report, bool dry_run) {
  RepairReport report{path, dry_run, {}, std::nullopt};
  for (const auto& action : plan_repairs(path, verify_report).actions)
    if (action.repairable) report.actions.push_back(apply_code(path, action.code, dry_run));
  if (!dry_run) report.verify_after_ok = verify_ok(path);
  return report;
}

std::string render_plan_text(const RepairPlan& plan) {
  std::string out = "file: " + plan.path + "\nrepair plan:\n";
  if (plan.actions.empty()) {
    out += "  (no recommendations \u2014 run " + std::string(kTetCommand) + " verify first or file is ok)\n";
    return out;
  }
  for (const auto& a : plan.actions)
    out +=
        std::string("  [") + (a.repairable ? "repairable" : "manual") + "] " + a.code + " \u2014 " + a.summary + "\n";
  out += "\nUse: " + std::string(kTetCommand) + " repair <path> --apply <code>\n";
  return out;
}

std::string render_plan_json(const RepairPlan& plan) {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::tet_pretty());
  w.begin_object();
  w.key("path").value(plan.path);
  w.key("actions").begin_array();
  for (const auto& a : plan.actions) {
    w.begin_object();
    w.key("code").value(a.code);
    w.key("repairable").value(a.repairable);
    w.key("summary").value(a.summary);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

std::string render_repair_text(const RepairReport& report) {
  std::string out = "file: " + report.path + "\n";
  out += report.dry_run ? "mode: dry-run\n" : "mode: apply\n";
  for (const auto& a : report.actions) {
    const char* status = a.applied ? "applied" : a.dry_run ? "planned" : "skipped";
    out += "  [" + a.code + "] " + status + ": " + a.message + "\n";
  }
  if (report.verify_after_ok) out += std::string("verify_after: ") + (*report.verify_after_ok ? "ok" : "failed") + "\n";
  return out;
}

std::string render_repair_json(const RepairReport& report) {
  std::string out;
  codec::json::JsonWriter w(out, codec::json::DumpOptions::tet_pretty());
  w.begin_object();
  w.key("path").value(report.path);
  w.key("dry_run").value(report.dry_run);
  w.key("actions").begin_array();
  for (const auto& a : report.actions) {
    w.begin_object();
    w.key("code").value(a.code);
    w.key("applied").value(a.applied);
    w.key("dry_run").value(a.dry_run);
    w.key("message").value(a.message);
    w.end_object();
  }
  w.end_array();
  w.key("verify_after_ok");
  if (report.verify_after_ok) w.value(*report.verify_after_ok);
  else w.value(nullptr);
  w.end_object();
  return out;
}

}  // namespace tessera::tet
