// The checks of `verify` (spec tet.md §2.1) and the recommendations derived from them (§2.2).
// Findings keep the reference's order and texts; the semantic rules come from reader.cpp and the
// chunk decoding from the reader's decode path, so verify and open never disagree on a rule.
#include "tessera/tet/verify.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <string>
#include <unordered_set>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/layout.hpp"
#include "tessera/tet/read_ahead.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {
namespace {

Finding ok_finding(std::string check, std::optional<std::string> detail = std::nullopt) {
  return {std::move(check), Severity::Info, true, std::move(detail)};
}

Finding error_finding(std::string check, std::string detail) {
  return {std::move(check), Severity::Error, false, std::move(detail)};
}

Finding warning_finding(std::string check, std::string detail) {
  return {std::move(check), Severity::Warning, true, std::move(detail)};
}

// Completes a report that ends here (early on a fatal finding, or after the last check).
VerifyReport finish(VerifyReport report) {
  report.recommendations = recommendations_for(report.findings, report.path);
  report.ok = true;
  for (const auto& f : report.findings)
    if (!f.ok && f.severity == Severity::Error) report.ok = false;
  return report;
}

// One `dataset_tensor_bytes` finding per dataset. The semantic rules already pin every tile
// size, so the sum check of the reference can only fail if those rules change; it stays as the
// reference's last line of defence.
std::vector<Finding> dataset_findings(const Layout& L) {
  std::vector<std::uint64_t> chunks(L.datasets.size(), 0), raw_sum(L.datasets.size(), 0);
  for (const auto& e : L.entries) {
    ++chunks[e.dataset_id];
    raw_sum[e.dataset_id] = add_u64(raw_sum[e.dataset_id], e.raw_byte_len).value_or(UINT64_MAX);
  }
  std::vector<Finding> out;
  const auto violations = dataset_rule_violations(L);
  for (std::uint32_t id = 0; id < L.datasets.size(); ++id) {
    if (const auto& broken = violations[id]) {
      out.push_back(error_finding("dataset_tensor_bytes", *broken));
      continue;
    }
    const DatasetRecord& r = L.datasets[id];
    std::uint64_t logical = dtype_size(*dtype_from_tag(r.dtype_tag));
    for (auto extent : r.shape) logical *= extent;  // overflow excluded by the semantic rules
    const std::string prefix = dataset_label(id, r.name) + ": ";
    if (raw_sum[id] != logical) {
      out.push_back(error_finding("dataset_tensor_bytes", prefix + "sum(raw_byte_len)=" + std::to_string(raw_sum[id]) +
                                                              " != logical tensor " + std::to_string(logical)));
    } else {
      out.push_back(ok_finding("dataset_tensor_bytes",
                               prefix + std::to_string(chunks[id]) + " chunk(s), " + std::to_string(logical) + " B"));
    }
  }
  return out;
}

std::optional<Finding> duplicate_offset_finding(const std::vector<ChunkEntry>& entries) {
  std::unordered_set<std::uint64_t> seen;
  seen.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!seen.insert(entries[i].payload_offset).second)
      return error_finding("payload_offsets", "duplicate payload_offset at chunk index " + std::to_string(i));
  // Distinct offsets can still share bytes: two chunks would then decode from one payload.
  std::vector<std::size_t> by_offset(entries.size());
  for (std::size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = i;
  std::sort(by_offset.begin(), by_offset.end(),
            [&](std::size_t a, std::size_t b) { return entries[a].payload_offset < entries[b].payload_offset; });
  for (std::size_t k = 0; k + 1 < by_offset.size(); ++k) {
    const ChunkEntry& a = entries[by_offset[k]];
    const ChunkEntry& b = entries[by_offset[k + 1]];
    // Parse checked every span against the file, so the sum cannot wrap.
    if (a.payload_offset + a.stored_byte_len > b.payload_offset)
      return error_finding("payload_offsets",
                           "chunk " + std::to_string(by_offset[k]) + " payload [" + std::to_string(a.payload_offset) +
                               ", " + std::to_string(a.payload_offset + a.stored_byte_len) + ") overlaps chunk " +
                               std::to_string(by_offset[k + 1]) + " at " + std::to_string(b.payload_offset));
  }
  return std::nullopt;
}

// Names are how every reader finds a dataset; a second dataset of the same name is unreachable.
std::optional<Finding> duplicate_name_finding(const std::vector<DatasetRecord>& datasets) {
  std::unordered_set<std::string> seen;
  for (std::size_t id = 0; id < datasets.size(); ++id)
    if (!seen.insert(datasets[id].name).second)
      return error_finding("dataset_names", dataset_label(id, datasets[id].name) + ": the name of an earlier dataset");
  return std::nullopt;
}

std::optional<Finding> payload_order_finding(const std::vector<ChunkEntry>& entries) {
  for (std::size_t i = 0; i + 1 < entries.size(); ++i) {
    const auto end = add_u64(entries[i].payload_offset, entries[i].stored_byte_len);
    if (!end || *end != entries[i + 1].payload_offset)
      return warning_finding("payload_order",
                             "chunk payloads are not contiguous in index order (linear scan may not apply)");
  }
  return std::nullopt;
}

// Decodes entries [0, count) in parallel; the error of entry i (if any) lands in errors[i], so
// findings come out in index order whatever the schedule.
// `crcs` (the footer extension's chunk_crc32c, or null) are compared with the stored bytes first:
// a flipped bit a codec would still decode is caught there.
std::vector<std::optional<std::string>> decode_errors(const io::ByteSource& src, const std::vector<ChunkEntry>& entries,
                                                      const std::vector<std::uint32_t>* crcs, std::size_t count,
                                                      unsigned threads) {
  std::vector<std::optional<std::string>> errors(count);
  const auto in_file = [&](const ChunkEntry& e) {
    const auto end = add_u64(e.payload_offset, e.stored_byte_len);
    return end && *end <= src.size();
  };
  auto check = [&](std::size_t i) {
    const ChunkEntry& e = entries[i];
    if (!in_file(e)) {
      errors[i] = "chunk " + std::to_string(i) + ": payload slice out of file bounds";
      return;
    }
    // raw_byte_len comes from the file: check_chunk_payload streams large tiles instead of
    // allocating what the entry claims.
    try {
      check_chunk_payload(src, e, i, crcs != nullptr ? &(*crcs)[i] : nullptr);
    } catch (const FormatError& err) {
      errors[i] = err.what();
    }
  };
  // A remote file: its chunks are fetched ahead, many per request (tet/read_ahead.hpp), and
  // every thread takes the next chunk in order so the requests move with the checks. Chunks
  // outside the file are reported without a read.
  std::vector<std::size_t> readable;
  std::vector<io::ByteRange> ranges;
  for (std::size_t i = 0; i < count; ++i) {
    const ChunkEntry& e = entries[i];
    if (in_file(e) && e.stored_byte_len > 0) {
      readable.push_back(i);
      ranges.push_back({e.payload_offset, e.stored_byte_len});
    }
  }
  const std::shared_ptr<ChunkReadAhead> ahead = ChunkReadAhead::for_ranges(src, ranges);
  if (ahead) {
    std::vector<std::uint8_t> is_readable(count, 0);
    for (const std::size_t i : readable) is_readable[i] = 1;
    for (std::size_t i = 0; i < count; ++i)
      if (!is_readable[i]) check(i);
    for_each_in_order(readable.size(), threads, [&](std::size_t k) {
      const ChunkReadAhead::Hold hold = ahead->before(k);
      check(readable[k]);
    });
    return errors;
  }
  auto run = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) check(i);
    });
  };
  if (threads == 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) check(i);
  } else if (threads > 1) {
    tbb::task_arena arena(static_cast<int>(threads));
    arena.execute(run);
  } else {
    run();
  }
  return errors;
}

