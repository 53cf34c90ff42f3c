// mortie's packed 64-bit morton words (spec §3.1–§3.6): the word layout, decimal ids, HEALPix
// NESTED ids, coarsening, common ancestors, subtree spans and the rank ↔ (x, y) deinterleave.
//
//   bits 63..60  prefix = base cell + 1 (1..12; 0 is the null word)
//   bits 59..6   27 two-bit tuples, order n at bits (61−2n)..(60−2n)
//   bits 5..0    suffix: 0..27 area order; 28..47 area order 28/29; 48..63 order-29 point
//
// Words are always `uint64_t`. Functions that take a word from a file validate it and throw
// FormatError; functions that parse user text throw UsageError (`Source::User`).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessera::ragged::morton {

inline constexpr int kMaxOrder = 29;
inline constexpr int kBaseCells = 12;

// Where a word or id came from: decides the error type (FormatError for file content,
// UsageError for text a user typed).
enum class Source : std::uint8_t { File, User };

// The decoded fields of a valid word.
struct WordInfo {
  int base_cell = 0;   // 0..11
  int order = 0;       // 0..29
  bool point = false;  // order-29 point word (no area claim)
};

// nullopt when `word` is not a valid word: prefix outside 1..12, nonzero bits below its order,
// or an undecodable suffix. The null word 0 is not valid.
std::optional<WordInfo> inspect(std::uint64_t word) noexcept;
bool is_valid(std::uint64_t word) noexcept;
// inspect() or an error naming `what` (e.g. "6/morton cell 5") and the broken rule.
WordInfo check(std::uint64_t word, std::string_view what, Source source = Source::File);

int order_of(std::uint64_t word);  // word must be valid (FormatError otherwise)
int base_cell_of(std::uint64_t word);
bool is_point(std::uint64_t word);

// The stored tuple (0..3) of order n (1 ≤ n ≤ order) of a valid word.
int tuple_at(std::uint64_t word, int n) noexcept;

// The area word of a cell: base cell and tuples[0..order).  UsageError on out-of-range input.
std::uint64_t pack_area(int base_cell, std::span<const int> tuples);
// The order-29 point word of a base cell and 29 tuples.
std::uint64_t pack_point(int base_cell, std::span<const int> tuples);

// HEALPix NESTED id of a valid word at its own order: base·4^order + Σ t_n·4^(order−n).
std::uint64_t nested(std::uint64_t word);
// The area word of a NESTED id at `order` (UsageError when nested ≥ 12·4^order).
std::uint64_t from_nested(std::uint64_t nested_id, int order);

// The order-29 point word of an order-29 NESTED id (the geocoder's output, spec §6.4 step 4):
// base nested >> 58, tuples 1..27 into the body, t28 and t29 into the suffix 48 + 4·t28 + t29.
// UsageError when the id is outside the sphere.
std::uint64_t point_from_nested29(std::uint64_t nested_id);

// Decimal ids (spec §3.2): ["-"] base-digit *order-digit ["p"].
std::string to_decimal(std::uint64_t word);
std::uint64_t parse_decimal(std::string_view text, Source source = Source::User);
// What `subtree=` and the CLI take: a decimal id, or a packed word written `0x…` (hex) or
// `word:` + decimal/0x-hex. The word must be valid.
std::uint64_t parse_word_or_decimal(std::string_view text, Source source = Source::User);

// Coarsens to order k (spec §3.3); a word already at or above order k is returned unchanged.
std::uint64_t clip(std::uint64_t word, int k);
// The deepest common ancestor of nonzero, valid words sharing a base cell (one word: itself).
// FormatError (naming `what`) for an empty list, invalid words or different base cells.
std::uint64_t common_ancestor(std::span<const std::uint64_t> words, std::string_view what = "words");
// The order-(order(w) + depth) descendant of area word `w` at subtree rank `rank`.
std::uint64_t descendant(std::uint64_t word, int depth, std::uint64_t rank);

// ---- ranks and tensor placement (spec §3.6) ----
struct XY {
  std::uint32_t x = 0;
  std::uint32_t y = 0;
};
// x gathers the even bits of `rank`, y the odd bits. depth ≤ 31.
XY rank_to_xy(std::uint64_t rank) noexcept;
std::uint64_t xy_to_rank(std::uint32_t x, std::uint32_t y) noexcept;
// Tensor placement: row = y, col = x.
struct RowCol {
  std::uint32_t row = 0;
  std::uint32_t col = 0;
};
inline RowCol rank_to_rowcol(std::uint64_t rank) noexcept {
  const XY p = rank_to_xy(rank);
  return {p.y, p.x};
}
inline std::uint64_t rowcol_to_rank(std::uint32_t row, std::uint32_t col) noexcept { return xy_to_rank(col, row); }

// 4^k as uint64 (k ≤ 31).
inline constexpr std::uint64_t pow4(int k) noexcept { return std::uint64_t{1} << (2 * k); }
// log4(n) when n is a power of four, else nullopt.
std::optional<int> log4_exact(std::uint64_t n) noexcept;

}  // namespace tessera::ragged::morton
