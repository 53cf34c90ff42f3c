// JSON layout and number formatting. Every tessera JSON byte is produced here: `dump` is a
// JsonWriter walking a tree, so compact, pretty and canonical layouts have one implementation.
//
// Numbers start from std::to_chars' shortest round-trip digits (the same digits ryu and
// Python's repr choose: the shortest string that reads back to the same value, nearest to it
// when several exist); the styles differ only in where they switch to an exponent and how they
// spell it.
#include "tessera/codec/json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include "tessera/core/error.hpp"

namespace tessera::codec::json {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// value = (negative ? -1 : 1) × 0.d1…dn × 10^kk, with dn != '0'.
struct ShortestDecimal {
  bool negative = false;
  char digits[24] = {};
  int n = 0;
  int kk = 0;
};

// Finite, non-zero values only.
template <typename F>
ShortestDecimal shortest_decimal(F v) {
  // Scientific form keeps the parse simple: "-d[.ddd]e±xx".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  ShortestDecimal d;
  const char* p = buf;
  if (*p == '-') {
    d.negative = true;
    ++p;
  }
  for (; p < res.ptr && *p != 'e'; ++p)
    if (*p != '.') d.digits[d.n++] = *p;
  ++p;  // 'e'
  const bool negative_exp = *p == '-';
  ++p;  // to_chars always writes the exponent sign
  int exp = 0;
  std::from_chars(p, res.ptr, exp);
  d.kk = (negative_exp ? -exp : exp) + 1;
  return d;
}

// Positional form; the caller has decided the exponent range allows it.
void append_positional(std::string& out, const ShortestDecimal& d) {
  if (d.negative) out += '-';
  if (d.kk <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-d.kk), '0');
    out.append(d.digits, static_cast<std::size_t>(d.n));
  } else if (d.kk >= d.n) {
    out.append(d.digits, static_cast<std::size_t>(d.n));
    out.append(static_cast<std::size_t>(d.kk - d.n), '0');
    out += ".0";
  } else {
    out.append(d.digits, static_cast<std::size_t>(d.kk));
    out += '.';
    out.append(d.digits + d.kk, static_cast<std::size_t>(d.n - d.kk));
  }
}

// `d1[.d2…dn]e<exp>`: ryu writes the bare exponent (`1e16`, `1e-6`); Python's repr always
// signs it and pads to two digits (`1e+16`, `1e-06`).
void append_exponential(std::string& out, const ShortestDecimal& d, FloatStyle style) {
  if (d.negative) out += '-';
  out += d.digits[0];
  if (d.n > 1) {
    out += '.';
    out.append(d.digits + 1, static_cast<std::size_t>(d.n - 1));
  }
  out += 'e';
  const int exp = d.kk - 1;
  if (style == FloatStyle::Python) {
    out += exp < 0 ? '-' : '+';
    if (exp > -10 && exp < 10) out += '0';
    char buf[8];
    const auto res = std::to_chars(buf, buf + sizeof buf, exp < 0 ? -exp : exp);
    out.append(buf, res.ptr);
  } else {
    char buf[8];
    const auto res = std::to_chars(buf, buf + sizeof buf, exp);
    out.append(buf, res.ptr);
  }
}

// `max_kk` / `min_kk` bound the positional range: min_kk < kk <= max_kk.
template <typename F>
void append_float(std::string& out, F v, FloatStyle style, int max_kk, int min_kk) {
  if (std::isnan(v)) {
    out += style == FloatStyle::Tet ? "null" : "NaN";
    return;
  }
  if (std::isinf(v)) {
    if (style == FloatStyle::Tet) out += "null";
    else out += v < 0 ? "-Infinity" : "Infinity";
    return;
  }
  if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  const ShortestDecimal d = shortest_decimal(v);
  if (d.kk > min_kk && d.kk <= max_kk) append_positional(out, d);
  else append_exponential(out, d, style);
}

// tet.md §5.1 thresholds (ryu's format64 / format32); Python's repr switches to an exponent
// when the decimal point position is <= -4 or > 16, for either width.
void append_f64(std::string& out, double v, FloatStyle style) {
  if (style == FloatStyle::Tet) append_float(out, v, style, 16, -5);
  else append_float(out, v, style, 16, -4);
}

