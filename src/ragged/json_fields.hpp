// Typed access to the members of a JSON object read from a store, with errors that name the
// object key, the structure and the member (private to the ragged module).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"

namespace tessera::ragged {

class JsonFields {
 public:
  JsonFields(const codec::json::Json& object, std::string_view key, std::string_view structure)
      : object_(object), key_(key), structure_(structure) {
    if (!object_.is_object()) fail("", "must be a JSON object");
  }

  [[noreturn]] void fail(std::string_view member, std::string_view rule) const {
    std::string where(structure_);
    if (!member.empty()) where.append(".").append(member);
    throw FormatError(key_ + ": " + where + ": " + std::string(rule), key_, where);
  }

  bool has(std::string_view name) const { return object_.contains(std::string(name)); }

  const codec::json::Json& get(std::string_view name) const {
    const auto it = object_.find(std::string(name));
    if (it == object_.end()) fail(name, "missing");
    return *it;
  }

  std::string string(std::string_view name) const {
    const auto& v = get(name);
    if (!v.is_string()) fail(name, "must be a string");
    return v.get<std::string>();
  }

  std::int64_t integer(std::string_view name) const {
    const auto& v = get(name);
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) fail(name, "integer out of range");
      return static_cast<std::int64_t>(v.get<std::uint64_t>());
    }
    if (!v.is_number_integer()) fail(name, "must be an integer");
    return v.get<std::int64_t>();
  }

  std::uint64_t unsigned_integer(std::string_view name) const {
    const auto& v = get(name);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    fail(name, "must be a non-negative integer");
  }

  // A morton order 0..29.
  int order(std::string_view name) const {
    const std::int64_t v = integer(name);
    if (v < 0 || v > 29) fail(name, "must be an integer in 0..29");
    return static_cast<int>(v);
  }

 private:
  const codec::json::Json& object_;
  std::string key_;
  std::string structure_;
};

}  // namespace tessera::ragged
