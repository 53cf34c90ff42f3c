// Typed JSON value conversions and located member access (see json_fields.hpp).
#include "tessera/codec/json_fields.hpp"

#include "tessera/core/error.hpp"

namespace tessera::codec::json {

Fields::Fields(const Json& object, std::string_view path, std::string_view structure)
    : object_(object), path_(path), structure_(structure) {
  if (!object_.is_object()) fail("", "must be a JSON object");
}

void Fields::fail(std::string_view member_name, std::string_view rule) const {
  std::string where = structure_;
  if (!member_name.empty()) where.append(".").append(member_name);
  fail_at<FormatError>(path_, where, rule);
}

const Json& Fields::get(std::string_view name) const {
  const Json* v = find(name);
  if (!v) fail(name, "missing");
  return *v;
}

std::string Fields::string(std::string_view name) const {
  const std::string* s = as_string(get(name));
  if (!s) fail(name, "must be a string");
  return *s;
}

std::int64_t Fields::integer(std::string_view name) const {
  const auto v = as_int64(get(name));
  if (!v) fail(name, "must be an integer in the int64 range");
  return *v;
}

std::uint64_t Fields::unsigned_integer(std::string_view name) const {
  const auto v = as_uint64(get(name));
  if (!v) fail(name, "must be a non-negative integer");
  return *v;
}

std::int64_t Fields::integer_in(std::string_view name, std::int64_t lo, std::int64_t hi) const {
  const auto v = as_int64(get(name));
  if (!v || *v < lo || *v > hi) fail(name, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return *v;
}

}  // namespace tessera::codec::json
