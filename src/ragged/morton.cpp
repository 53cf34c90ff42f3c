// Packed morton words: layout, validation, decimal ids, NESTED ids, coarsening, common ancestors
// and the rank deinterleave (spec §3.1–§3.6). The one place that knows the bits of a word.
#include "tessera/ragged/morton.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera::ragged::morton {
namespace {

constexpr int kBodyTuples = 27;
constexpr std::uint64_t kSuffixMask = 0x3F;
constexpr std::uint64_t kBodyMask = ((std::uint64_t{1} << 54) - 1) << 6;  // bits 59..6

[[noreturn]] void fail(Source source, const std::string& message) {
  if (source == Source::User) throw UsageError(message);
  throw FormatError(message, {}, "morton word");
}

std::string hex(std::uint64_t w) {
  char buf[19] = "0x";
  auto r = std::to_chars(buf + 2, buf + sizeof buf, w, 16);
  return std::string(buf, r.ptr);
}

// Bits of the body below order `k` (tuples k+1..27), for k ≤ 27.
constexpr std::uint64_t body_below(int k) noexcept {
  return k >= kBodyTuples ? 0 : (kBodyMask & ((std::uint64_t{1} << (60 - 2 * k)) - 1));
}

int body_tuple(std::uint64_t w, int n) noexcept { return static_cast<int>((w >> (60 - 2 * n)) & 3); }

}  // namespace

std::optional<WordInfo> inspect(std::uint64_t w) noexcept {
  const int prefix = static_cast<int>(w >> 60);
  if (prefix < 1 || prefix > kBaseCells) return std::nullopt;
  const int suffix = static_cast<int>(w & kSuffixMask);
  WordInfo info{prefix - 1, 0, false};
  if (suffix <= 27) {
    info.order = suffix;
    if ((w & body_below(suffix)) != 0) return std::nullopt;  // canonical zero fill
  } else if (suffix <= 47) {
    info.order = (suffix - 28) % 5 == 0 ? 28 : 29;
  } else {
    info.order = 29;
    info.point = true;
  }
  return info;
}

bool is_valid(std::uint64_t w) noexcept { return inspect(w).has_value(); }

WordInfo check(std::uint64_t w, std::string_view what, Source source) {
  if (auto info = inspect(w)) return *info;
  std::string rule;
  const int prefix = static_cast<int>(w >> 60);
  if (w == 0) rule = "the null word 0 names no cell";
  else if (prefix < 1 || prefix > kBaseCells)
    rule = "prefix " + std::to_string(prefix) + " is not a base cell + 1 (1..12)";
  else rule = "nonzero body bits below the word's order (not canonically zero-filled)";
  fail(source, std::string(what) + ": invalid morton word " + std::to_string(w) + " (" + hex(w) + "): " + rule);
}

int order_of(std::uint64_t w) { return check(w, "word").order; }
int base_cell_of(std::uint64_t w) { return check(w, "word").base_cell; }
bool is_point(std::uint64_t w) { return check(w, "word").point; }

int tuple_at(std::uint64_t w, int n) noexcept {
  if (n <= kBodyTuples) return body_tuple(w, n);
  const int suffix = static_cast<int>(w & kSuffixMask);
  if (suffix >= 48) return n == 28 ? (suffix - 48) / 4 : (suffix - 48) % 4;
  const int s = suffix - 28;
  return n == 28 ? s / 5 : s % 5 - 1;
}

namespace {

std::uint64_t pack(int base, std::span<const int> tuples, bool point) {
  if (base < 0 || base >= kBaseCells) throw UsageError("morton: base cell " + std::to_string(base) + " outside 0..11");
  const int order = static_cast<int>(tuples.size());
  if (order > kMaxOrder || (point && order != kMaxOrder))
    throw UsageError("morton: order " + std::to_string(order) +
                     (point ? " for a point word (must be 29)" : " above 29"));
  for (const int t : tuples)
    if (t < 0 || t > 3) throw UsageError("morton: tuple value " + std::to_string(t) + " outside 0..3");
  std::uint64_t w = static_cast<std::uint64_t>(base + 1) << 60;
  for (int n = 1; n <= std::min(order, kBodyTuples); ++n)
    w |= static_cast<std::uint64_t>(tuples[n - 1]) << (60 - 2 * n);
  std::uint64_t suffix = static_cast<std::uint64_t>(order);
  if (point) suffix = 48 + 4 * static_cast<std::uint64_t>(tuples[27]) + static_cast<std::uint64_t>(tuples[28]);
  else if (order == 28) suffix = 28 + 5 * static_cast<std::uint64_t>(tuples[27]);
  else if (order == 29)
    suffix = 28 + 5 * static_cast<std::uint64_t>(tuples[27]) + static_cast<std::uint64_t>(tuples[28]) + 1;
  return w | suffix;
}

}  // namespace

