// The documents the bucket backends read: S3's XML answers (listings, multipart uploads, error
// documents; through expat) and the AWS shared config/credentials files (INI). See include/tessera/io/bucket.hpp.
#include <expat.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "http_request.hpp"
#include "tessera/io/bucket.hpp"

namespace tessera::io {
namespace {

constexpr std::size_t kMaxDepth = 32;

// A parsed S3 XML document: the root element's local name and every element below it, in
// document order, as its path below the root ("Contents/Key") and its own character data.
// Containers are recorded too (when they end), so a reader can group the fields of repeated
// elements such as <Upload>.
struct XmlDocument {
  std::string root;
  std::vector<std::pair<std::string, std::string>> elements;
  std::string first(std::string_view path) const {
    for (const auto& [p, text] : elements)
      if (p == path) return text;
    return {};
  }
};

struct XmlParse {
  XML_Parser parser = nullptr;
  XmlDocument doc;
  std::vector<std::string> path;  // open element names, outermost first
  std::string text;               // character data of the innermost element
  std::string problem;            // set when the document is refused (the parse is stopped)
};

void stop(XmlParse& p, std::string problem) {
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
  auto& p = *static_cast<XmlParse*>(user);
  if (p.path.size() >= kMaxDepth) return stop(p, "elements nest deeper than " + std::to_string(kMaxDepth));
  std::string n = local_name(name);
  if (p.path.empty()) p.doc.root = n;
  p.path.push_back(std::move(n));
  p.text.clear();
}

void XMLCALL on_end(void* user, const XML_Char*) {
  auto& p = *static_cast<XmlParse*>(user);
  // After a refusal expat may still report the end of the refused element, which was never
  // pushed: nothing more is recorded once the document is refused.
  if (!p.problem.empty() || p.path.empty()) return;
  if (p.path.size() >= 2) {
    std::string below;
    for (std::size_t i = 1; i < p.path.size(); ++i) below += (i > 1 ? "/" : "") + p.path[i];
    p.doc.elements.emplace_back(std::move(below), p.text);
  }
  p.path.pop_back();
  p.text.clear();
}

void XMLCALL on_text(void* user, const XML_Char* s, int len) {
  auto& p = *static_cast<XmlParse*>(user);
  p.text.append(s, static_cast<std::size_t>(len));
}

// No DTDs or entity declarations: S3 documents never need them, and refusing them rules out
// entity-expansion bombs.
void XMLCALL on_doctype(void* user, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  stop(*static_cast<XmlParse*>(user), "a DOCTYPE declaration is not allowed");
}
void XMLCALL on_entity(void* user, const XML_Char*, int, const XML_Char*, int, const XML_Char*, const XML_Char*,
                       const XML_Char*, const XML_Char*) {
  stop(*static_cast<XmlParse*>(user), "an entity declaration is not allowed");
}

// The document, or the reason it is refused (malformed, a DTD or entity, too deep, too large).
XmlDocument parse_xml(std::string_view xml, std::string& problem) {
  XmlParse p;
  if (xml.size() > static_cast<std::size_t>(INT_MAX)) {
    problem = "the document is too large (" + std::to_string(xml.size()) + " bytes)";
    return {};
  }
  p.parser = XML_ParserCreate("UTF-8");
  if (!p.parser) throw IoError("cannot create an XML parser");
  XML_SetUserData(p.parser, &p);
  XML_SetElementHandler(p.parser, on_start, on_end);
  XML_SetCharacterDataHandler(p.parser, on_text);
  XML_SetStartDoctypeDeclHandler(p.parser, on_doctype);
  XML_SetEntityDeclHandler(p.parser, on_entity);
  const XML_Status status = XML_Parse(p.parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  problem = p.problem;
  if (problem.empty() && status != XML_STATUS_OK)
    problem = std::string(XML_ErrorString(XML_GetErrorCode(p.parser))) + " at line " +
              std::to_string(XML_GetCurrentLineNumber(p.parser));
  XML_ParserFree(p.parser);
  return std::move(p.doc);
}

// The document whose root must be `root`; FormatError "SHOWN: not a WHAT: reason" otherwise.
XmlDocument parse_answer(std::string_view xml, std::string_view root, const std::string& what,
                         const std::string& shown) {
  std::string problem;
  XmlDocument doc = parse_xml(xml, problem);
  if (problem.empty() && doc.root != root)
    problem = "the root element is <" + doc.root + ">, not <" + std::string(root) + ">";
  if (!problem.empty()) throw FormatError(shown + ": not a " + what + ": " + problem, shown);
  return doc;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

ListObjectsPage parse_list_objects_page(std::string_view xml, const std::string& shown) {
  const XmlDocument doc = parse_answer(xml, "ListBucketResult", "ListObjectsV2 answer", shown);
  ListObjectsPage page;
  for (const auto& [path, text] : doc.elements) {
    if (path == "Contents/Key") page.keys.push_back(text);
    else if (path == "CommonPrefixes/Prefix") page.common_prefixes.push_back(text);
    else if (path == "IsTruncated") page.truncated = text == "true";
    else if (path == "NextContinuationToken") page.next_token = text;
  }
  if (page.truncated && page.next_token.empty())
    throw FormatError(shown + ": not a ListObjectsV2 answer: truncated without a NextContinuationToken", shown);
  return page;
}

std::string parse_initiate_multipart(std::string_view xml, const std::string& shown) {
  const XmlDocument doc = parse_answer(xml, "InitiateMultipartUploadResult", "CreateMultipartUpload answer", shown);
  std::string id = doc.first("UploadId");
  if (id.empty()) throw FormatError(shown + ": not a CreateMultipartUpload answer: no UploadId", shown);
  return id;
}

ListUploadsPage parse_list_uploads_page(std::string_view xml, const std::string& shown) {
  const XmlDocument doc = parse_answer(xml, "ListMultipartUploadsResult", "ListMultipartUploads answer", shown);
  ListUploadsPage page;
  PendingUpload upload;
  for (const auto& [path, text] : doc.elements) {
    if (path == "Upload/Key") upload.key = text;
    else if (path == "Upload/UploadId") upload.upload_id = text;
    else if (path == "Upload/Initiated") upload.initiated = text;
    else if (path == "Upload") {
      if (upload.key.empty() || upload.upload_id.empty())
        throw FormatError(shown + ": not a ListMultipartUploads answer: an <Upload> without Key or UploadId", shown);
      page.uploads.push_back(std::exchange(upload, PendingUpload{}));
    } else if (path == "IsTruncated") page.truncated = text == "true";
    else if (path == "NextKeyMarker") page.next_key_marker = text;
    else if (path == "NextUploadIdMarker") page.next_upload_id_marker = text;
  }
  if (page.truncated && page.next_key_marker.empty())
    throw FormatError(shown + ": not a ListMultipartUploads answer: truncated without a NextKeyMarker", shown);
  return page;
}

CompleteAnswer parse_complete_multipart(std::string_view xml, const std::string& shown) {
  std::string problem;
  const XmlDocument doc = parse_xml(xml, problem);
  if (problem.empty() && doc.root == "Error") return CompleteAnswer{{}, doc.first("Code"), doc.first("Message")};
  if (problem.empty() && doc.root != "CompleteMultipartUploadResult")
    problem = "the root element is <" + doc.root + ">, not <CompleteMultipartUploadResult>";
  if (!problem.empty()) throw FormatError(shown + ": not a CompleteMultipartUpload answer: " + problem, shown);
  return CompleteAnswer{doc.first("ETag"), {}, {}};
}

namespace detail {

ErrorDocument error_document(std::span<const std::byte> body) {
  if (body.empty()) return {};
  std::string problem;
  const XmlDocument doc = parse_xml(std::string_view(reinterpret_cast<const char*>(body.data()), body.size()), problem);
  if (!problem.empty() || doc.root != "Error") return {};
  return ErrorDocument{doc.first("Code"), doc.first("Message")};
}

}  // namespace detail

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
