// Small text utilities shared by the formats.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

bool is_valid_utf8(std::string_view s) noexcept;

// `s` made safe to print and to hand to Python as str: valid UTF-8 is kept as it is, and each
// byte that is not part of a valid sequence, and each control character but newline and tab,
// becomes `\xNN` (lower-case hex). Every tessera::Error message goes through this.
std::string printable_text(std::string_view s);

// ASCII case-insensitive substring search (filters of `info --dataset/--grep`).
bool contains_ascii_ci(std::string_view haystack, std::string_view needle) noexcept;

// Text-table helpers that count UTF-8 code points (one column each), not bytes.
std::size_t utf8_width(std::string_view s) noexcept;
// At most `max` (≥ 1) code points: longer text keeps max − 1 and gains `…`.
std::string truncate_utf8(const std::string& s, std::size_t max);
// Padded with spaces to `width` code points, on the right (pad_right) or the left (pad_left).
std::string pad_right(const std::string& s, std::size_t width);
std::string pad_left(const std::string& s, std::size_t width);

}  // namespace tessera