std::uint64_t pack_area(int base, std::span<const int> tuples) { return pack(base, tuples, false); }
std::uint64_t pack_point(int base, std::span<const int> tuples) { return pack(base, tuples, true); }

std::uint64_t nested(std::uint64_t w) {
  const WordInfo info = check(w, "nested id");
  std::uint64_t id = static_cast<std::uint64_t>(info.base_cell);
  for (int n = 1; n <= info.order; ++n) id = id * 4 + static_cast<std::uint64_t>(tuple_at(w, n));
  return id;
}

std::uint64_t from_nested(std::uint64_t id, int order) {
  if (order < 0 || order > kMaxOrder) throw UsageError("morton: order " + std::to_string(order) + " outside 0..29");
  if ((id >> (2 * order)) >= static_cast<std::uint64_t>(kBaseCells))
    throw UsageError("morton: NESTED id " + std::to_string(id) + " is outside the sphere at order " +
                     std::to_string(order));
  // Bit arithmetic rather than pack_area: writers call this once per cell of a leaf. Tuple n sits
  // at id bits 2(order − n) and belongs at word bit 60 − 2n, so tuples 1..27 move up by
  // 60 − 2·order bits; orders 28 and 29 keep tuples 28/29 in the suffix instead.
  const std::uint64_t base = id >> (2 * order);
  const std::uint64_t tail = id & (pow4(order) - 1);
  const std::uint64_t prefix = (base + 1) << 60;
  if (order <= kBodyTuples) return prefix | (tail << (60 - 2 * order)) | static_cast<std::uint64_t>(order);
  const int below = order - kBodyTuples;  // 1 or 2 tuples after the body
  const std::uint64_t body = (tail >> (2 * below)) << 6;
  if (order == 28) return prefix | body | (28 + 5 * (tail & 3));
  return prefix | body | (28 + 5 * ((tail >> 2) & 3) + (tail & 3) + 1);
}

std::uint64_t point_from_nested29(std::uint64_t id) {
  if ((id >> 58) >= static_cast<std::uint64_t>(kBaseCells))
    throw UsageError("morton: NESTED id " + std::to_string(id) + " is outside the sphere at order 29");
  // Tuple n of the id sits at bits 2(29 − n)..2(29 − n) + 1; the body wants tuple n at
  // 60 − 2n, so tuples 1..27 move up by two bits once the two low tuples are dropped.
  const std::uint64_t body = ((id & ((std::uint64_t{1} << 58) - 1)) >> 4) << 6;
  const std::uint64_t suffix = 48 + 4 * ((id >> 2) & 3) + (id & 3);
  return (((id >> 58) + 1) << 60) | body | suffix;
}

std::string to_decimal(std::uint64_t w) {
  const WordInfo info = check(w, "decimal id");
  std::string out;
  if (info.base_cell >= 6) out = "-" + std::to_string(info.base_cell - 5);
  else out = std::to_string(info.base_cell + 1);
  for (int n = 1; n <= info.order; ++n) out.push_back(static_cast<char>('1' + tuple_at(w, n)));
  if (info.point) out.push_back('p');
  return out;
}

std::uint64_t parse_decimal(std::string_view text, Source source) {
  const std::string shown(text.substr(0, 64));
  const auto bad = [&](const std::string& rule) -> std::uint64_t {
    fail(source, "invalid decimal morton id '" + shown + "': " + rule);
  };
  std::string_view s = text;
  bool south = false;
  if (!s.empty() && s.front() == '-') south = true, s.remove_prefix(1);
  bool point = false;
  if (!s.empty() && s.back() == 'p') point = true, s.remove_suffix(1);
  if (s.empty()) return bad("no base digit");
  const char b = s.front();
  if (b < '1' || b > '6') return bad("base digit must be 1..6");
  const int base = (b - '1') + (south ? 6 : 0);
  s.remove_prefix(1);
  if (s.size() > static_cast<std::size_t>(kMaxOrder)) return bad("more than 29 order digits");
  int tuples[kMaxOrder];
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] < '1' || s[i] > '4') return bad("order digits must be 1..4");
    tuples[i] = s[i] - '1';
  }
  const std::span<const int> t(tuples, s.size());
  if (point) {
    if (s.size() != static_cast<std::size_t>(kMaxOrder)) return bad("'p' marks only a full order-29 point id");
    return pack_point(base, t);
  }
  return pack_area(base, t);
}

