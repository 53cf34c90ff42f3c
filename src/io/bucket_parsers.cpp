// The two documents the bucket backends read: ListObjectsV2 answers (XML, through expat) and the
// AWS shared config/credentials files (INI). See include/tessera/io/bucket.hpp.
#include <expat.h>

#include <climits>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"

namespace tessera::io {
namespace {

constexpr std::size_t kMaxDepth = 32;

struct ListParse {
  XML_Parser parser = nullptr;
  ListObjectsPage page;
  std::vector<std::string> path;  // open element names, outermost first
  std::string text;               // character data of the innermost element
  std::string problem;            // set when the document is refused (the parse is stopped)
};

void stop(ListParse& p, std::string problem) {
  if (p.problem.empty()) p.problem = std::move(problem);
  XML_StopParser(p.parser, XML_FALSE);
}

// The local name of an element ("s3:Key" and "Key" alike; S3 uses a default namespace).
std::string local_name(const XML_Char* name) {
  const std::string s(name);
  const auto colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(colon + 1);
}

void XMLCALL on_start(void* user, const XML_Char* name, const XML_Char**) {
  auto& p = *static_cast<ListParse*>(user);
  if (p.path.size() >= kMaxDepth) return stop(p, "elements nest deeper than " + std::to_string(kMaxDepth));
  std::string n = local_name(name);
  if (p.path.empty() && n != "ListBucketResult")
    return stop(p, "the root element is <" + n + ">, not <ListBucketResult>");
  p.path.push_back(std::move(n));
  p.text.clear();
}

void XMLCALL on_end(void* user, const XML_Char*) {
  auto& p = *static_cast<ListParse*>(user);
  // After a refusal expat may still report the end of the refused element (`<Root/>`), which was
  // never pushed: nothing more is recorded once the document is refused.
  if (!p.problem.empty() || p.path.empty()) return;
  const std::string& n = p.path.back();
  const std::string parent = p.path.size() >= 2 ? p.path[p.path.size() - 2] : std::string();
  if (p.path.size() == 3 && parent == "Contents" && n == "Key") p.page.keys.push_back(p.text);
  else if (p.path.size() == 3 && parent == "CommonPrefixes" && n == "Prefix") p.page.common_prefixes.push_back(p.text);
  else if (p.path.size() == 2 && n == "IsTruncated") p.page.truncated = p.text == "true";
  else if (p.path.size() == 2 && n == "NextContinuationToken") p.page.next_token = p.text;
  p.path.pop_back();
  p.text.clear();
}

void XMLCALL on_text(void* user, const XML_Char* s, int len) {
  auto& p = *static_cast<ListParse*>(user);
  p.text.append(s, static_cast<std::size_t>(len));
}

// No DTDs or entity declarations: a listing never needs them, and refusing them rules out
// entity-expansion bombs.
void XMLCALL on_doctype(void* user, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  stop(*static_cast<ListParse*>(user), "a DOCTYPE declaration is not allowed");
}
void XMLCALL on_entity(void* user, const XML_Char*, int, const XML_Char*, int, const XML_Char*, const XML_Char*,
                       const XML_Char*, const XML_Char*) {
  stop(*static_cast<ListParse*>(user), "an entity declaration is not allowed");
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

ListObjectsPage parse_list_objects_page(std::string_view xml, const std::string& shown) {
  ListParse p;
  p.parser = XML_ParserCreate("UTF-8");
  if (!p.parser) throw IoError("cannot create an XML parser", shown);
  XML_SetUserData(p.parser, &p);
  XML_SetElementHandler(p.parser, on_start, on_end);
  XML_SetCharacterDataHandler(p.parser, on_text);
  XML_SetStartDoctypeDeclHandler(p.parser, on_doctype);
  XML_SetEntityDeclHandler(p.parser, on_entity);
  if (xml.size() > static_cast<std::size_t>(INT_MAX)) {
    XML_ParserFree(p.parser);
    throw FormatError(shown + ": object listing is too large (" + std::to_string(xml.size()) + " bytes)", shown);
  }
  const XML_Status status = XML_Parse(p.parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  std::string problem = p.problem;
  if (problem.empty() && status != XML_STATUS_OK)
    problem = std::string(XML_ErrorString(XML_GetErrorCode(p.parser))) + " at line " +
              std::to_string(XML_GetCurrentLineNumber(p.parser));
  XML_ParserFree(p.parser);
  if (!problem.empty()) throw FormatError(shown + ": not a ListObjectsV2 answer: " + problem, shown);
  if (p.page.truncated && p.page.next_token.empty())
    throw FormatError(shown + ": not a ListObjectsV2 answer: truncated without a NextContinuationToken", shown);
  return std::move(p.page);
}

IniSections parse_aws_ini(std::string_view text, const std::string& shown) {
  IniSections out;
  std::string section;
  bool in_section = false;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const auto bad = [&](const std::string& why) {
      return FormatError(shown + ":" + std::to_string(line_no) + ": " + why, shown);
    };
    // An indented line continues the previous setting (e.g. the settings under `s3 =`).
    if (raw.front() == ' ' || raw.front() == '\t') {
      if (!in_section) throw bad("an indented line before any [section]");
      continue;
    }
    if (line.front() == '[') {
      if (line.back() != ']') throw bad("a section header must end with ']'");
      section = trim(std::string_view(line).substr(1, line.size() - 2));
      if (section.empty()) throw bad("an empty section name");
      in_section = true;
      out[section];
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw bad("expected 'name = value', '[section]' or a comment");
    if (!in_section) throw bad("a setting before any [section]");
    const std::string key = trim(std::string_view(line).substr(0, eq));
    if (key.empty()) throw bad("a setting without a name");
    out[section][key] = trim(std::string_view(line).substr(eq + 1));
  }
  return out;
}

}  // namespace tessera::io