void append_f32(std::string& out, float v, FloatStyle style) {
  if (style == FloatStyle::Tet) append_float(out, v, style, 13, -6);
  else append_float(out, v, style, 16, -4);
}

template <typename I>
void append_integer(std::string& out, I v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void append_u_escape(std::string& out, std::uint32_t unit) {
  out += "\\u";
  out += kHex[(unit >> 12) & 0xF];
  out += kHex[(unit >> 8) & 0xF];
  out += kHex[(unit >> 4) & 0xF];
  out += kHex[unit & 0xF];
}

// Strict UTF-8 decoding (no overlongs, no surrogates, nothing above U+10FFFF). Returns the
// sequence length and sets `cp`, or 0 when the bytes at `i` are not valid UTF-8.
std::size_t decode_utf8(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  std::size_t len;
  std::uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1Fu, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0Fu, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char b = byte(i + k);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

void append_quoted(std::string& out, std::string_view s, bool ascii_only) {
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool literal = c >= 0x20 && c != '"' && c != '\\' && (!ascii_only || c < 0x7F);
    if (literal) {
      ++i;
      continue;
    }
    out.append(s.data() + run, i - run);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: append_u_escape(out, c); break;  // other controls, and DEL when ascii_only
      }
      ++i;
    } else {
      std::uint32_t cp = 0;
      const std::size_t len = decode_utf8(s, i, cp);
      if (len == 0) throw FormatError("invalid UTF-8 at byte " + std::to_string(i) + " of a JSON string");
      if (cp >= 0x10000) {  // astral: a UTF-16 surrogate pair, as Python writes it
        cp -= 0x10000;
        append_u_escape(out, 0xD800 + (cp >> 10));
        append_u_escape(out, 0xDC00 + (cp & 0x3FF));
      } else {
        append_u_escape(out, cp);
      }
      i += len;
    }
    run = i;
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

std::string format_f64(double v, FloatStyle style) {
  std::string out;
  append_f64(out, v, style);
  return out;
}

std::string format_f32(float v, FloatStyle style) {
  std::string out;
  append_f32(out, v, style);
  return out;
}

// ---------------------------------------------------------------------------------------------
// JsonWriter

JsonWriter::JsonWriter(std::string& out, const DumpOptions& options) : out_(out), options_(options) {
  if (options.indent < -1) throw UsageError("JSON indent must be -1 (compact) or >= 0");
}

void JsonWriter::newline_indent() {
  if (options_.indent < 0) return;
  out_ += '\n';
  out_.append(stack_.size() * static_cast<std::size_t>(options_.indent), ' ');
}

void JsonWriter::before_value() {
  if (stack_.empty()) {
    if (done_) throw UsageError("JSON writer: a second top-level value");
    return;
  }
  Frame& frame = stack_.back();
  if (frame.object) {
    if (!key_pending_) throw UsageError("JSON writer: object member value without a key");
    key_pending_ = false;  // key() already wrote the separator and the indentation
    return;
  }
  separate(frame);
}

// The separator before a member or element that is not the first, then the line break.
void JsonWriter::separate(Frame& frame) {
  if (!frame.empty) out_ += options_.spaced && options_.indent < 0 ? ", " : ",";
  frame.empty = false;
  newline_indent();
}

void JsonWriter::after_value() {
  if (stack_.empty()) done_ = true;
}

void JsonWriter::close(bool object) {
  if (stack_.empty() || stack_.back().object != object)
    throw UsageError(object ? "JSON writer: end_object without an open object"
                            : "JSON writer: end_array without an open array");
  if (key_pending_) throw UsageError("JSON writer: end_object right after a key");
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline_indent();  // empty containers stay `{}` / `[]` in every layout
  out_ += object ? '}' : ']';
  after_value();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back({true, true});
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close(true);
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back({false, true});
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(false);
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().object) throw UsageError("JSON writer: key outside an object");
  if (key_pending_) throw UsageError("JSON writer: two keys without a value between them");
  separate(stack_.back());
  append_quoted(out_, name, options_.ascii_only);
  out_ += options_.indent >= 0 || options_.spaced ? ": " : ":";
  key_pending_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_quoted(out_, s, options_.ascii_only);
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(std::nullptr_t) {
  before_value();
  out_ += "null";
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  before_value();
  append_integer(out_, v);
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t v) {
  before_value();
  append_integer(out_, v);
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  append_f64(out_, v, options_.float_style);
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value_f32(float v) {
  before_value();
  append_f32(out_, v, options_.float_style);
  after_value();
  return *this;
}

JsonWriter& JsonWriter::value(const Json& tree) {
  using Type = Json::value_t;
  switch (tree.type()) {
    case Type::null: return value(nullptr);
    case Type::boolean: return value(tree.get<bool>());
    case Type::number_integer: return value(tree.get<std::int64_t>());
    case Type::number_unsigned: return value(tree.get<std::uint64_t>());
    case Type::number_float: return value(tree.get<double>());
    case Type::string: return value(std::string_view(tree.get_ref<const std::string&>()));
    case Type::array:
      begin_array();
      for (const Json& element : tree) value(element);
      return end_array();
    case Type::object: {
      begin_object();
      const auto& members = tree.get_ref<const Json::object_t&>();
      if (options_.sort_keys) {
        // std::string's < compares bytes as unsigned char, and UTF-8 byte order is code point
        // order, which is how Python sorts str keys.
        std::vector<const Json::object_t::value_type*> sorted;
        sorted.reserve(members.size());
        for (const auto& member : members) sorted.push_back(&member);
        std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
        for (const auto* member : sorted) {
          key(member->first);
          value(member->second);
        }
      } else {
        for (const auto& member : members) {
          key(member.first);
          value(member.second);
        }
      }
      return end_object();
    }
    case Type::binary: throw UsageError("JSON writer: binary values have no JSON form");
    case Type::discarded: break;
  }
  throw UsageError("JSON writer: a discarded value has no JSON form");
}

std::string dump(const Json& tree, const DumpOptions& options) {
  std::string out;
  JsonWriter writer(out, options);
  writer.value(tree);
  return out;
}

namespace {

struct DuplicateKey {
  std::string key;
};

}  // namespace

std::size_t nesting_depth(std::string_view text) noexcept {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped byte cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{': deepest = std::max(deepest, ++depth); break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return deepest;
}

void check_nesting(std::string_view text, std::string_view source, std::size_t max_depth) {
  const std::size_t depth = nesting_depth(text);
  if (depth <= max_depth) return;
  const std::string where(source);
  throw LimitError(where + ": JSON: arrays and objects nest " + std::to_string(depth) + " levels deep (limit " +
                       std::to_string(max_depth) + ")",
                   where, "JSON");
}

Json parse_strict(std::string_view text, std::string_view source) {
  check_nesting(text, source);
  // nlohmann keeps the last of two equal keys silently; the callback sees every key as it is
  // read, so one set of seen keys per open object finds duplicates without a second pass.
  std::vector<std::set<std::string>> open_objects;
  const Json::parser_callback_t check = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case Json::parse_event_t::object_end: open_objects.pop_back(); break;
      case Json::parse_event_t::key: {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!open_objects.back().insert(k).second) throw DuplicateKey{k};
        break;
      }
      case Json::parse_event_t::array_start:
      case Json::parse_event_t::array_end:
      case Json::parse_event_t::value: break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const DuplicateKey& dup) {
    std::string quoted;
    append_quoted(quoted, dup.key, true);
    throw FormatError("duplicate key " + quoted + " in an object", std::string(source), "JSON");
  } catch (const Json::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag: the rest is the useful part.
    std::string what = e.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      what.erase(0, close + 2);
    throw FormatError(what, std::string(source), "JSON");
  }
}

void release(Json& tree) noexcept {
  if (tree.is_array()) {
    Json::array_t elements;
    elements.swap(tree.get_ref<Json::array_t&>());
    for (Json& element : elements)
      if (element.is_structured()) release(element);
    // `elements` now holds only scalars and nulls, which std::vector destroys one by one.
  } else if (tree.is_object()) {
    Json::object_t members;
    members.swap(tree.get_ref<Json::object_t&>());
    for (auto& member : members)
      if (member.second.is_structured()) release(member.second);
  }
  tree = nullptr;
}

}  // namespace tessera::codec::json
