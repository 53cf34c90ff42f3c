#include "tessera/core/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace tessera {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto c = static_cast<std::uint8_t>(s[i]);
  std::size_t n;
  std::uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else return 0;
  if (s.size() - i <= n) return 0;  // truncated sequence
  for (std::size_t k = 1; k <= n; ++k) {
    const auto cc = static_cast<std::uint8_t>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return 0;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n + 1;
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable_text(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    const bool control = n == 1 && (c < 0x20 || c == 0x7F) && c != '\n' && c != '\t';
    if (n == 0 || control) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool contains_ascii_ci(std::string_view haystack, std::string_view needle) noexcept {
  auto eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), eq) != haystack.end();
}

std::size_t utf8_width(std::string_view s) noexcept {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string truncate_utf8(const std::string& s, std::size_t max) {
  if (utf8_width(s) <= max) return s;
  std::size_t kept = 0, i = 0;
  while (i < s.size() && kept + 1 < max) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++kept;
  }
  return s.substr(0, i) + "…";
}

std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t n = utf8_width(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t n = utf8_width(s);
  return n >= width ? s : std::string(width - n, ' ') + s;
}

}  // namespace tessera
