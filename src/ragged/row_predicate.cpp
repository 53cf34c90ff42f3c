// Row predicates (include/tessera/ragged/row_predicate.hpp): a recursive-descent parser of
// Python's grammar restricted to comparisons, `&`, `|`, `~` and parentheses, type-checked so that
// every accepted text means what numpy makes of it.
#include "tessera/ragged/row_predicate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "tessera/core/error.hpp"

namespace tessera::ragged {

struct RowPredicate::Node {
  enum class Kind : std::uint8_t { Column, Number, Compare, Not, And, Or };
  enum class Op : std::uint8_t { Ge, Gt, Le, Lt, Eq, Ne };
  Kind kind = Kind::Number;
  Op op = Op::Eq;
  std::size_t column = 0;  // Column: index into columns()
  double number = 0;       // Number
  std::shared_ptr<const Node> a, b;
  bool boolean() const noexcept { return kind != Kind::Column && kind != Kind::Number; }
};

namespace {

using Node = RowPredicate::Node;
using NodePtr = std::shared_ptr<const Node>;

// An expression nested deeper than this is refused rather than parsed with unbounded recursion.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, const std::string& key, std::vector<std::string>& columns)
      : text_(text), key_(key), columns_(columns) {}

  NodePtr parse() {
    NodePtr root = comparison(0);
    skip_space();
    if (at_ < text_.size()) {
      std::size_t end = at_;
      while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) ++end;
      const std::string word(text_.substr(at_, std::max<std::size_t>(end - at_, 1)));
      if (word == "and" || word == "or" || word == "not")
        fail("'" + word + "' (use & | ~ between parenthesized comparisons, as numpy needs)");
      fail("unexpected '" + word + "'");
    }
    if (!root->boolean()) fail("the expression is a value, not a condition (compare it: name >= 2)");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(key_ + ": '" + std::string(text_) + "': " + what + " at character " + std::to_string(at_ + 1) +
                     " (supported: comparisons name OP number with OP one of >= > <= < == !=, combined with & | ~ "
                     "and parentheses)");
  }

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }

  bool take(std::string_view token) {
    skip_space();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }

  std::optional<Node::Op> take_comparison() {
    static constexpr std::pair<std::string_view, Node::Op> kOps[] = {{">=", Node::Op::Ge}, {"<=", Node::Op::Le},
                                                                     {"==", Node::Op::Eq}, {"!=", Node::Op::Ne},
                                                                     {">", Node::Op::Gt},  {"<", Node::Op::Lt}};
    for (const auto& [token, op] : kOps)
      if (take(token)) return op;
    return std::nullopt;
  }

  static NodePtr make(Node node) { return std::make_shared<const Node>(std::move(node)); }

  // comparison := bitor [OP bitor]
  NodePtr comparison(int depth) {
    if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    NodePtr left = bit_or(depth);
    const std::size_t op_at = at_;
    const auto op = take_comparison();
    if (!op) return left;
    NodePtr right = bit_or(depth);
    if (left->boolean() || right->boolean()) {
      at_ = op_at;
      fail(
          "a comparison between conditions (in Python, | and & bind tighter than a comparison: parenthesize "
          "each comparison)");
    }
    skip_space();
    if (take_comparison()) fail("a chained comparison");
    Node n;
    n.kind = Node::Kind::Compare;
    n.op = *op;
    n.a = std::move(left);
    n.b = std::move(right);
    return make(std::move(n));
  }

  NodePtr binary(Node::Kind kind, NodePtr left, NodePtr right) {
    if (!left->boolean() || !right->boolean())
      fail(std::string("the operands of ") + (kind == Node::Kind::And ? "&" : "|") +
           " must be conditions (in Python, | and & bind tighter than a comparison: parenthesize each comparison)");
    Node n;
    n.kind = kind;
    n.a = std::move(left);
    n.b = std::move(right);
    return make(std::move(n));
  }

  // bitor := bitand ('|' bitand)*
  NodePtr bit_or(int depth) {
    NodePtr left = bit_and(depth);
    while (take("|")) left = binary(Node::Kind::Or, left, bit_and(depth));
    return left;
  }

  // bitand := unary ('&' unary)*
  NodePtr bit_and(int depth) {
    NodePtr left = unary(depth);
    while (take("&")) left = binary(Node::Kind::And, left, unary(depth));
    return left;
  }

  // unary := '~' unary | atom
  NodePtr unary(int depth) {
    if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    if (take("~")) {
      NodePtr operand = unary(depth + 1);
      if (!operand->boolean()) fail("the operand of ~ must be a condition (a parenthesized comparison)");
      Node n;
      n.kind = Node::Kind::Not;
      n.a = std::move(operand);
      return make(std::move(n));
    }
    return atom(depth);
  }

  // atom := '(' comparison ')' | name | number
  NodePtr atom(int depth) {
    skip_space();
    if (take("(")) {
      NodePtr inner = comparison(depth + 1);
      if (!take(")")) fail("a missing ')'");
      return inner;
    }
    if (at_ >= text_.size()) fail("an incomplete expression");
    const char c = text_[at_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t begin = at_;
      while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
      const std::string name(text_.substr(begin, at_ - begin));
      if (name == "and" || name == "or" || name == "not" || name == "True" || name == "False")
        fail("'" + name + "' (use & | ~ between parenthesized comparisons, as numpy needs)");
      skip_space();
      if (at_ < text_.size() && (text_[at_] == '(' || text_[at_] == '.' || text_[at_] == '['))
        fail("a call, attribute or subscript ('" + name + text_[at_] + "')");
      Node n;
      n.kind = Node::Kind::Column;
      const auto it = std::find(columns_.begin(), columns_.end(), name);
      n.column = static_cast<std::size_t>(it - columns_.begin());
      if (it == columns_.end()) columns_.push_back(name);
      return make(std::move(n));
    }
    const std::size_t begin = at_;
    if (c == '-' || c == '+') ++at_;
    while (at_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.' || text_[at_] == 'e' ||
            text_[at_] == 'E' ||
            ((text_[at_] == '-' || text_[at_] == '+') && (text_[at_ - 1] == 'e' || text_[at_ - 1] == 'E'))))
      ++at_;
    const std::string_view digits = text_.substr(begin, at_ - begin);
    Node n;
    n.kind = Node::Kind::Number;
    const char* first = digits.data() + (digits.starts_with('+') ? 1 : 0);
    const auto [end, ec] = std::from_chars(first, digits.data() + digits.size(), n.number);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(n.number)) {
      at_ = begin;
      fail("expected a column name, a number or '('");
    }
    return make(std::move(n));
  }

  std::string_view text_;
  const std::string& key_;
  std::vector<std::string>& columns_;
  std::size_t at_ = 0;
};

