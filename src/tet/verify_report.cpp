// Renderings of a verify report (spec tet.md §2.3): pretty JSON in the reference's key order,
// the text report and the quiet line.
#include <string>

#include "tessera/codec/json.hpp"
#include "tessera/tet/verify.hpp"

namespace tessera::tet {
namespace {

std::string bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string render_verify_json(const VerifyReport& r) {
  using codec::json::DumpOptions;
  using codec::json::JsonWriter;
  std::string out;
  JsonWriter w(out, DumpOptions::tet_pretty());
  w.begin_object();
  w.key("ok").value(r.ok);
  if (r.path) w.key("path").value(*r.path);
  w.key("file_len").value(r.file_len);
  w.key("findings").begin_array();
  for (const auto& f : r.findings) {
    w.begin_object();
    w.key("check").value(f.check);
    w.key("severity").value(severity_name(f.severity));
    w.key("ok").value(f.ok);
    if (f.detail) w.key("detail").value(*f.detail);
    w.end_object();
  }
  w.end_array();
  w.key("recommendations").begin_array();
  for (const auto& rec : r.recommendations) {
    w.begin_object();
    w.key("code").value(rec.code);
    w.key("message").value(rec.message);
    if (rec.fix) {
      w.key("fix").begin_object();
      w.key("summary").value(rec.fix->summary);
      if (rec.fix->command) w.key("command").value(*rec.fix->command);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  if (const auto& s = r.summary) {
    w.key("summary").begin_object();
    w.key("layout_version").value(s->layout_version);
    w.key("dataset_count").value(s->dataset_count);
    w.key("chunk_count").value(s->chunk_count);
    w.key("history_events").value(s->history_events);
    w.key("has_metadata").value(s->has_metadata);
    w.key("history_footer").value(s->history_footer);
    w.key("deep_chunk_decode").value(s->deep_chunk_decode);
    w.end_object();
  }
  w.end_object();
  return out;
}

std::string render_verify_text(const VerifyReport& r) {
  constexpr std::size_t kCheckWidth = 22;  // check names are ASCII
  std::string out;
  if (r.path) out += "file: " + *r.path + "\n";
  out += "size: " + std::to_string(r.file_len) + " bytes\n";
  out += r.ok ? "status: ok\n" : "status: failed\n";
  if (!r.findings.empty()) {
    out += "checks:\n";
    for (const auto& f : r.findings) {
      const char* mark = !f.ok ? "FAIL" : f.severity == Severity::Warning ? "warn" : "ok";
      out += "  " + f.check;
      if (f.check.size() < kCheckWidth) out.append(kCheckWidth - f.check.size(), ' ');
      out += std::string(" ") + mark;
      if (f.detail) out += " (" + *f.detail + ")";
      out += "\n";
    }
  }
  if (!r.recommendations.empty()) {
    out += "recommendations:\n";
    for (const auto& rec : r.recommendations) {
      out += "  [" + rec.code + "] " + rec.message + "\n";
      if (!rec.fix) continue;
      out += "       \u2192 " + rec.fix->summary + "\n";
      if (rec.fix->command) out += "       \u2192 " + *rec.fix->command + "\n";
    }
  }
  if (const auto& s = r.summary) {
    out += "summary: layout=" + std::to_string(s->layout_version) + " datasets=" + std::to_string(s->dataset_count) +
           " chunks=" + std::to_string(s->chunk_count) + " history=" + std::to_string(s->history_events) +
           " metadata=" + bool_text(s->has_metadata) + " footer=" + bool_text(s->history_footer) +
           " deep_decode=" + bool_text(s->deep_chunk_decode) + "\n";
  }
  return out;
}

std::string render_verify_quiet(const VerifyReport& r) {
  const auto& s = r.summary;
  return "path=" + r.path.value_or("-") + " status=" + (r.ok ? "ok" : "failed") +
         " datasets=" + (s ? std::to_string(s->dataset_count) : "?") +
         " chunks=" + (s ? std::to_string(s->chunk_count) : "?") +
         " recommendations=" + std::to_string(r.recommendations.size());
}

}  // namespace tessera::tet