// Appends chunk_decode_skipped (quick mode over the limit) and chunk_decode; returns whether
// every chunk was decode-checked.
bool decode_findings(const io::ByteSource& src, const Layout& L, const VerifyOptions& options,
                     std::vector<Finding>& findings) {
  const std::uint64_t n = L.entries.size();
  const bool deep = options.deep_decode || n <= kQuickDecodeChunks;
  const std::uint64_t checked = deep ? n : kQuickDecodeChunks;
  if (!deep)
    findings.push_back(warning_finding("chunk_decode_skipped",
                                       "decode-check skipped for chunks " + std::to_string(kQuickDecodeChunks) + ".." +
                                           std::to_string(n) + " (limit " + std::to_string(kQuickDecodeChunks) +
                                           "); re-run with --deep or VerifyOptions::deep_decode"));
  bool failed = false;
  const std::vector<std::uint32_t>* crcs = nullptr;
  if (L.footer && L.footer->extension && !L.footer->extension->chunk_crc32c.empty()) {
    crcs = &L.footer->extension->chunk_crc32c;
    if (crcs->size() != n) {
      findings.push_back(error_finding("chunk_decode", "the footer extension records " + std::to_string(crcs->size()) +
                                                           " chunk checksums for " + std::to_string(n) + " chunks"));
      crcs = nullptr;
      failed = true;
    }
  }
  for (auto& error : decode_errors(src, L.entries, crcs, checked, options.threads)) {
    if (!error) continue;
    findings.push_back(error_finding("chunk_decode", std::move(*error)));
    failed = true;
  }
  if (!failed)
    findings.push_back(ok_finding(
        "chunk_decode", deep ? "decoded " + std::to_string(n) + " chunk(s)"
                             : "decoded " + std::to_string(checked) + " of " + std::to_string(n) + " chunk(s)"));
  return deep;
}