double operand(const Node& n, std::span<const double* const> values, std::size_t row) {
  return n.kind == Node::Kind::Number ? n.number : values[n.column][row];
}

bool evaluate(const Node& n, std::span<const double* const> values, std::size_t row) {
  switch (n.kind) {
    case Node::Kind::Compare: {
      const double a = operand(*n.a, values, row), b = operand(*n.b, values, row);
      switch (n.op) {
        case Node::Op::Ge: return a >= b;
        case Node::Op::Gt: return a > b;
        case Node::Op::Le: return a <= b;
        case Node::Op::Lt: return a < b;
        case Node::Op::Eq: return a == b;
        case Node::Op::Ne: return a != b;
      }
      return false;
    }
    case Node::Kind::Not: return !evaluate(*n.a, values, row);
    case Node::Kind::And: return evaluate(*n.a, values, row) && evaluate(*n.b, values, row);
    case Node::Kind::Or: return evaluate(*n.a, values, row) || evaluate(*n.b, values, row);
    case Node::Kind::Column:
    case Node::Kind::Number: break;  // refused by the parser at the top and under & | ~
  }
  return false;
}

}  // namespace

RowPredicate RowPredicate::parse(std::string_view text, const std::string& key) {
  RowPredicate p;
  p.text_ = std::string(text);
  p.root_ = Parser(p.text_, key, p.columns_).parse();
  return p;
}

bool RowPredicate::operator()(std::span<const double* const> values, std::size_t row) const {
  return evaluate(*root_, values, row);
}

}  // namespace tessera::ragged
