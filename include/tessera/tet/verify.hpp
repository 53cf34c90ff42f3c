// `verify` (spec tet.md §2.1–§2.3): a read-only health check of a `.tet` file. It runs the
// structural pass (layout.hpp) as its `parse` check, reports tessera's semantic rules (reader.hpp)
// under the reference's named checks, decode-checks chunk payloads, checks the footer and the
// metadata limits, and derives recommendations from the failed findings. The report renders as
// pretty JSON, text or one quiet line, byte for byte as the reference CLI prints them.
//
// A malformed file is never an exception here: it is a report with `ok == false`. Only I/O
// failures of the source (and allocation failures) are thrown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::tet {

enum class Severity : std::uint8_t { Info, Warning, Error };

// "info" | "warning" | "error"
std::string_view severity_name(Severity severity) noexcept;

// One check result. Warnings carry `ok == true`.
struct Finding {
  std::string check;
  Severity severity = Severity::Info;
  bool ok = true;
  std::optional<std::string> detail;
};

struct FixHint {
  std::string summary;
  std::optional<std::string> command;
};

struct Recommendation {
  std::string code;
  std::string message;
  std::optional<FixHint> fix;
};

// Present only when verification ran to the end (§2.1).
struct VerifySummary {
  std::uint32_t layout_version = 0;
  std::uint64_t dataset_count = 0;
  std::uint64_t chunk_count = 0;
  std::uint64_t history_events = 0;
  bool has_metadata = false;
  bool history_footer = false;
  bool deep_chunk_decode = false;  // every chunk was decode-checked
};

struct VerifyReport {
  bool ok = false;
  std::optional<std::string> path;
  std::uint64_t file_len = 0;
  std::vector<Finding> findings;
  std::vector<Recommendation> recommendations;
  std::optional<VerifySummary> summary;
};

struct VerifyOptions {
  // Decode-check every chunk; by default only the first kQuickDecodeChunks are checked.
  bool deep_decode = false;
  // Threads for the decode check (0 = all available, 1 = the calling thread only).
  unsigned threads = 0;
};

inline constexpr std::uint64_t kQuickDecodeChunks = 128;

// The command prefix used in fix hints and repair suggestions (§7.2 A3).
inline constexpr std::string_view kTetCommand = "tessera tet";

// Verifies the bytes of `source`; `report.path` is `source.name()`.
VerifyReport verify(const io::ByteSource& source, const VerifyOptions& options = {});

// One recommendation per distinct code, in finding order, from the findings with `ok == false`
// (§2.2). `path`, when known, completes the repair command of repairable codes.
std::vector<Recommendation> recommendations_for(const std::vector<Finding>& findings,
                                                const std::optional<std::string>& path);

// Whether `repair --apply CODE` has an in-place implementation (only `footer_invalid`).
bool is_repairable_code(std::string_view code) noexcept;
// Whether verify can recommend CODE at all (footer_invalid, invalid_layout, payload_out_of_bounds,
// bad_dataset_id, chunk_decode_failed, dataset_count_mismatch); `repair --apply` takes only these.
bool is_recommendation_code(std::string_view code) noexcept;
// The codes of is_recommendation_code, comma-separated, for messages.
std::string recommendation_codes();
// `tessera tet repair {path} --apply {code} --dry-run`: the suggested first step of a repair.
std::string repair_dry_run_command(std::string_view path, std::string_view code);

// Renderings of §2.3: pretty JSON and the quiet line have no trailing newline; every text line
// ends with '\n'.
std::string render_verify_json(const VerifyReport& report);
std::string render_verify_text(const VerifyReport& report);
std::string render_verify_quiet(const VerifyReport& report);

}  // namespace tessera::tet