std::string convert_command() { return std::string(kTetCommand) + " convert <source> <output.tet>"; }

std::optional<Recommendation> recommendation_for(const Finding& f) {
  const std::string detail = f.detail.value_or("");
  if ((f.check == "parse" && detail.find("footer") != std::string::npos) || f.check == "footer")
    return Recommendation{"footer_invalid", "History/metadata footer is present but malformed.",
                          FixHint{"Strip the invalid footer (truncate after chunk payloads).", std::nullopt}};
  if (f.check == "parse" || f.check == "superblock" || f.check == "dataset_directory" || f.check == "chunk_index")
    return Recommendation{
        "invalid_layout", "File layout is invalid or truncated; it cannot be read reliably.",
        FixHint{"Re-create the `.tet` from the source array (convert or writer session).", convert_command()}};
  if (f.check == "chunk_payloads")
    return Recommendation{
        "payload_out_of_bounds", "A chunk index entry points outside the file payload region.",
        FixHint{"Restore from backup or re-export; do not append to a truncated file.", std::nullopt}};
  if (f.check == "chunk_dataset_ids")
    return Recommendation{"bad_dataset_id", "Chunk index references a non-existent dataset id.",
                          FixHint{"Re-write the file; the catalog index is internally inconsistent.", std::nullopt}};
  if (f.check == "chunk_decode")
    return Recommendation{"chunk_decode_failed", "Chunk payload could not be decoded: " + detail,
                          FixHint{"Re-convert from the original HDF5/NetCDF/Zarr source.", convert_command()}};
  if (f.check == "dataset_count")
    return Recommendation{"dataset_count_mismatch", "Superblock dataset count does not match the catalog blob.",
                          FixHint{"Re-create the file; superblock and catalog disagree.", std::nullopt}};
  return std::nullopt;  // dataset_tensor_bytes, dataset_names, payload_offsets, footer_metadata: none
}

}  // namespace

std::string_view severity_name(Severity severity) noexcept {
  switch (severity) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "info";
}

bool is_repairable_code(std::string_view code) noexcept { return code == "footer_invalid"; }

namespace {
// Every code recommendation_for can produce.
constexpr std::string_view kRecommendationCodes[] = {"footer_invalid", "invalid_layout",      "payload_out_of_bounds",
                                                     "bad_dataset_id", "chunk_decode_failed", "dataset_count_mismatch"};
}  // namespace

