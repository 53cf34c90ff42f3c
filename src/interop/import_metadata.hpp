// Internal to interop: how source attributes, dimension names and 1-D coordinate values become
// footer metadata on convert (spec tet.md §6.6 "Metadata footer"), shared by every input format:
// the preferred-key order, MetadataLimitsV1 (64 attrs, 1..1024-byte strings, ≤ 8 dim names,
// ≤ 64 labels) and the number text (shortest round-trip digits, never an exponent, no `.0`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/dtype.hpp"
#include "tessera/core/number_text.hpp"

namespace tessera::interop::detail {

// Shortest positional text of a number, and of one element (core/number_text.hpp).
using ::tessera::decimal_text;
using ::tessera::element_text;

// A floating-point attribute value as footer text: a double that is exactly an f32 value (the
// usual `scale_factor` 0.009999999776482582 written from float32 data) uses the shorter f32
// digits ("0.01"), which still read back to the same value; other doubles keep all their digits.
std::string attribute_number_text(double v);

// A footer string: 1..1024 bytes of valid UTF-8.
bool valid_footer_string(std::string_view s) noexcept;

// The attrs of one dataset: first the preferred keys (units, long_name, standard_name,
// description, title, scale_factor, add_offset, _FillValue) when present, then the others in
// `names` order until 64, skipping names or values that are not valid footer strings. `read`
// returns an attribute's value text, or nullopt when its type is not imported.
std::map<std::string, std::string> collect_attrs(
    const std::vector<std::string>& names, const std::function<std::optional<std::string>(const std::string&)>& read);

// `names` when it fits the limits (1..8 names, each a valid footer string), else nullopt.
std::optional<std::vector<std::string>> limited_dim_names(std::vector<std::string> names);

// Whether a 1-D array of `n` values may become coordinate labels (1..64).
bool label_count_ok(std::uint64_t n) noexcept;

// Labels for `values` (little-endian elements of `dtype`), or nullopt for an empty list.
std::optional<std::vector<std::string>> labels_of(DType dtype, std::span<const std::byte> values);

}  // namespace tessera::interop::detail
