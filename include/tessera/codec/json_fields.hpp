// Typed reading of parsed JSON, shared by every format that reads a JSON document (zarr.json,
// .tet footers and query documents, deltacells manifests, zagg-ragged hive files). Two layers:
//  - value conversions that only say whether a value has the asked-for type (std::nullopt or
//    nullptr when not). Each format words its own errors around them, because several of those
//    texts are fixed by a reference implementation (tet's serde messages, deltacells' rule codes);
//  - `Fields`, member access on one object that throws FormatError "path: structure.member: rule"
//    for formats whose wording is tessera's own.
// Integers follow parse_strict: a JSON integer is never a bool and never a float (`1.0` is not 1).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tessera/codec/json.hpp"

namespace tessera::codec::json {

// The conversions take any nlohmann tree (Json, or the sorted nlohmann::json that tet's footer
// reads like the reference does).
template <typename J>
concept JsonTree = nlohmann::detail::is_basic_json<J>::value;

// The member `name` of `object`, or nullptr when it is absent or `object` is not an object.
template <JsonTree J>
const J* member(const J& object, std::string_view name) noexcept {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(std::string(name));
  return it == object.end() ? nullptr : &*it;
}

// An integer representable as int64 (unsigned values above INT64_MAX are not).
template <JsonTree J>
std::optional<std::int64_t> as_int64(const J& v) noexcept {
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.template get<std::int64_t>();
  return std::nullopt;
}

// A non-negative integer (0..2^64-1).
template <JsonTree J>
std::optional<std::uint64_t> as_uint64(const J& v) noexcept {
  if (v.is_number_unsigned()) return v.template get<std::uint64_t>();
  if (v.is_number_integer() && v.template get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v.template get<std::int64_t>());
  return std::nullopt;
}

// The string's bytes, or nullptr for any other type. Valid as long as `v` is.
template <JsonTree J>
const std::string* as_string(const J& v) noexcept {
  return v.is_string() ? &v.template get_ref<const std::string&>() : nullptr;
}

// An array whose every element converts with `convert` (one of the above); std::nullopt when `v`
// is not an array or one element does not convert.
template <JsonTree J, typename Convert>
auto as_list(const J& v, Convert convert) -> std::optional<std::vector<std::remove_cvref_t<decltype(*convert(v))>>> {
  if (!v.is_array()) return std::nullopt;
  std::vector<std::remove_cvref_t<decltype(*convert(v))>> out;
  out.reserve(v.size());
  for (const J& element : v) {
    const auto converted = convert(element);
    if (!converted) return std::nullopt;
    out.push_back(*converted);
  }
  return out;
}

template <JsonTree J>
std::optional<std::vector<std::int64_t>> as_int64_list(const J& v) {
  return as_list(v, [](const J& e) { return as_int64(e); });
}
template <JsonTree J>
std::optional<std::vector<std::uint64_t>> as_uint64_list(const J& v) {
  return as_list(v, [](const J& e) { return as_uint64(e); });
}
template <JsonTree J>
std::optional<std::vector<std::string>> as_string_list(const J& v) {
  return as_list(v, [](const J& e) { return as_string(e); });
}

// Member access on one JSON object read from `path` (a file name or object key). Every failure
// throws FormatError with what() = "path: structure.member: rule" (core's located_text) and
// path()/structure() set. Holds a reference to `object`: it must outlive the Fields. Thread-safety:
// const, so any number of threads.
class Fields {
 public:
  // Throws when `object` is not a JSON object.
  Fields(const Json& object, std::string_view path, std::string_view structure);

  [[noreturn]] void fail(std::string_view member_name, std::string_view rule) const;

  [[nodiscard]] bool has(std::string_view name) const noexcept { return member(object_, name) != nullptr; }
  // nullptr when absent.
  [[nodiscard]] const Json* find(std::string_view name) const noexcept { return member(object_, name); }
  // Throws "missing" when absent.
  [[nodiscard]] const Json& get(std::string_view name) const;

  [[nodiscard]] std::string string(std::string_view name) const;
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] std::uint64_t unsigned_integer(std::string_view name) const;
  // An integer in [lo, hi].
  [[nodiscard]] std::int64_t integer_in(std::string_view name, std::int64_t lo, std::int64_t hi) const;

 private:
  const Json& object_;
  std::string path_;
  std::string structure_;
};

}  // namespace tessera::codec::json