std::uint64_t parse_word_or_decimal(std::string_view text, Source source) {
  std::string_view s = text;
  const bool word = s.substr(0, 5) == "word:";
  if (word) s.remove_prefix(5);
  const bool is_hex = s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X";
  // A bare string is a decimal id; packed words need "word:" or "0x" (a decimal id of 19 or 20
  // digits would otherwise read as a word).
  if (!word && !is_hex) return parse_decimal(text, source);
  if (is_hex) s.remove_prefix(2);
  std::uint64_t w = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), w, is_hex ? 16 : 10);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
    fail(source, "invalid packed morton word '" + std::string(text.substr(0, 64)) + "'");
  check(w, "word '" + std::string(text.substr(0, 64)) + "'", source);
  return w;
}

namespace {

// The area word of the order-k ancestor of a valid word (k ≤ its order): the word itself for an
// area word at order k, the area form of a point at k = 29.
std::uint64_t area_at(std::uint64_t w, int k) noexcept {
  std::uint64_t out = w & ~kSuffixMask;
  if (k == 29)
    return out |
           (28 + 5 * static_cast<std::uint64_t>(tuple_at(w, 28)) + static_cast<std::uint64_t>(tuple_at(w, 29)) + 1);
  if (k == 28) return out | (28 + 5 * static_cast<std::uint64_t>(tuple_at(w, 28)));
  return (out & ~body_below(k)) | static_cast<std::uint64_t>(k);
}

}  // namespace

std::uint64_t clip(std::uint64_t w, int k) {
  const WordInfo info = check(w, "clip");
  if (k < 0) throw UsageError("morton: clip to negative order " + std::to_string(k));
  if (k >= info.order) return w;
  return area_at(w, k);
}

std::uint64_t common_ancestor(std::span<const std::uint64_t> words, std::string_view what) {
  if (words.empty()) throw FormatError(std::string(what) + ": common ancestor of no words", {}, "morton word");
  const WordInfo first = check(words[0], what);
  if (words.size() == 1) return words[0];
  int depth = first.order;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const WordInfo info = check(words[i], what);
    if (info.base_cell != first.base_cell)
      throw FormatError(std::string(what) + ": words " + std::to_string(words[0]) + " and " + std::to_string(words[i]) +
                            " lie in different base cells (no common ancestor)",
                        {}, "morton word");
    depth = std::min(depth, info.order);
    int k = 0;
    while (k < depth && tuple_at(words[i], k + 1) == tuple_at(words[0], k + 1)) ++k;
    depth = k;
  }
  // The area word of that cell, even when every input is the same point.
  return area_at(words[0], depth);
}

std::uint64_t descendant(std::uint64_t w, int depth, std::uint64_t rank) {
  const WordInfo info = check(w, "descendant");
  if (info.point || depth < 0 || info.order + depth > kMaxOrder || (depth < 32 && rank >= pow4(depth)))
    throw UsageError("morton: no descendant at depth " + std::to_string(depth) + " rank " + std::to_string(rank));
  return from_nested((nested(w) << (2 * depth)) | rank, info.order + depth);
}

namespace {

// Gathers the even bits of v into the low 32 bits (the classic bit-compaction ladder).
constexpr std::uint32_t compact_even(std::uint64_t v) noexcept {
  v &= 0x5555555555555555ull;
  v = (v | (v >> 1)) & 0x3333333333333333ull;
  v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull;
  v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
  v = (v | (v >> 16)) & 0x00000000FFFFFFFFull;
  return static_cast<std::uint32_t>(v);
}

// Spreads the bits of x to the even positions.
constexpr std::uint64_t spread_even(std::uint32_t x) noexcept {
  std::uint64_t v = x;
  v = (v | (v << 16)) & 0x0000FFFF0000FFFFull;
  v = (v | (v << 8)) & 0x00FF00FF00FF00FFull;
  v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  v = (v | (v << 1)) & 0x5555555555555555ull;
  return v;
}

}  // namespace

XY rank_to_xy(std::uint64_t r) noexcept { return {compact_even(r), compact_even(r >> 1)}; }

std::uint64_t xy_to_rank(std::uint32_t x, std::uint32_t y) noexcept { return spread_even(x) | (spread_even(y) << 1); }

std::optional<int> log4_exact(std::uint64_t n) noexcept {
  for (int k = 0; k < 32; ++k)
    if (pow4(k) == n) return k;
  return std::nullopt;
}

}  // namespace tessera::ragged::morton
