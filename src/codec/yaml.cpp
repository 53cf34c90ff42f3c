#include "tessera/codec/yaml.hpp"

#include <yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::codec::yaml {
namespace {

using json::Json;

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// PyYAML's implicit resolvers (YAML 1.1), sexagesimal numbers and timestamps left as strings.
const std::regex& bool_pattern() {
  static const std::regex r("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
  return r;
}
const std::regex& int_pattern() {
  static const std::regex r("[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+");
  return r;
}
const std::regex& float_pattern() {
  static const std::regex r(
      "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?\\.(?:inf|Inf|INF)|"
      "\\.(?:nan|NaN|NAN)");
  return r;
}
bool is_null_text(std::string_view v) { return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL"; }

class DocumentBuilder {
 public:
  DocumentBuilder(const std::string& name, const Limits& limits) : name_(name), limits_(limits) {}

  Json build(std::string_view text) {
    struct Parser {
      yaml_parser_t p;
      Parser() {
        if (!yaml_parser_initialize(&p)) throw LimitError("yaml: cannot allocate a parser");
      }
      ~Parser() { yaml_parser_delete(&p); }
    } parser;
    yaml_parser_set_input_string(&parser.p, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    for (;;) {
      struct Event {
        yaml_event_t e{};
        bool held = false;
        ~Event() {
          if (held) yaml_event_delete(&e);
        }
      } event;
      if (!yaml_parser_parse(&parser.p, &event.e)) {
        const auto& mark = parser.p.problem_mark;
        throw FormatError(where(mark) + (parser.p.problem ? parser.p.problem : "malformed YAML") +
                              (parser.p.context ? std::string(" ") + parser.p.context : std::string()),
                          name_, "yaml");
      }
      event.held = true;
      const yaml_event_t& e = event.e;
      switch (e.type) {
        case YAML_STREAM_END_EVENT: return root_.value_or(Json());
        case YAML_DOCUMENT_START_EVENT:
          if (++documents_ > 1) throw FormatError(where(e.start_mark) + "more than one document", name_, "yaml");
          break;
        case YAML_SCALAR_EVENT: add(scalar(e), anchor_of(e.data.scalar.anchor), 1, e.start_mark); break;
        case YAML_ALIAS_EVENT: {
          const std::string anchor = reinterpret_cast<const char*>(e.data.alias.anchor);
          const auto it = anchors_.find(anchor);
          if (it == anchors_.end())
            throw FormatError(where(e.start_mark) + "alias *" + anchor + " names no anchor", name_, "yaml");
          add(it->second.first, std::nullopt, it->second.second, e.start_mark);
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
          const bool mapping = e.type == YAML_MAPPING_START_EVENT;
          const yaml_char_t* tag = mapping ? e.data.mapping_start.tag : e.data.sequence_start.tag;
          check_collection_tag(tag, mapping, e.start_mark);
          if (stack_.size() >= limits_.max_depth)
            throw LimitError(
                where(e.start_mark) + "nested deeper than " + std::to_string(limits_.max_depth) + " levels", name_,
                "yaml");
          stack_.push_back({mapping ? Json::object() : Json::array(), mapping, std::nullopt,
                            anchor_of(mapping ? e.data.mapping_start.anchor : e.data.sequence_start.anchor), nodes_});
          count_node(e.start_mark);
          break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          Frame frame = std::move(stack_.back());
          stack_.pop_back();
          // The collection's own node was counted when it opened; its members as they came.
          const std::size_t subtree = nodes_ - frame.nodes_before;
          nodes_ = frame.nodes_before;
          add(std::move(frame.node), frame.anchor, subtree, e.start_mark);
          break;
        }
        case YAML_NO_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT: break;
      }
    }
  }

 private:
  struct Frame {
    Json node;
    bool mapping = false;
    std::optional<std::string> key;  // a mapping's key waiting for its value
    std::optional<std::string> anchor;
    std::size_t nodes_before = 0;
  };

  std::string where(const yaml_mark_t& mark) const {
    return name_ + ": line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) + ": ";
  }

  static std::optional<std::string> anchor_of(const yaml_char_t* anchor) {
    if (!anchor) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(anchor));
  }

  void count_node(const yaml_mark_t& mark, std::size_t n = 1) {
    nodes_ += n;
    if (nodes_ > limits_.max_nodes)
      throw LimitError(where(mark) + "more than " + std::to_string(limits_.max_nodes) + " nodes (aliases expanded)",
                       name_, "yaml");
  }

  void check_collection_tag(const yaml_char_t* tag, bool mapping, const yaml_mark_t& mark) const {
    if (!tag) return;
    const std::string t = reinterpret_cast<const char*>(tag);
    if (t != std::string(kTagPrefix) + (mapping ? "map" : "seq"))
      throw FormatError(where(mark) + "unsupported tag " + t, name_, "yaml");
  }

  // `nodes` is how many nodes `value` stands for (1 for a scalar, its subtree for a collection).
  void add(Json value, const std::optional<std::string>& anchor, std::size_t nodes, const yaml_mark_t& mark) {
    if (anchor) anchors_[*anchor] = {value, nodes};
    if (stack_.empty()) {
      count_node(mark, nodes);
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    if (!top.mapping) {
      count_node(mark, nodes);
      top.node.push_back(std::move(value));
      return;
    }
    if (!top.key) {
      if (value.is_object() || value.is_array())
        throw FormatError(where(mark) + "a mapping key must be a scalar", name_, "yaml");
      top.key = value.is_string() ? value.get<std::string>() : value.dump();
      if (top.node.contains(*top.key))
        throw FormatError(where(mark) + "duplicate key '" + *top.key + "'", name_, "yaml");
      return;
    }
    count_node(mark, nodes);
    top.node[*top.key] = std::move(value);
    top.key.reset();
  }

  Json scalar(const yaml_event_t& e) const {
    const auto& s = e.data.scalar;
    const std::string text(reinterpret_cast<const char*>(s.value), s.length);
    if (s.tag) {
      const std::string tag = reinterpret_cast<const char*>(s.tag);
      if (!tag.starts_with(kTagPrefix))
        throw FormatError(where(e.start_mark) + "unsupported tag " + tag, name_, "yaml");
      const std::string kind = tag.substr(kTagPrefix.size());
      if (kind == "str") return text;
      if (kind != "null" && kind != "bool" && kind != "int" && kind != "float")
        throw FormatError(where(e.start_mark) + "unsupported tag " + tag, name_, "yaml");
      std::optional<Json> typed;
      if (kind == "null" && is_null_text(text)) typed = Json();
      if (kind == "bool" && std::regex_match(text, bool_pattern())) typed = resolve_plain(text);
      if (kind == "int" && std::regex_match(text, int_pattern())) typed = resolve_plain(text);
      if (kind == "float" && (std::regex_match(text, float_pattern()) || std::regex_match(text, int_pattern())))
        typed = to_float(text);
      if (!typed) throw FormatError(where(e.start_mark) + "'" + text + "' is not a valid " + tag, name_, "yaml");
      return *typed;
    }
    if (s.style != YAML_PLAIN_SCALAR_STYLE) return text;
    return resolve_plain(text, &e.start_mark);
  }

  static Json to_float(std::string text) {
    std::erase(text, '_');
    if (text.ends_with("inf") || text.ends_with("Inf") || text.ends_with("INF"))
      return text.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    if (text.ends_with("nan") || text.ends_with("NaN") || text.ends_with("NAN"))
      return std::numeric_limits<double>::quiet_NaN();
    return std::strtod(text.c_str(), nullptr);
  }

  Json resolve_plain(const std::string& text, const yaml_mark_t* mark = nullptr) const {
    if (is_null_text(text)) return Json();
    if (std::regex_match(text, bool_pattern())) {
      const char c = text[0];
      return c == 'y' || c == 'Y' || c == 't' || c == 'T' || (text.size() == 2 && (text[1] == 'n' || text[1] == 'N'));
    }
    if (std::regex_match(text, int_pattern())) {
      std::string digits = text;
      std::erase(digits, '_');
      const bool negative = digits.front() == '-';
      if (digits.front() == '-' || digits.front() == '+') digits.erase(0, 1);
      int base = 10;
      if (digits.starts_with("0b")) base = 2, digits.erase(0, 2);
      else if (digits.starts_with("0x")) base = 16, digits.erase(0, 2);
      else if (digits.size() > 1 && digits.front() == '0') base = 8;
      errno = 0;
      const unsigned long long magnitude = digits.empty() ? 0 : std::strtoull(digits.c_str(), nullptr, base);
      const auto limit =
          static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1u : 0u);
      if (errno == ERANGE || magnitude > limit)
        throw FormatError((mark ? where(*mark) : name_ + ": ") + "integer '" + text + "' is outside the 64-bit range",
                          name_, "yaml");
      if (negative)
        return magnitude == limit ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(magnitude);
      return static_cast<std::int64_t>(magnitude);
    }
    if (std::regex_match(text, float_pattern())) return to_float(text);
    return text;
  }

  const std::string& name_;
  const Limits& limits_;
  std::vector<Frame> stack_;
  std::map<std::string, std::pair<Json, std::size_t>> anchors_;
  std::optional<Json> root_;
  std::size_t nodes_ = 0;
  int documents_ = 0;
};

}  // namespace

json::Json parse(std::string_view text, const std::string& name, const Limits& limits) {
  return DocumentBuilder(name, limits).build(text);
}

}  // namespace tessera::codec::yaml