bool is_recommendation_code(std::string_view code) noexcept {
  for (const std::string_view known : kRecommendationCodes)
    if (code == known) return true;
  return false;
}

std::string recommendation_codes() {
  std::string out;
  for (const std::string_view known : kRecommendationCodes) (out += out.empty() ? "" : ", ") += known;
  return out;
}

std::string repair_dry_run_command(std::string_view path, std::string_view code) {
  return std::string(kTetCommand) + " repair " + std::string(path) + " --apply " + std::string(code) + " --dry-run";
}

std::vector<Recommendation> recommendations_for(const std::vector<Finding>& findings,
                                                const std::optional<std::string>& path) {
  std::vector<Recommendation> out;
  for (const auto& f : findings) {
    if (f.ok) continue;
    auto rec = recommendation_for(f);
    if (!rec) continue;
    bool seen = false;
    for (const auto& r : out) seen = seen || r.code == rec->code;
    if (seen) continue;
    if (path && is_repairable_code(rec->code)) rec->fix->command = repair_dry_run_command(*path, rec->code);
    out.push_back(std::move(*rec));
  }
  return out;
}

VerifyReport verify(const io::ByteSource& src, const VerifyOptions& options) {
  VerifyReport report;
  report.path = src.name();
  report.file_len = src.size();
  auto& findings = report.findings;

  Layout L;
  try {
    L = parse_layout(src);
  } catch (const FormatError& e) {
    findings.push_back(error_finding("parse", e.what()));
    return finish(std::move(report));
  } catch (const LimitError& e) {
    findings.push_back(error_finding("parse", e.what()));
    return finish(std::move(report));
  }
  findings.push_back(ok_finding("superblock"));
  findings.push_back(ok_finding("dataset_directory"));
  findings.push_back(ok_finding("chunk_index"));
  findings.push_back(ok_finding("chunk_payloads", "index spans validated during parse"));

  if (auto broken = dataset_id_violation(L)) {
    findings.push_back(error_finding("chunk_dataset_ids", *broken));
    return finish(std::move(report));
  }
  findings.push_back(ok_finding("chunk_dataset_ids"));

  bool datasets_ok = true;
  for (auto& f : dataset_findings(L)) {
    datasets_ok = datasets_ok && f.ok;
    findings.push_back(std::move(f));
  }
  if (!datasets_ok) return finish(std::move(report));

  if (auto f = duplicate_name_finding(L.datasets)) findings.push_back(std::move(*f));
  if (auto f = duplicate_offset_finding(L.entries)) findings.push_back(std::move(*f));
  if (auto f = payload_order_finding(L.entries)) findings.push_back(std::move(*f));
  const bool deep = decode_findings(src, L, options, findings);

  if (L.superblock.dataset_count != L.datasets.size()) {
    findings.push_back(
        error_finding("dataset_count", "superblock dataset_count=" + std::to_string(L.superblock.dataset_count) +
                                           " but parsed " + std::to_string(L.datasets.size()) + " records"));
    return finish(std::move(report));
  }
  findings.push_back(ok_finding("dataset_count"));

  // The structural pass has already read and validated the footer (S12, S14).
  findings.push_back(ok_finding("footer", L.footer ? "history footer valid" : "absent"));

  static const Footer kNoFooter;
  const Footer& footer = L.footer ? *L.footer : kNoFooter;
  if (auto broken = check_limits(footer.history, footer.metadata)) {
    findings.push_back(error_finding("footer_metadata", *broken));
    return finish(std::move(report));
  }
  findings.push_back(ok_finding("footer_metadata", "metadata within MetadataLimitsV1"));

  report.summary = VerifySummary{L.superblock.layout_version,
                                 L.datasets.size(),
                                 L.entries.size(),
                                 footer.history.size(),
                                 footer.metadata.has_content(),
                                 L.superblock.has_footer(),
                                 deep};
  return finish(std::move(report));
}

}  // namespace tessera::tet
