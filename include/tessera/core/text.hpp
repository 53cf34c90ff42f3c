// Small text utilities shared by the formats.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

bool is_valid_utf8(std::string_view s) noexcept;

// ASCII case-insensitive substring search (filters of `info --dataset/--grep`).
bool contains_ascii_ci(std::string_view haystack, std::string_view needle) noexcept;

}  // namespace tessera
